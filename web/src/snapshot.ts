// JSON snapshots and the history of applied snapshots that deltas (JSON or
// binary) are built against: docs/protocol.md, "Snapshots".

import { DoorState, type Entity, type SnapshotMessage } from './protocol.js';

/**
 * The entities after a JSON snapshot: the snapshot's own for a full one,
 * base with the snapshot's changes for a delta. Sorted by id; base is not
 * modified.
 */
export function applyJSONSnapshot(base: readonly Entity[] | null, snap: SnapshotMessage): Entity[] {
  const byId = new Map<number, Entity>();
  if (snap.mode === 'delta') {
    for (const e of base ?? []) byId.set(e.id, { ...e });
  }
  for (const id of snap.presence?.remove ?? []) byId.delete(id);
  for (const a of snap.presence?.add ?? []) byId.set(a.id, { id: a.id, kind: a.kind, x: 0, y: 0, hp: 0, state: 0, target: 0 });
  for (const p of snap.movement ?? []) {
    const e = entry(byId, p.id);
    e.x = p.x;
    e.y = p.y;
  }
  // A combat entry carries all three (state and target left out when 0).
  for (const h of snap.combat ?? []) {
    const e = entry(byId, h.id);
    e.hp = h.hp;
    e.state = h.state ?? 0;
    e.target = h.target ?? 0;
  }
  // A door's state as the binary codec carries it: bits open and locked.
  for (const d of snap.doors ?? []) {
    entry(byId, d.id).state = (d.open ? DoorState.Open : 0) | (d.locked ? DoorState.Locked : 0);
  }
  return [...byId.values()].sort((a, b) => a.id - b.id);
}

/** The entity with id, created if a channel names one presence did not add. */
function entry(byId: Map<number, Entity>, id: number): Entity {
  let e = byId.get(id);
  if (e === undefined) {
    e = { id, kind: 0, x: 0, y: 0, hp: 0, state: 0, target: 0 };
    byId.set(id, e);
  }
  return e;
}

/**
 * The recent snapshots by tick, as bases for deltas. The server builds a
 * delta only against a tick the client acknowledged among its last 32
 * snapshots, so a ring of 64 always holds the base it names.
 */
export class SnapshotHistory {
  private readonly ticks: number[];
  private readonly entries: (Entity[] | undefined)[];

  constructor(readonly size = 64) {
    if (!Number.isInteger(size) || size < 1) throw new RangeError(`history size ${size}`);
    this.ticks = new Array<number>(size).fill(-1);
    this.entries = new Array<Entity[] | undefined>(size);
  }

  /** Keeps entities as the snapshot at tick, replacing the one size ticks older. */
  put(tick: number, entities: Entity[]): void {
    const i = tick % this.size;
    this.ticks[i] = tick;
    this.entries[i] = entities;
  }

  /** The snapshot at tick, if still kept. */
  get(tick: number): Entity[] | undefined {
    const i = tick % this.size;
    return this.ticks[i] === tick ? this.entries[i] : undefined;
  }

  /** Forgets every snapshot (a new map counts its ticks afresh). */
  clear(): void {
    this.ticks.fill(-1);
    this.entries.fill(undefined);
  }
}
