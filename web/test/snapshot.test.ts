import { describe, expect, it } from 'vitest';
import { SnapshotHistory, applyJSONSnapshot, type Entity, type SnapshotMessage } from '../src/index.js';

const full: SnapshotMessage = {
  tick: 100,
  ackSeq: 7,
  mode: 'full',
  presence: { add: [{ id: 9, kind: 2 }, { id: 1, kind: 1 }, { id: 5, kind: 3 }] },
  movement: [{ id: 1, x: 10, y: 20 }, { id: 5, x: 12, y: 22 }, { id: 9, x: 30.5, y: 31.25 }],
  combat: [{ id: 1, hp: 100 }, { id: 5, hp: 0 }, { id: 9, hp: 50 }],
};

const afterFull: Entity[] = [
  { id: 1, kind: 1, x: 10, y: 20, hp: 100 },
  { id: 5, kind: 3, x: 12, y: 22, hp: 0 },
  { id: 9, kind: 2, x: 30.5, y: 31.25, hp: 50 },
];

describe('applyJSONSnapshot', () => {
  it('builds a full snapshot sorted by id', () => {
    expect(applyJSONSnapshot(null, full)).toStrictEqual(afterFull);
  });

  it('ignores the base of a full snapshot', () => {
    expect(applyJSONSnapshot([{ id: 2, kind: 2, x: 1, y: 1, hp: 1 }], full)).toStrictEqual(afterFull);
  });

  it('applies a delta: arrivals, departures, movement and combat', () => {
    const base = applyJSONSnapshot(null, full);
    const delta: SnapshotMessage = {
      tick: 101,
      ackSeq: 8,
      mode: 'delta',
      baseTick: 100,
      presence: { add: [{ id: 12, kind: 2 }], remove: [5] },
      movement: [{ id: 1, x: 10.5, y: 20 }, { id: 12, x: 2, y: 2 }],
      combat: [{ id: 9, hp: 45 }, { id: 12, hp: 30 }],
    };
    expect(applyJSONSnapshot(base, delta)).toStrictEqual([
      { id: 1, kind: 1, x: 10.5, y: 20, hp: 100 },
      { id: 9, kind: 2, x: 30.5, y: 31.25, hp: 45 },
      { id: 12, kind: 2, x: 2, y: 2, hp: 30 },
    ]);
    expect(base).toStrictEqual(afterFull); // the base is not modified
  });

  it('keeps everything for an empty delta', () => {
    const base = applyJSONSnapshot(null, full);
    expect(applyJSONSnapshot(base, { tick: 101, ackSeq: 7, mode: 'delta', baseTick: 100 })).toStrictEqual(afterFull);
  });

  it('can remove everything', () => {
    const base = applyJSONSnapshot(null, full);
    expect(applyJSONSnapshot(base, { tick: 101, ackSeq: 7, mode: 'delta', baseTick: 100, presence: { remove: [1, 5, 9] } })).toStrictEqual([]);
  });
});

describe('SnapshotHistory', () => {
  const entities = (tick: number): Entity[] => [{ id: 1, kind: 1, x: tick, y: 0, hp: 1 }];

  it('keeps the last size ticks', () => {
    const h = new SnapshotHistory(4);
    for (let tick = 1; tick <= 6; tick++) h.put(tick, entities(tick));
    expect(h.get(1)).toBeUndefined();
    expect(h.get(2)).toBeUndefined();
    for (let tick = 3; tick <= 6; tick++) expect(h.get(tick)).toStrictEqual(entities(tick));
    expect(h.get(7)).toBeUndefined();
  });

  it('does not take a tick for another one in the same slot', () => {
    const h = new SnapshotHistory(4);
    h.put(5, entities(5));
    expect(h.get(1)).toBeUndefined();
    expect(h.get(9)).toBeUndefined();
    expect(h.get(5)).toStrictEqual(entities(5));
  });

  it('holds 64 by default, tick 0 included, and forgets on clear', () => {
    const h = new SnapshotHistory();
    h.put(0, entities(0));
    for (let tick = 1; tick < 64; tick++) h.put(tick, entities(tick));
    expect(h.get(0)).toStrictEqual(entities(0));
    h.put(64, entities(64));
    expect(h.get(0)).toBeUndefined();
    h.clear();
    expect(h.get(64)).toBeUndefined();
  });
});
