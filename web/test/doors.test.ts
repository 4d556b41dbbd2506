import { beforeAll, describe, expect, it } from 'vitest';
import {
  DOOR_REACH,
  DoorState,
  Predictor,
  doorCentre,
  doorDistance,
  doorOf,
  isDoorLocked,
  isDoorOpen,
  move,
  stepDistance,
  withClosedDoors,
  type Entity,
  type Input,
  type Point,
  type StaticWorld,
  type Walkable,
} from '../src/index.js';
import { crossing, doorEntity, inDoor, serverBlocker } from './helpers/doors.js';
import { testMapgen } from './helpers/mapgen.js';
import { moveVectors } from './helpers/vectors.js';

const town = moveVectors().maps[0]!;
const crypt = moveVectors().maps[1]!;
const dist = stepDistance(crypt.playerSpeed, crypt.tickRate);

let world: StaticWorld;
let meadow: StaticWorld;

beforeAll(async () => {
  const mapgen = await testMapgen();
  world = mapgen.build(crypt.config);
  meadow = mapgen.build(town.config);
});

/** Where n inputs along dir take a walker from `from` on w, step by step. */
function walk(w: Walkable, from: Point, dir: Point, n: number): Point[] {
  const path: Point[] = [];
  let p = from;
  for (let i = 0; i < n; i++) {
    p = move(w, p.x, p.y, dir.x, dir.y, dist);
    path.push(p);
  }
  return path;
}

describe('the static world of a dungeon', () => {
  it('lists its rooms and their doors, with the boss room\'s locked', () => {
    expect(world.biome).toBe('dungeon');
    expect(world.rooms.length).toBeGreaterThan(1);
    expect(world.rooms.map((r) => r.role)).toEqual(expect.arrayContaining(['boss', 'key']));
    expect(world.doors.length).toBeGreaterThan(0);
    for (const d of world.doors) {
      const room = world.rooms[d.room];
      expect(room, `door ${d.id}`).toBeDefined();
      expect(d.locked).toBe(room!.role === 'boss');
      expect(Math.min(d.w, d.h)).toBe(world.cellSize); // one cell thick
      const c = doorCentre(d);
      expect(world.blocked(c.x, c.y)).toBe(false); // a door is no wall of the static map
      expect(doorOf(world, c)).toBe(d);
    }
    expect(new Set(world.rooms.map((r) => r.id)).size).toBe(world.rooms.length);
  });

  it('has no rooms or doors on other biomes', () => {
    expect(meadow.rooms).toStrictEqual([]);
    expect(meadow.doors).toStrictEqual([]);
  });
});

describe('doors', () => {
  it('stand in the middle of their cells, in whole units (mapgen.Rect.Centre)', () => {
    expect(doorCentre({ id: 1, room: 0, x: 184, y: 96, w: 16, h: 8, locked: false })).toStrictEqual({ x: 192, y: 100 });
    expect(doorCentre({ id: 1, room: 0, x: 152, y: 136, w: 8, h: 15, locked: false })).toStrictEqual({ x: 156, y: 143 });
  });

  it('are found by the position of their entity only', () => {
    const d = world.doors[0]!;
    const c = doorCentre(d);
    expect(doorOf(world, { x: c.x + 0.0625, y: c.y })).toBeUndefined();
    expect(doorOf(world, { x: c.x + 1, y: c.y })).toBeUndefined();
    expect(doorOf(meadow, c)).toBeUndefined();
  });

  it('read their state bits', () => {
    const d = world.doors[0]!;
    expect([0, 1, 2, 3].map((s) => [isDoorOpen(doorEntity(d, s)), isDoorLocked(doorEntity(d, s))])).toStrictEqual([
      [false, false], [true, false], [false, true], [true, true],
    ]);
    expect(DoorState).toStrictEqual({ Open: 1, Locked: 2 });
  });

  it('are within reach as the server measures it, to the nearest edge', () => {
    const d = { id: 1, room: 0, x: 184, y: 96, w: 16, h: 8, locked: false };
    expect(doorDistance(d, { x: 190, y: 100 })).toBe(0);
    expect(doorDistance(d, { x: 190, y: 104 + DOOR_REACH })).toBe(DOOR_REACH);
    expect(doorDistance(d, { x: 200 + 3, y: 96 - 4 })).toBe(5);
  });
});

