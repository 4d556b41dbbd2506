// The movement rule of internal/sim (Move), in float32 like the server, so
// a client replaying its inputs lands on the server's exact positions.

import type { StaticWorld } from './world.js';

const f32 = Math.fround;

/** What movement needs of a world: its walkability. */
export type Walkable = Pick<StaticWorld, 'blocked'>;

/**
 * The distance one movement input covers: playerSpeed / tickRate, computed
 * as the server does, float32(speed) * float32(1 / float32(tickRate)).
 */
export function stepDistance(playerSpeed: number, tickRate: number): number {
  return f32(f32(playerSpeed) * f32(1 / f32(tickRate)));
}

/**
 * From (x, y) go dist along (dx, dy), axis by axis, so an entity slides
 * along a collider instead of sticking to it: sim.Move in float32, each
 * product and sum rounded as Go rounds it (no fused multiply-add).
 */
export function move(world: Walkable, x: number, y: number, dx: number, dy: number, dist: number): { x: number; y: number } {
  x = f32(x);
  y = f32(y);
  const d = f32(dist);
  const nx = f32(x + f32(f32(dx) * d));
  if (!world.blocked(nx, y)) x = nx;
  const ny = f32(y + f32(f32(dy) * d));
  if (!world.blocked(x, ny)) y = ny;
  return { x, y };
}
