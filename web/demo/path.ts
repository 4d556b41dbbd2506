// Click-to-move: an A* path over the world's walkability cells, and a
// follower that turns it into one movement direction per server tick.
//
// The server moves a player as a point, one axis after the other
// (sim.Move), and a cell is either wholly blocked or wholly free
// (mapgen.CellSize). So a path through free cells, never cutting a corner
// diagonally, walks exactly as planned.

import { withClosedDoors, type Entity, type StaticWorld } from '../src/index.js';

export interface Point { x: number; y: number }

/** The parts of the SDK's StaticWorld a path needs. */
export interface Grid {
  width: number; height: number; cellSize: number; cols: number; rows: number;
  blocked(x: number, y: number): boolean;
}

/**
 * The world's grid with the closed doors among entities blocked, as the
 * server blocks them: paths go around them (or nowhere). The world itself
 * when none is closed, so its cached cells serve.
 */
export function gridWithDoors(world: StaticWorld, entities: Iterable<Entity>): Grid {
  const w = withClosedDoors(world, entities);
  if (w === world) return world;
  const { width, height, cellSize, cols, rows } = world;
  return { width, height, cellSize, cols, rows, blocked: w.blocked };
}

const SQRT2 = Math.SQRT2;

// The eight neighbours; the diagonal ones come last so that corner cutting
// can be checked against the two orthogonal ones.
const STEPS: readonly (readonly [number, number, number])[] = [
  [1, 0, 1], [-1, 0, 1], [0, 1, 1], [0, -1, 1],
  [1, 1, SQRT2], [1, -1, SQRT2], [-1, 1, SQRT2], [-1, -1, SQRT2],
];

/** Walkability of every cell, read once from world.blocked. */
function freeCells(g: Grid): Uint8Array {
  const free = new Uint8Array(g.cols * g.rows);
  for (let cy = 0; cy < g.rows; cy++) {
    for (let cx = 0; cx < g.cols; cx++) {
      free[cy * g.cols + cx] = g.blocked(cx * g.cellSize, cy * g.cellSize) ? 0 : 1;
    }
  }
  return free;
}

// Grids are read once per world: findPath runs on every click.
const cache = new WeakMap<Grid, Uint8Array>();

function cellsOf(g: Grid): Uint8Array {
  let free = cache.get(g);
  if (!free) {
    free = freeCells(g);
    cache.set(g, free);
  }
  return free;
}

/** The middle of cell (cx, cy); the last column and row may be cut short by the map edge. */
export function cellCentre(g: Grid, cx: number, cy: number): Point {
  const x0 = cx * g.cellSize, y0 = cy * g.cellSize;
  return { x: (x0 + Math.min(x0 + g.cellSize, g.width)) / 2, y: (y0 + Math.min(y0 + g.cellSize, g.height)) / 2 };
}

function cellOf(g: Grid, p: Point): [number, number] {
  const cx = Math.min(Math.max(Math.floor(p.x / g.cellSize), 0), g.cols - 1);
  const cy = Math.min(Math.max(Math.floor(p.y / g.cellSize), 0), g.rows - 1);
  return [cx, cy];
}

/** The free cell nearest to (cx, cy), searching outwards ring by ring; -1 when none is within reach. */
function nearestFree(g: Grid, free: Uint8Array, cx: number, cy: number, reach = 16): number {
  for (let r = 0; r <= reach; r++) {
    let best = -1, bestD = Infinity;
    for (let y = cy - r; y <= cy + r; y++) {
      for (let x = cx - r; x <= cx + r; x++) {
        if (Math.max(Math.abs(x - cx), Math.abs(y - cy)) !== r) continue; // the ring only
        if (x < 0 || y < 0 || x >= g.cols || y >= g.rows || !free[y * g.cols + x]) continue;
        const d = (x - cx) ** 2 + (y - cy) ** 2;
        if (d < bestD) { bestD = d; best = y * g.cols + x; }
      }
    }
    if (best >= 0) return best;
  }
  return -1;
}

/** A binary min-heap of cell indexes keyed by f. */
class Heap {
  private items: number[] = [];
  constructor(private readonly f: Float64Array) {}
  get size(): number { return this.items.length; }
  push(i: number): void {
    const a = this.items;
    a.push(i);
    for (let k = a.length - 1; k > 0;) {
      const p = (k - 1) >> 1;
      if (this.f[a[p]!]! <= this.f[a[k]!]!) break;
      [a[p], a[k]] = [a[k]!, a[p]!];
      k = p;
    }
  }
  pop(): number {
    const a = this.items, top = a[0]!, last = a.pop()!;
    if (a.length > 0) {
      a[0] = last;
      for (let k = 0; ;) {
        const l = 2 * k + 1, r = l + 1;
        let m = k;
        if (l < a.length && this.f[a[l]!]! < this.f[a[m]!]!) m = l;
        if (r < a.length && this.f[a[r]!]! < this.f[a[m]!]!) m = r;
        if (m === k) break;
        [a[m], a[k]] = [a[k]!, a[m]!];
        k = m;
      }
    }
    return top;
  }
}

