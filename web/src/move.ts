// The movement rule of internal/sim (Move), in float32 like the server, so
// a client replaying its inputs lands on the server's exact positions.

import type { Bag } from './protocol.js';
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

/** What the encumbrance rule needs of welcome.bag. */
export type Encumbrance = Pick<Bag, 'encumberedAt' | 'encumberedSpeed'>;

/**
 * The fraction of full speed a player carrying weight walks at, as the
 * server computes it (content.Bag.SpeedFactor, in float32): bag.encumberedSpeed
 * when weight is above bag.encumberedAt and encumberedSpeed is above 0,
 * else 1.
 */
export function speedFactor(bag: Encumbrance, weight: number): number {
  const slow = f32(bag.encumberedSpeed);
  return slow > 0 && f32(weight) > f32(bag.encumberedAt) ? slow : 1;
}

/**
 * The distance one movement input covers for a player carrying weight:
 * the server's speed, float32(playerSpeed) * speedFactor in float32, over
 * tickRate as stepDistance computes it.
 */
export function encumberedStepDistance(playerSpeed: number, tickRate: number, bag: Encumbrance, weight: number): number {
  return stepDistance(f32(f32(playerSpeed) * speedFactor(bag, weight)), tickRate);
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
