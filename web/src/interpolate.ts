// Entity interpolation: other entities are drawn delayMs in the past,
// linearly between the two snapshots around that moment, so they glide at
// any frame rate although snapshots come only snapshotRate times a second.

import type { Entity } from './protocol.js';

interface Frame {
  time: number;
  entities: Map<number, Entity>;
}

/** Frames older than the newest minus delay minus this are never sampled again. */
const KEEP_MS = 1000;
/** A bound on kept frames, whatever the timestamps. */
const MAX_FRAMES = 64;

export class Interpolator {
  private frames: Frame[] = [];

  constructor(readonly delayMs = 100) {}

  /** Adds the entities of a snapshot received at timeMs (non-decreasing). */
  push(timeMs: number, entities: readonly Entity[]): void {
    this.frames.push({ time: timeMs, entities: new Map(entities.map((e) => [e.id, e])) });
    const oldest = timeMs - this.delayMs - KEEP_MS;
    // Keep one frame at or before the oldest moment still sampled.
    while (this.frames.length > MAX_FRAMES || (this.frames[1]?.time ?? Infinity) <= oldest) {
      this.frames.shift();
    }
  }

  /** Forgets every frame (another map: nothing glides across a transfer). */
  clear(): void {
    this.frames = [];
  }

  /**
   * The entities as of nowMs - delayMs, sorted by id. The world shown is
   * that of the newest frame at or before that moment: an entity also in the
   * next frame is placed between the two, one that is gone from the next
   * frame stays put until the moment reaches that frame and then vanishes,
   * and a new entity appears at its first position when the moment reaches
   * the frame that brought it. Before the first frame and after the last,
   * that frame is shown as it is (no extrapolation).
   */
  sample(nowMs: number): Entity[] {
    const t = nowMs - this.delayMs;
    const next = this.frames.findIndex((f) => f.time > t);
    const from = next === -1 ? this.frames.at(-1) : this.frames[Math.max(0, next - 1)];
    const to = next > 0 ? this.frames[next] : undefined;
    if (from === undefined) return [];
    if (to === undefined) return list(from.entities.values());
    const alpha = (t - from.time) / (to.time - from.time);
    return list(
      [...from.entities.values()].map((a) => {
        const b = to.entities.get(a.id);
        return b === undefined ? a : { ...a, x: a.x + (b.x - a.x) * alpha, y: a.y + (b.y - a.y) * alpha };
      }),
    );
  }
}

function list(entities: Iterable<Entity>): Entity[] {
  return [...entities].map((e) => ({ ...e })).sort((a, b) => a.id - b.id);
}