/**
 * The waypoints from `from` to `to`, excluding the start: cell centres where
 * the path turns, then the target itself (or the centre of the free cell
 * nearest to it when it is blocked). null when no free cell is near the
 * target or it cannot be reached.
 */
export function findPath(g: Grid, from: Point, to: Point): Point[] | null {
  const free = cellsOf(g);
  const [sx, sy] = cellOf(g, from);
  const [tx, ty] = cellOf(g, to);
  const goal = nearestFree(g, free, tx, ty);
  if (goal < 0) return null;
  const start = sy * g.cols + sx;
  const gx = goal % g.cols, gy = Math.floor(goal / g.cols);
  const came = search(g, free, start, goal);
  if (!came) return null;
  const cells: number[] = [];
  for (let c = goal; c !== start; c = came[c]!) cells.push(c);
  cells.reverse();
  const end = goal === ty * g.cols + tx ? to : cellCentre(g, gx, gy);
  return [...turns(g, cells, start), end];
}

/** A* from start to goal; the predecessor of every reached cell, or null when goal is unreachable. */
function search(g: Grid, free: Uint8Array, start: number, goal: number): Int32Array | null {
  const n = g.cols * g.rows;
  const cost = new Float64Array(n).fill(Infinity);
  const f = new Float64Array(n);
  const came = new Int32Array(n).fill(-1);
  const done = new Uint8Array(n);
  const gx = goal % g.cols, gy = Math.floor(goal / g.cols);
  // Octile distance: exact on an empty eight-connected grid, so A* stays optimal.
  const h = (c: number) => {
    const dx = Math.abs((c % g.cols) - gx), dy = Math.abs(Math.floor(c / g.cols) - gy);
    return Math.max(dx, dy) + (SQRT2 - 1) * Math.min(dx, dy);
  };
  const open = new Heap(f);
  cost[start] = 0;
  f[start] = h(start);
  open.push(start);
  while (open.size > 0) {
    const c = open.pop();
    if (c === goal) return came;
    if (done[c]) continue; // a stale heap entry
    done[c] = 1;
    const cx = c % g.cols, cy = Math.floor(c / g.cols);
    for (const [dx, dy, step] of STEPS) {
      const x = cx + dx, y = cy + dy;
      if (x < 0 || y < 0 || x >= g.cols || y >= g.rows) continue;
      const next = y * g.cols + x;
      if (!free[next] || done[next]) continue;
      // A diagonal step needs both cells it passes between: the server
      // moves x first, then y, and would stop at a blocked corner.
      if (dx !== 0 && dy !== 0 && (!free[cy * g.cols + x] || !free[y * g.cols + cx])) continue;
      const via = cost[c]! + step;
      if (via < cost[next]!) {
        cost[next] = via;
        came[next] = c;
        f[next] = via + h(next);
        open.push(next);
      }
    }
  }
  return null;
}

/** The centres of the cells where the path changes direction (the last cell is left to the caller). */
function turns(g: Grid, cells: number[], start: number): Point[] {
  const out: Point[] = [];
  let prev = start;
  for (let i = 0; i + 1 < cells.length; i++) {
    const c = cells[i]!, next = cells[i + 1]!;
    if (c - prev !== next - c) out.push(cellCentre(g, c % g.cols, Math.floor(c / g.cols)));
    prev = c;
  }
  return out;
}

/** How close to a waypoint counts as there: well under a step, over the 1/16 unit snapshots round to. */
const ARRIVED = 0.25;

/** How many ticks without progress before a path is given up (a player or NPC in the way, a correction). */
const STUCK_TICKS = 20;

/**
 * PathFollower hands out one direction per tick that walks the waypoints
 * in order, shortening the last step onto each waypoint so the path is not
 * overshot into a wall.
 */
export class PathFollower {
  private waypoints: Point[] = [];
  private lastPos: Point | undefined;
  private still = 0;

  get active(): boolean { return this.waypoints.length > 0; }
  get remaining(): readonly Point[] { return this.waypoints; }

  follow(waypoints: Point[]): void {
    this.waypoints = waypoints;
    this.lastPos = undefined;
    this.still = 0;
  }

  cancel(): void { this.waypoints = []; }

  /** The direction (length <= 1) from pos for a step of `step` units, or null when the path is over. */
  next(pos: Point, step: number): Point | null {
    while (this.waypoints.length > 0) {
      const wp = this.waypoints[0]!;
      const dx = wp.x - pos.x, dy = wp.y - pos.y, d = Math.hypot(dx, dy);
      if (d <= ARRIVED) {
        this.waypoints.shift();
        continue;
      }
      if (this.stuck(pos)) {
        this.cancel();
        return null;
      }
      const scale = Math.min(1, d / step) / d;
      return { x: dx * scale, y: dy * scale };
    }
    return null;
  }

  private stuck(pos: Point): boolean {
    const moved = !this.lastPos || Math.hypot(pos.x - this.lastPos.x, pos.y - this.lastPos.y) > 0.01;
    this.still = moved ? 0 : this.still + 1;
    this.lastPos = { x: pos.x, y: pos.y };
    return this.still > STUCK_TICKS;
  }
}
