import { describe, expect, it } from 'vitest';
import { Interpolator, Predictor, encumberedStepDistance, move, stepDistance, type Entity, type Input, type StaticWorld } from '../src/index.js';

const dist = stepDistance(48, 30);

/** A 256x256 world with a wall at x >= 128. */
const walled = { blocked: (x: number, y: number) => !(x >= 0 && y >= 0 && x < 256 && y < 256) || x >= 128 } as StaticWorld;

/** The server's side: applies inputs in order, as sim.Move. */
function serverPath(x: number, y: number, inputs: readonly Input[]): { x: number; y: number } {
  let pos = { x, y };
  for (const i of inputs) pos = move(walled, pos.x, pos.y, i.x, i.y, dist);
  return pos;
}

const inputs: Input[] = Array.from({ length: 10 }, (_, i) => ({ seq: i + 1, x: Math.fround(0.6), y: Math.fround(-0.8) }));

describe('Predictor', () => {
  it('moves at once on each recorded input', () => {
    const p = new Predictor(walled, dist);
    p.reconcile(100, 100, 0);
    for (const i of inputs.slice(0, 3)) p.record(i);
    expect(p.pending).toBe(3);
    expect({ x: p.x, y: p.y }).toStrictEqual(serverPath(100, 100, inputs.slice(0, 3)));
  });

  it('drops acknowledged inputs and replays the rest from the server position', () => {
    const p = new Predictor(walled, dist);
    p.reconcile(100, 100, 0);
    for (const i of inputs) p.record(i);
    // The server applied inputs 1..4 but was pushed elsewhere meanwhile.
    const got = p.reconcile(90, 95, 4);
    expect(p.pending).toBe(6);
    expect(got).toStrictEqual(serverPath(90, 95, inputs.slice(4)));
    expect({ x: p.x, y: p.y }).toStrictEqual(got);
  });

  it('equals the server path when the server applies the same inputs', () => {
    const p = new Predictor(walled, dist);
    p.reconcile(120, 200, 0);
    const east = Array.from({ length: 20 }, (_, i) => ({ seq: i + 1, x: 1, y: 0 }));
    for (const i of east) p.record(i);
    const predicted = { x: p.x, y: p.y };
    for (let acked = 0; acked <= east.length; acked += 5) {
      const server = serverPath(120, 200, east.slice(0, acked));
      expect(p.reconcile(server.x, server.y, acked)).toStrictEqual(predicted);
    }
    expect(p.pending).toBe(0);
    expect(predicted.x).toBeLessThan(128); // the wall stopped it, as it stops the server
  });

  it('keeps acknowledging past skipped seqs', () => {
    const p = new Predictor(walled, dist);
    for (const i of inputs.slice(0, 3)) p.record(i);
    expect(p.reconcile(50, 50, 99)).toStrictEqual({ x: 50, y: 50 });
    expect(p.pending).toBe(0);
  });

  it('blocks nothing but the bounds without a world', () => {
    const p = new Predictor(undefined, 10, { width: 100, height: 100 });
    p.reconcile(95, 50, 0);
    p.record({ seq: 1, x: 1, y: 0 });
    expect(p.x).toBe(95);
    p.record({ seq: 2, x: -1, y: 0 });
    expect(p.x).toBe(85);
  });
});

describe('Predictor, encumbered', () => {
  const slow = encumberedStepDistance(48, 30, { encumberedAt: 25, encumberedSpeed: 0.6 }, 30);
  const east = Array.from({ length: 4 }, (_, i) => ({ seq: i + 1, x: 1, y: 0 }));
  /** n inputs east from (x, 20), each d long. */
  const walk = (x: number, n: number, d: number) => {
    let q = { x, y: 20 };
    for (let i = 0; i < n; i++) q = move(walled, q.x, q.y, 1, 0, d);
    return q;
  };

  it('moves new inputs the new distance, and replays the pending ones with it at the next reconcile', () => {
    const p = new Predictor(walled, dist);
    p.reconcile(20, 20, 0);
    for (const i of east.slice(0, 3)) p.record(i);
    expect({ x: p.x, y: p.y }).toStrictEqual(walk(20, 3, dist));
    p.stepDistance = slow; // the weight went over encumberedAt
    expect(p.stepDistance).toBe(slow);
    p.record(east[3]!);
    expect({ x: p.x, y: p.y }).toStrictEqual(move(walled, walk(20, 3, dist).x, 20, 1, 0, slow));
    // The server applied input 1 at full speed; 2..4 replay at the slow speed, as the server now moves them.
    const server = walk(20, 1, dist);
    expect(p.reconcile(server.x, server.y, 1)).toStrictEqual(walk(server.x, 3, slow));
    expect(slow).toBeLessThan(dist);
  });
});

describe('Interpolator', () => {
  const e = (id: number, x: number, y = 0): Entity => ({ id, kind: 2, x, y, hp: 10, state: 0, target: 0 });

  it('places entities between the two snapshots around now - delay', () => {
    const interp = new Interpolator(100);
    interp.push(1000, [e(1, 0, 10), e(2, 100)]);
    interp.push(1100, [e(1, 10, 20), e(2, 100)]);
    expect(interp.sample(1150)).toStrictEqual([e(1, 5, 15), e(2, 100)]);
    expect(interp.sample(1125)).toStrictEqual([e(1, 2.5, 12.5), e(2, 100)]);
  });

  it('clamps to the first and the last snapshot', () => {
    const interp = new Interpolator(100);
    interp.push(1000, [e(1, 0)]);
    interp.push(1100, [e(1, 10)]);
    expect(interp.sample(500)).toStrictEqual([e(1, 0)]);
    expect(interp.sample(1200)).toStrictEqual([e(1, 10)]);
    expect(interp.sample(5000)).toStrictEqual([e(1, 10)]);
  });

  it('shows a new entity at its first position once its snapshot is due, and drops a gone one then', () => {
    const interp = new Interpolator(100);
    interp.push(1000, [e(1, 0), e(2, 50)]);
    interp.push(1100, [e(1, 10), e(3, 70)]);
    // Halfway: 2 still stands where it was, 3 is not there yet.
    expect(interp.sample(1150)).toStrictEqual([e(1, 5), e(2, 50)]);
    // At the second snapshot: 2 has gone, 3 appears where it was first seen.
    expect(interp.sample(1200)).toStrictEqual([e(1, 10), e(3, 70)]);
  });

  it('samples nothing before any snapshot', () => {
    expect(new Interpolator().sample(1000)).toStrictEqual([]);
  });

  it('returns copies', () => {
    const interp = new Interpolator(0);
    const first = e(1, 0);
    interp.push(0, [first]);
    interp.sample(0)[0]!.x = 99;
    expect(interp.sample(0)).toStrictEqual([e(1, 0)]);
    expect(first.x).toBe(0);
  });
});
