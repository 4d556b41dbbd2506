import { describe, expect, it } from 'vitest';
import { SnapshotHistory, applyJSONSnapshot, decodeBinarySnapshot, type Entity, type SnapshotMessage } from '../src/index.js';
import { entities, fromHex, wireVectors } from './helpers/vectors.js';

/**
 * The JSON snapshot the server sends of entities, full: each entity's
 * fields in their channel as protocol.Snapshot.Channel puts them (doors in
 * doors, the others in combat; zero state and target left out).
 */
function fullJSON(tick: number, list: readonly Entity[]): SnapshotMessage {
  const combat: NonNullable<SnapshotMessage['combat']> = [];
  const doors: NonNullable<SnapshotMessage['doors']> = [];
  for (const e of list) {
    if (e.kind === 4) {
      doors.push({ id: e.id, open: (e.state & 1) !== 0, ...((e.state & 2) !== 0 ? { locked: true } : {}) });
    } else {
      combat.push({ id: e.id, hp: e.hp, ...(e.state ? { state: e.state } : {}), ...(e.target ? { target: e.target } : {}) });
    }
  }
  return {
    tick, ackSeq: 0, mode: 'full',
    presence: { add: list.map((e) => ({ id: e.id, kind: e.kind })) },
    movement: list.map((e) => ({ id: e.id, x: e.x, y: e.y })),
    ...(combat.length > 0 ? { combat } : {}),
    ...(doors.length > 0 ? { doors } : {}),
  };
}

const full: SnapshotMessage = {
  tick: 100,
  ackSeq: 7,
  mode: 'full',
  presence: { add: [{ id: 9, kind: 2 }, { id: 1, kind: 1 }, { id: 5, kind: 3 }] },
  movement: [{ id: 1, x: 10, y: 20 }, { id: 5, x: 12, y: 22 }, { id: 9, x: 30.5, y: 31.25 }],
  combat: [{ id: 1, hp: 100 }, { id: 5, hp: 0 }, { id: 9, hp: 50 }],
};

const afterFull: Entity[] = [
  { id: 1, kind: 1, x: 10, y: 20, hp: 100, state: 0, target: 0 },
  { id: 5, kind: 3, x: 12, y: 22, hp: 0, state: 0, target: 0 },
  { id: 9, kind: 2, x: 30.5, y: 31.25, hp: 50, state: 0, target: 0 },
];

describe('applyJSONSnapshot', () => {
  it('builds a full snapshot sorted by id', () => {
    expect(applyJSONSnapshot(null, full)).toStrictEqual(afterFull);
  });

  it('ignores the base of a full snapshot', () => {
    expect(applyJSONSnapshot([{ id: 2, kind: 2, x: 1, y: 1, hp: 1, state: 0, target: 0 }], full)).toStrictEqual(afterFull);
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
      { id: 1, kind: 1, x: 10.5, y: 20, hp: 100, state: 0, target: 0 },
      { id: 9, kind: 2, x: 30.5, y: 31.25, hp: 45, state: 0, target: 0 },
      { id: 12, kind: 2, x: 2, y: 2, hp: 30, state: 0, target: 0 },
    ]);
    expect(base).toStrictEqual(afterFull); // the base is not modified
  });

  it('keeps everything for an empty delta', () => {
    const base = applyJSONSnapshot(null, full);
    expect(applyJSONSnapshot(base, { tick: 101, ackSeq: 7, mode: 'delta', baseTick: 100 })).toStrictEqual(afterFull);
  });

  it('reads combat state and target, 0 when left out', () => {
    const base = applyJSONSnapshot(null, full);
    const fighting = applyJSONSnapshot(base, {
      tick: 101, ackSeq: 7, mode: 'delta', baseTick: 100,
      combat: [{ id: 1, hp: 95, state: 1, target: 9 }, { id: 9, hp: 50, state: 1, target: 1 }],
    });
    expect(fighting[0]).toStrictEqual({ ...afterFull[0], hp: 95, state: 1, target: 9 });
    expect(fighting[2]).toStrictEqual({ ...afterFull[2], state: 1, target: 1 });
    // The NPC gives up and walks home: an entry carries all three, so a missing target is 0.
    const returning = applyJSONSnapshot(fighting, { tick: 102, ackSeq: 7, mode: 'delta', baseTick: 101, combat: [{ id: 9, hp: 50, state: 3 }] });
    expect(returning[2]).toStrictEqual({ ...afterFull[2], state: 3, target: 0 });
    // And the player's target died: both left out.
    const idle = applyJSONSnapshot(returning, { tick: 103, ackSeq: 7, mode: 'delta', baseTick: 102, combat: [{ id: 1, hp: 95 }] });
    expect(idle[0]).toStrictEqual({ ...afterFull[0], hp: 95 });
  });

  it('reads the doors channel into the door state bits', () => {
    const snap: SnapshotMessage = {
      tick: 5, ackSeq: 0, mode: 'full',
      presence: { add: [{ id: 20, kind: 4 }, { id: 21, kind: 4 }, { id: 22, kind: 4 }] },
      movement: [{ id: 20, x: 16, y: 12 }, { id: 21, x: 40, y: 12 }, { id: 22, x: 64, y: 12 }],
      doors: [{ id: 20, open: false }, { id: 21, open: true }, { id: 22, open: false, locked: true }],
    };
    const door = (id: number, x: number, state: number): Entity => ({ id, kind: 4, x, y: 12, hp: 0, state, target: 0 });
    const got = applyJSONSnapshot(null, snap);
    expect(got).toStrictEqual([door(20, 16, 0), door(21, 40, 1), door(22, 64, 2)]);
    // The locked one is opened with the key (and so unlocked), the open one closes.
    const after = applyJSONSnapshot(got, {
      tick: 6, ackSeq: 0, mode: 'delta', baseTick: 5, doors: [{ id: 21, open: false }, { id: 22, open: true }],
    });
    expect(after).toStrictEqual([door(20, 16, 0), door(21, 40, 0), door(22, 64, 1)]);
  });

  it('shows the world the binary vectors show, from the same entities', () => {
    for (const v of wireVectors().snapshots.filter((v) => v.header.mode === 'full')) {
      // JSON carries no hit points of doors: the vectors' doors that have some are not the server's.
      const want = entities(v.entities);
      if (want.some((e) => e.kind === 4 && e.hp !== 0)) continue;
      expect(applyJSONSnapshot(null, fullJSON(v.header.tick, want)), v.name).toStrictEqual(decodeBinarySnapshot(fromHex(v.hex), null).entities);
    }
  });

  it('can remove everything', () => {
    const base = applyJSONSnapshot(null, full);
    expect(applyJSONSnapshot(base, { tick: 101, ackSeq: 7, mode: 'delta', baseTick: 100, presence: { remove: [1, 5, 9] } })).toStrictEqual([]);
  });
});

describe('SnapshotHistory', () => {
  const entities = (tick: number): Entity[] => [{ id: 1, kind: 1, x: tick, y: 0, hp: 1, state: 0, target: 0 }];

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