describe('withClosedDoors', () => {
  it('is the static world itself without a closed door in view', () => {
    const d = world.doors[0]!;
    expect(withClosedDoors(world, [])).toBe(world);
    expect(withClosedDoors(world, [doorEntity(d, DoorState.Open)])).toBe(world);
    // Not a door: a player standing in the doorway, a door entity where no door is.
    const player: Entity = { ...doorEntity(d, 0), kind: 1 };
    expect(withClosedDoors(world, [player, { ...doorEntity(d, 0), x: 1, y: 1 }])).toBe(world);
  });

  it('blocks the cells of a closed door, locked or not, and nothing else', () => {
    for (const state of [0, DoorState.Locked]) {
      const d = world.doors[0]!;
      const w = withClosedDoors(world, [doorEntity(d, state)]);
      const server = serverBlocker(world, [d]);
      for (let y = d.y - 16; y < d.y + d.h + 16; y += 0.5) {
        for (let x = d.x - 16; x < d.x + d.w + 16; x += 0.5) {
          expect(w.blocked(x, y), `(${x}, ${y})`).toBe(server.blocked(x, y));
        }
      }
      expect(w.blocked(d.x, d.y)).toBe(true);
      expect(w.blocked(d.x + d.w - 0.001, d.y + d.h - 0.001)).toBe(true);
      expect(w.blocked(-1, 0)).toBe(true);
    }
  });

  it('stops a walk at a closed door as the server does, and lets it through an open one', () => {
    const { door, from, dir } = crossing(world);
    const n = 20;
    const closed = walk(withClosedDoors(world, [doorEntity(door, 0)]), from, dir, n);
    expect(closed).toStrictEqual(walk(serverBlocker(world, [door]), from, dir, n));
    expect(closed.some((p) => inDoor(door, p))).toBe(false);
    expect(closed.at(-1)).toStrictEqual(closed.at(-2)); // it came to a stop in front of the door

    const open = walk(withClosedDoors(world, [doorEntity(door, DoorState.Open)]), from, dir, n);
    expect(open).toStrictEqual(walk(world, from, dir, n));
    expect(open.some((p) => inDoor(door, p))).toBe(true);
  });
});

describe('Predictor with doors', () => {
  it('predicts a closed door in the way as a wall, and replays through it once it opened', () => {
    const { door, from, dir } = crossing(world);
    const inputs: Input[] = Array.from({ length: 20 }, (_, i) => ({ seq: i + 1, x: dir.x, y: dir.y }));
    const p = new Predictor(world, dist);
    p.useDoors([doorEntity(door, 0)]);
    p.reconcile(from.x, from.y, 0);
    for (const i of inputs) p.record(i);
    const blocked = walk(serverBlocker(world, [door]), from, dir, inputs.length).at(-1)!;
    expect({ x: p.x, y: p.y }).toStrictEqual(blocked);
    expect(inDoor(door, p)).toBe(false);

    // The next snapshot: nothing applied yet, but the door is open (someone opened it).
    p.useDoors([doorEntity(door, DoorState.Open)]);
    const through = p.reconcile(from.x, from.y, 0);
    expect(through).toStrictEqual(walk(world, from, dir, inputs.length).at(-1));
    expect(through).not.toStrictEqual(blocked);

    // And closed again after the server applied the first 10 inputs (the walker got through).
    const at = walk(world, from, dir, 10).at(-1)!;
    p.useDoors([doorEntity(door, 0)]);
    expect(p.reconcile(at.x, at.y, 10)).toStrictEqual(walk(serverBlocker(world, [door]), at, dir, 10).at(-1));
  });

  it('has no doors to block without a world', () => {
    const p = new Predictor(undefined, 10, { width: 100, height: 100 });
    p.useDoors([{ id: 1, kind: 4, x: 54, y: 50, hp: 0, state: 0, target: 0 }]);
    p.reconcile(40, 50, 0);
    p.record({ seq: 1, x: 1, y: 0 });
    p.record({ seq: 2, x: 1, y: 0 });
    expect(p.x).toBe(60);
  });
});
