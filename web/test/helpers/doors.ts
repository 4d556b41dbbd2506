// Doors of a real dungeon (the crypt of the move vectors, built by
// mapgen.wasm) for the prediction tests.

import { doorCentre, type Door, type Entity, type Point, type StaticWorld, type Walkable } from '../../src/index.js';

/** A door entity (kind 4) standing where the server puts door d's, with state (DoorState bits). */
export function doorEntity(d: Door, state: number, id = 900): Entity {
  return { id, kind: 4, ...doorCentre(d), hp: 0, state, target: 0 };
}

/**
 * The server's rule written out on its own (internal/sim/doors.go): a
 * closed door blocks the cells it covers. mapgen's doors cover whole cells,
 * so that is its rectangle.
 */
export function serverBlocker(world: StaticWorld, closed: readonly Door[]): Walkable {
  return {
    blocked: (x, y) => world.blocked(x, y) || closed.some((d) => x >= d.x && y >= d.y && x < d.x + d.w && y < d.y + d.h),
  };
}

/**
 * A walk straight through a door: from a point 1.5 cells before its centre
 * to 1.5 cells past it, along (dx, dy), on free cells of the static map
 * all the way (the door's own cells are walkable there).
 */
export function crossing(world: StaticWorld): { door: Door; from: Point; to: Point; dir: Point } {
  const reach = world.cellSize * 1.5;
  for (const door of world.doors) {
    const c = doorCentre(door);
    for (const dir of [{ x: 0, y: 1 }, { x: 0, y: -1 }, { x: 1, y: 0 }, { x: -1, y: 0 }]) {
      const from = { x: c.x - dir.x * reach, y: c.y - dir.y * reach };
      const to = { x: c.x + dir.x * reach, y: c.y + dir.y * reach };
      let free = true;
      for (let t = 0; t <= 2 * reach && free; t += 0.5) free = !world.blocked(from.x + dir.x * t, from.y + dir.y * t);
      if (free) return { door, from, to, dir };
    }
  }
  throw new Error('the dungeon has no door to walk through');
}

/** Whether p stands in door d's cells. */
export function inDoor(d: Door, p: Point): boolean {
  return p.x >= d.x && p.y >= d.y && p.x < d.x + d.w && p.y < d.y + d.h;
}
