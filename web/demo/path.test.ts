import { describe, expect, it } from 'vitest';
import { PathFollower, findPath, type Grid, type Point } from './path.js';

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

/** Walks the path as the server would: sim.Move's axis-separated steps, one direction per tick. */
function walk(g: Grid, from: Point, path: Point[], step: number, maxTicks = 1000): Point {
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
