// Doors of dungeon maps (docs/protocol.md, "Dungeons: rooms, doors and the
// boss"): the static world lists where they are (StaticWorld.doors), a door
// entity (kind 4) in the snapshots says whether one is open. A closed door
// blocks movement like a wall, on its cells, as the server's simulation
// blocks it (internal/sim/doors.go); prediction has to agree.

import type { Walkable } from './move.js';
import { DoorState, EntityKind, type Entity } from './protocol.js';
import type { Door, Point, StaticWorld } from './world.js';

/** How near a door (its nearest point) a player must stand to open or close it, in world units. */
export const DOOR_REACH = 24;

/** Whether a door entity is open (its state's open bit). */
export function isDoorOpen(door: Pick<Entity, 'state'>): boolean {
  return (door.state & DoorState.Open) !== 0;
}

/** Whether a door entity is locked: it opens only for a player carrying the key. */
export function isDoorLocked(door: Pick<Entity, 'state'>): boolean {
  return (door.state & DoorState.Locked) !== 0;
}

/**
 * Where a door's entity stands: the middle of its cells in whole units, as
 * mapgen.Rect.Centre computes it (X + W/2, Y + H/2, integer division).
 */
export function doorCentre(door: Door): Point {
  return { x: door.x + Math.trunc(door.w / 2), y: door.y + Math.trunc(door.h / 2) };
}

/** The distance from p to a door's nearest point, as the server measures reach (0 inside it). */
export function doorDistance(door: Door, p: Point): number {
  const dx = Math.max(door.x - p.x, 0, p.x - (door.x + door.w));
  const dy = Math.max(door.y - p.y, 0, p.y - (door.y + door.h));
  return Math.hypot(dx, dy);
}

// Door centres are whole units below 4096: one number keys both.
const centreKey = (x: number, y: number): number => y * 65536 + x;

/** Each world's doors by their centre, built once per world. */
const byCentre = new WeakMap<StaticWorld, Map<number, Door>>();

/**
 * The static world's door that a door entity stands in the middle of, or
 * undefined when none does (not a door, another map's world).
 */
export function doorOf(world: StaticWorld, entity: Point): Door | undefined {
  if (!Number.isInteger(entity.x) || !Number.isInteger(entity.y)) return undefined;
  let doors = byCentre.get(world);
  if (doors === undefined) {
    doors = new Map();
    for (const d of world.doors) {
      const c = doorCentre(d);
      doors.set(centreKey(c.x, c.y), d);
    }
    byCentre.set(world, doors);
  }
  return doors.get(centreKey(entity.x, entity.y));
}

/**
 * What blocks movement among entities: the static world, and the cells of
 * every door entity among them that is closed (its open bit unset), as the
 * server blocks them. Doors that are not among the entities (out of view)
 * do not block. Without a closed door this is world itself.
 */
export function withClosedDoors(world: StaticWorld, entities: Iterable<Entity>): Walkable {
  // The closed doors' cell spans, inclusive: x0, y0, x1, y1 each.
  const spans: number[] = [];
  const cs = world.cellSize;
  for (const e of entities) {
    if (e.kind !== EntityKind.Door || isDoorOpen(e)) continue;
    const d = doorOf(world, e);
    if (d === undefined) continue;
    spans.push(
      Math.floor(d.x / cs), Math.floor(d.y / cs),
      Math.floor((d.x + d.w - 1) / cs), Math.floor((d.y + d.h - 1) / cs),
    );
  }
  if (spans.length === 0) return world;
  return {
    blocked: (x, y) => {
      // Outside the map (and NaN) the static world blocks, so the cell is a real one below.
      if (world.blocked(x, y)) return true;
      const cx = Math.floor(x / cs), cy = Math.floor(y / cs);
      for (let i = 0; i < spans.length; i += 4) {
        if (cx >= spans[i]! && cy >= spans[i + 1]! && cx <= spans[i + 2]! && cy <= spans[i + 3]!) return true;
      }
      return false;
    },
  };
}
