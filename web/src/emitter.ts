// A small typed event emitter. A listener that throws does not stop the
// others nor the client's message handling: its error is rethrown on its
// own task, where the page (or the test runner) reports it.

export class Emitter<Events> {
  private readonly listeners = new Map<keyof Events, Set<(e: never) => void>>();

  /** Calls fn for every event of type until the returned function is called. */
  on<K extends keyof Events>(type: K, fn: (e: Events[K]) => void): () => void {
    let set = this.listeners.get(type);
    if (set === undefined) {
      set = new Set();
      this.listeners.set(type, set);
    }
    set.add(fn);
    return () => {
      set.delete(fn);
    };
  }

  emit<K extends keyof Events>(type: K, e: Events[K]): void {
    for (const fn of [...(this.listeners.get(type) ?? [])]) {
      try {
        (fn as (e: Events[K]) => void)(e);
      } catch (err) {
        queueMicrotask(() => {
          throw err;
        });
      }
    }
  }
}
