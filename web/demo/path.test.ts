import { beforeAll, describe, expect, it } from 'vitest';
import { DoorState, type StaticWorld } from '../src/index.js';
import { crossing, doorEntity, inDoor } from '../test/helpers/doors.js';
import { testMapgen } from '../test/helpers/mapgen.js';
import { moveVectors } from '../test/helpers/vectors.js';
import { PathFollower, findPath, gridWithDoors, type Grid, type Point } from './path.js';

/** A grid from rows of text: '#' blocked, '.' free; 8-unit cells like mapgen's. */
function grid(rows: string[]): Grid {
  const cellSize = 8, cols = rows[0]!.length;
  return {
    cellSize, cols, rows: rows.length, width: cols * cellSize, height: rows.length * cellSize,
    blocked: (x, y) => {
      if (!(x >= 0 && y >= 0 && x < cols * cellSize && y < rows.length * cellSize)) return true;
      return rows[Math.floor(y / cellSize)]![Math.floor(x / cellSize)] === '#';
    },
  };
}

/** Walks the path as the server would: sim.Move's axis-separated steps, one direction per tick; each position on the way goes to seen. */
function walk(g: Grid, from: Point, path: Point[], step: number, maxTicks = 1000, seen: Point[] = []): Point {
  const f = new PathFollower();
  f.follow(path);
  let p = { ...from };
  for (let t = 0; t < maxTicks; t++) {
    const d = f.next(p, step);
    if (!d) break;
    expect(Math.hypot(d.x, d.y)).toBeLessThanOrEqual(1 + 1e-9);
    const nx = p.x + d.x * step;
    if (!g.blocked(nx, p.y)) p = { x: nx, y: p.y };
    const ny = p.y + d.y * step;
    if (!g.blocked(p.x, ny)) p = { x: p.x, y: ny };
    seen.push(p);
  }
  return p;
}

describe('findPath', () => {
  const maze = grid([
    '..........',
    '.########.',
    '.#......#.',
    '.#.####.#.',
    '.#.#..#.#.',
    '...#..#...',
    '####..####',
  ]);

  it('walks around walls to the exact target', () => {
    const from = { x: 36, y: 36 }, to = { x: 36, y: 52 }; // inside the box, to below its bottom wall
    const path = findPath(maze, from, to);
    expect(path).not.toBeNull();
    const end = walk(maze, from, path!, 1.6);
    expect(Math.hypot(end.x - to.x, end.y - to.y)).toBeLessThan(0.3);
  });

  it('never plans a diagonal between two blocked corners', () => {
    const g = grid(['.#', '#.']);
    expect(findPath(g, { x: 4, y: 4 }, { x: 12, y: 12 })).toBeNull();
  });

  it('aims for the nearest free cell when the target is blocked', () => {
    const path = findPath(maze, { x: 4, y: 4 }, { x: 20, y: 12 }); // a wall cell
    expect(path).not.toBeNull();
    const end = path!.at(-1)!;
    expect(maze.blocked(end.x, end.y)).toBe(false);
  });

  it('keeps only the turns of a straight run', () => {
    const open = grid(['..........']);
    expect(findPath(open, { x: 4, y: 4 }, { x: 76, y: 4 })).toEqual([{ x: 76, y: 4 }]);
  });
});

describe('PathFollower', () => {
  it('gives up when the player stops moving', () => {
    const f = new PathFollower();
    f.follow([{ x: 100, y: 0 }]);
    let steps = 0;
    while (f.next({ x: 0, y: 0 }, 1.6) && steps < 100) steps++;
    expect(f.active).toBe(false);
    expect(steps).toBeLessThan(30);
  });
});

describe('gridWithDoors', () => {
  let world: StaticWorld;
  beforeAll(async () => {
    world = (await testMapgen()).build(moveVectors().maps[1]!.config); // a dungeon
  });

  it('is the world itself without a closed door', () => {
    const { door } = crossing(world);
    expect(gridWithDoors(world, [])).toBe(world);
    expect(gridWithDoors(world, [doorEntity(door, DoorState.Open)])).toBe(world);
  });

  it('plans through an open door and never through a closed one', () => {
    const { door, from, to } = crossing(world);
    const open = findPath(gridWithDoors(world, [doorEntity(door, DoorState.Open)]), from, to);
    expect(open).not.toBeNull();
    const through: Point[] = [];
    const end = walk(world, from, open!, 1.6, 1000, through);
    expect(Math.hypot(end.x - to.x, end.y - to.y)).toBeLessThan(0.3);
    expect(through.some((p) => inDoor(door, p))).toBe(true);

    const grid = gridWithDoors(world, [doorEntity(door, 0)]);
    const around = findPath(grid, from, to); // another way round, or none
    const seen: Point[] = [];
    if (around) walk(world, from, around, 1.6, 5000, seen); // on the static map: the plan alone keeps out of the door
    expect(around === null || seen.length > 0).toBe(true);
    expect(seen.some((p) => inDoor(door, p))).toBe(false);
  });
});
