import { describe, expect, it } from 'vitest';
import {
  ProtocolError,
  type Entity,
  decodeBinarySnapshot,
  dequantize,
  encodeBinaryInput,
  peekBinaryHeader,
  quantize,
  quantizeDirection,
} from '../src/index.js';
import { entities, fromHex, toHex, wireVectors } from './helpers/vectors.js';
import { encodeSnapshot } from './helpers/wire.js';

const vectors = wireVectors();

/** A vector's base as the SDK keeps it; null for a full snapshot's. */
const baseOf = (base: Parameters<typeof entities>[0]) => (base === null ? null : entities(base));

/** An entity with state and target 0 unless given. */
const ent = (e: Omit<Entity, 'state' | 'target'> & Partial<Entity>): Entity => ({ state: 0, target: 0, ...e });

/** The ProtocolError decoding data throws, or a failure when it decodes. */
function refusal(data: Uint8Array, base: Parameters<typeof decodeBinarySnapshot>[1]): ProtocolError {
  try {
    decodeBinarySnapshot(data, base);
  } catch (err) {
    expect(err).toBeInstanceOf(ProtocolError);
    return err as ProtocolError;
  }
  throw new Error(`decoded ${toHex(data)} without an error`);
}

describe('wire vectors', () => {
  it('are the version this SDK decodes', () => {
    expect(vectors.comment).toMatch(/TypeScript SDK/);
    expect(vectors.binaryVersion).toBe(5);
    expect(vectors.positionScale).toBe(16);
  });

  it('carry combat state, targets and doors, and their refusals', () => {
    const all = vectors.snapshots.flatMap((v) => v.entities ?? []);
    expect(all.some((e) => e.kind === 4 && e.state === 1)).toBe(true);
    expect(all.some((e) => e.kind !== 4 && (e.state ?? 0) > 1)).toBe(true);
    expect(all.some((e) => e.target === 0xffffffff)).toBe(true);
    const names = vectors.refusals.map((r) => r.name);
    expect(names).toEqual(expect.arrayContaining(['target beyond uint32', 'truncated state', 'unknown flags']));
  });

  it('carry the inventory channel, full and in a delta, and its refusals', () => {
    const withInventory = vectors.snapshots.filter((v) => v.header.inventory !== undefined);
    expect(withInventory.map((v) => v.header.mode).sort()).toStrictEqual(['delta', 'full']);
    expect(withInventory.some((v) => v.header.inventory!.items.some((i) => i.slot !== undefined))).toBe(true);
    const names = vectors.refusals.map((r) => r.name);
    expect(names).toEqual(expect.arrayContaining([
      'inventory flag without inventory', 'inventory longer than the frame', 'inventory not JSON',
      'inventory with an unknown field', 'inventory then trailing bytes',
    ]));
  });
});

describe('decodeBinarySnapshot', () => {
  it.each(vectors.snapshots.map((v) => [v.name, v] as const))('decodes %s as Go does', (_, v) => {
    const data = fromHex(v.hex);
    const base = baseOf(v.base);
    const got = decodeBinarySnapshot(data, base);
    expect(got.header).toStrictEqual(v.header);
    expect(got.entities).toStrictEqual(entities(v.entities));
    const fixed = { ...v.header };
    delete fixed.inventory; // peeking stops before it
    expect(peekBinaryHeader(data)).toStrictEqual(fixed);
    expect(base).toStrictEqual(baseOf(v.base)); // the base is not modified
  });

  it.each(vectors.refusals.map((v) => [v.name, v] as const))('refuses %s with the Go message', (_, v) => {
    const err = refusal(fromHex(v.hex), baseOf(v.base));
    expect(err.code).toBe('bad_request');
    expect(err.message).toContain(v.message);
    expect(err.message).toMatch(/^binary snapshot: /);
  });

  it.each(vectors.snapshots.map((v) => [v.name, v] as const))('refuses every truncation of %s', (_, v) => {
    const data = fromHex(v.hex);
    const base = baseOf(v.base);
    for (let n = 0; n < data.length; n++) {
      expect(refusal(data.subarray(0, n), base).code).toBe('bad_request');
    }
  });

  it('refuses trailing bytes after every valid vector', () => {
    for (const v of vectors.snapshots) {
      const data = Uint8Array.from([...fromHex(v.hex), 0]);
      expect(refusal(data, baseOf(v.base)).message).toContain('1 trailing bytes');
    }
  });
});

describe('decodeBinarySnapshot, version 5', () => {
  const base = [
    ent({ id: 1, kind: 1, x: 10, y: 20, hp: 100 }),
    ent({ id: 5, kind: 2, x: 1, y: 2, hp: 50 }),
    ent({ id: 9, kind: 4, x: 30, y: 30, hp: 0, state: 2 }),
  ];
  /** A delta from tick 10 to 11 without removals: the upsert count, then the records' bytes. */
  const delta = (upserts: number, ...records: number[]) => Uint8Array.from([0x52, 5, 1, 11, 10, 0, 0, upserts, ...records]);

  it('decodes the example of docs/protocol.md', () => {
    const data = fromHex('5205016564070109030308000808' + '2d0e0f02200020001e');
    expect(data.length).toBe(23);
    const got = decodeBinarySnapshot(data, [ent({ id: 1, kind: 1, x: 10, y: 10, hp: 100 }), ent({ id: 5, kind: 2, x: 3, y: 3, hp: 50 }), ent({ id: 9, kind: 3, x: 4, y: 4, hp: 0 })]);
    expect(got.header).toStrictEqual({ mode: 'delta', tick: 101, baseTick: 100, ackSeq: 7 });
    expect(got.entities).toStrictEqual([
      ent({ id: 1, kind: 1, x: 10.5, y: 10, hp: 100 }),
      ent({ id: 5, kind: 2, x: 3, y: 3, hp: 45 }),
      ent({ id: 12, kind: 2, x: 2, y: 2, hp: 30 }),
    ]);
  });

  it('reads state and target of a new entity after hp, and 0 for those not sent', () => {
    // Full: id 3, flags kind|x|y|hp|state|target: an NPC fighting 300 (a two-byte uvarint); id 4 a closed locked door.
    const data = Uint8Array.from([0x52, 5, 0, 1, 0, 0, 0, 2, 6, 0x6f, 2, 16, 0, 32, 0, 40, 1, 0xac, 0x02, 2, 0x2f, 4, 8, 0, 8, 0, 0, 2]);
    expect(decodeBinarySnapshot(data, null).entities).toStrictEqual([
      ent({ id: 3, kind: 2, x: 1, y: 2, hp: 40, state: 1, target: 300 }),
      ent({ id: 4, kind: 4, x: 0.5, y: 0.5, hp: 0, state: 2 }),
    ]);
  });

  it('changes only the state or only the target of an entity in the base', () => {
    // id 5: target 1 (flags 0x40); id 9 (+4): state 1, the locked door opens and is unlocked (flags 0x20).
    const got = decodeBinarySnapshot(delta(2, 10, 0x40, 1, 8, 0x20, 1), base).entities;
    expect(got).toStrictEqual([base[0], { ...base[1], target: 1 }, { ...base[2], state: 1 }]);
    // Then state and target back to 0, with a move step (flags 0x10|0x20|0x40).
    const back = decodeBinarySnapshot(delta(1, 10, 0x70, 16, 0xf0, 0, 0), got).entities;
    expect(back[1]).toStrictEqual(ent({ id: 5, kind: 2, x: 2, y: 1, hp: 50 }));
  });

  it('refuses a new entity with a move step, without hp, or with flag bit 7', () => {
    // id 7 is new: kind|hp|move.
    expect(refusal(delta(1, 14, 0x19, 2, 1, 1, 5), base).message).toBe('binary snapshot: new entity 7 without all fields (flags 0x19)');
    // kind|x|y|state, no hp.
    expect(refusal(delta(1, 14, 0x27, 2, 0, 0, 0, 0, 1), base).message).toBe('binary snapshot: new entity 7 without all fields (flags 0x27)');
    expect(refusal(delta(1, 2, 0x88, 5), base).message).toBe('binary snapshot: entity 1: unknown flags 0x88');
  });

  it('refuses a target past 2^32-1 and a truncated one', () => {
    expect(refusal(delta(1, 2, 0x40, 0x80, 0x80, 0x80, 0x80, 0x10), base).message).toBe('binary snapshot: entity 1: target 4294967296 overflows uint32');
    expect(decodeBinarySnapshot(delta(1, 2, 0x40, 0xff, 0xff, 0xff, 0xff, 0x0f), base).entities[0]!.target).toBe(0xffffffff);
    expect(refusal(delta(1, 2, 0x40, 0x80), base).message).toBe('binary snapshot: bad or truncated varint at target');
    expect(refusal(delta(1, 2, 0x28, 5), base).message).toBe('binary snapshot: truncated at state');
  });
});

describe('decodeBinarySnapshot, the inventory channel', () => {
  /** A full snapshot at tick 1 without entities, ending with these bytes as its inventory. */
  const withInventory = (json: string | Uint8Array): Uint8Array => {
    const bytes = typeof json === 'string' ? new TextEncoder().encode(json) : json;
    expect(bytes.length).toBeLessThan(1 << 14); // a length of one or two bytes
    const length = bytes.length < 0x80 ? [bytes.length] : [(bytes.length & 0x7f) | 0x80, bytes.length >> 7];
    return Uint8Array.from([0x52, 5, 2, 1, 0, 0, 0, 0, ...length, ...bytes]);
  };
  const decoded = (json: string) => decodeBinarySnapshot(withInventory(json), null).header.inventory;
  const refused = (json: string | Uint8Array) => refusal(withInventory(json), null).message;

  it('reads it in a delta too (mode 3), and leaves the header without it when the mode says none', () => {
    const base = [ent({ id: 1, kind: 1, x: 1, y: 1, hp: 1 })];
    const json = new TextEncoder().encode('{"items":[],"weight":26,"skills":[]}');
    const data = Uint8Array.from([0x52, 5, 3, 11, 10, 0, 0, 0, json.length, ...json]);
    expect(decodeBinarySnapshot(data, base)).toStrictEqual({
      header: { mode: 'delta', tick: 11, baseTick: 10, ackSeq: 0, inventory: { items: [], weight: 26, skills: [] } },
      entities: base,
    });
    expect(peekBinaryHeader(data)).toStrictEqual({ mode: 'delta', tick: 11, baseTick: 10, ackSeq: 0 });
    expect('inventory' in decodeBinarySnapshot(Uint8Array.from([0x52, 5, 1, 11, 10, 0, 0, 0]), base).header).toBe(false);
  });

  it('takes fields left out or null as empty, and an empty slot as the bag', () => {
    expect(decoded('{}')).toStrictEqual({ items: [], weight: 0, skills: [] });
    expect(decoded(' {"items":null,"weight":null,"skills":[{"name":"melee"}]} ')).toStrictEqual({
      items: [], weight: 0, skills: [{ name: 'melee', level: 0, xp: 0 }],
    });
    expect(decoded('{"items":[{"id":"a","kind":"gem","slot":""},{"id":"b","kind":"sword","slot":"weapon"}]}')!.items).toStrictEqual([
      { id: 'a', kind: 'gem' }, { id: 'b', kind: 'sword', slot: 'weapon' },
    ]);
    expect(decoded('{"items":[{"id":"m/drop/\\u00e9","kind":"bone"}]}')!.items[0]!.id).toBe('m/drop/é');
  });

  it('refuses keys as the Go decoder does: unknown, in another case, twice, at any depth', () => {
    expect(refused('{"weight":1,"bogus":1}')).toBe('binary snapshot: inventory: unknown field "bogus"');
    expect(refused('{"Weight":1}')).toBe('binary snapshot: inventory: unknown field "Weight": keys are case-sensitive, the field is "weight"');
    expect(refused('{"weight":1,"weight":2}')).toBe('binary snapshot: inventory: duplicate key "weight"');
    expect(refused('{"items":[{"id":"a"},{"id":"b","id":"c"}]}')).toBe('binary snapshot: inventory: items[1]: duplicate key "id"');
    expect(refused('{"skills":[{"name":"melee","lvl":1}]}')).toBe('binary snapshot: inventory: skills[0]: unknown field "lvl"');
    expect(refused('{"\\u0077eight":1,"weight":2}')).toBe('binary snapshot: inventory: duplicate key "weight"'); // an escaped key is the same key
    expect(refused('{"constructor":1}')).toBe('binary snapshot: inventory: unknown field "constructor"');
  });

  it('refuses what is not one JSON object', () => {
    for (const json of ['', '[]', 'null', '"{}"', '\ufeff{}']) {
      expect(refused(json), json).toBe('binary snapshot: inventory: not a JSON object');
    }
    expect(refused('{} {}')).toBe('binary snapshot: inventory: data after the JSON object');
    expect(refused('{}x')).toBe('binary snapshot: inventory: data after the JSON object');
    for (const json of ['{', '{"weight":}', '{"weight":1,}', '{"items":[1,]}', '{"weight":01}', '{"items":["\u0001"]}', '{"weight":nul}']) {
      expect(refused(json), json).toMatch(/^binary snapshot: inventory: malformed JSON: /);
    }
    expect(refused(Uint8Array.from([0x7b, 0xff, 0x7d]))).toMatch(/malformed JSON/); // invalid UTF-8 outside a string
  });

  it('refuses values of the wrong type, and numbers that do not fit, after the keys', () => {
    expect(refused('{"weight":"heavy"}')).toBe('binary snapshot: inventory: field weight: string does not fit float32');
    expect(refused('{"weight":1e39}')).toBe('binary snapshot: inventory: field weight: number 1e39 does not fit float32');
    expect(refused('{"items":{}}')).toBe('binary snapshot: inventory: field items: object does not fit an array');
    expect(refused('{"items":[{"kind":3}]}')).toBe('binary snapshot: inventory: field items.kind: number does not fit a string');
    expect(refused('{"skills":[{"level":1.5}]}')).toBe('binary snapshot: inventory: field skills.level: number 1.5 does not fit int');
    expect(refused('{"skills":[{"xp":true}]}')).toBe('binary snapshot: inventory: field skills.xp: bool does not fit int');
    // A value of the wrong type is reported after every key is checked, the first one of them.
    expect(refused('{"weight":"x","items":"y","bogus":1}')).toBe('binary snapshot: inventory: unknown field "bogus"');
    expect(refused('{"weight":"x","items":"y"}')).toBe('binary snapshot: inventory: field weight: string does not fit float32');
    // Inside a value of the wrong type nothing more is looked at.
    expect(refused('{"weight":{"a":1,"a":2}}')).toBe('binary snapshot: inventory: field weight: object does not fit float32');
  });

  it('reads the largest float32 and refuses a nesting deeper than any inventory has', () => {
    expect(decoded('{"weight":3.4028234663852886e38}')!.weight).toBe(3.4028234663852886e38);
    expect(refused(`{"weight":${'['.repeat(70)}${']'.repeat(70)}}`)).toMatch(/malformed JSON: nested too deeply/);
  });
});

describe('peekBinaryHeader', () => {
  it('refuses a bad header like the decoder', () => {
    for (const v of vectors.refusals.filter((r) => r.hex.length <= 16 && r.message.includes('mode'))) {
      expect(() => peekBinaryHeader(fromHex(v.hex))).toThrow(v.message);
    }
    expect(() => peekBinaryHeader(new Uint8Array())).toThrow(ProtocolError);
  });
});

describe('quantization', () => {
  it.each(vectors.quantize.map((v) => [v.v, v.q]))('quantize(%d) = %d', (v, q) => {
    expect(quantize(v)).toBe(q);
    expect(quantize(dequantize(q))).toBe(q);
  });

  it.each(vectors.quantizeDirection.map((v) => [v.v, v.q]))('quantizeDirection(%d) = %d', (v, q) => {
    expect(quantizeDirection(v)).toBe(q);
  });

  it('maps NaN to 0', () => {
    expect(quantize(NaN)).toBe(0);
    expect(quantizeDirection(NaN)).toBe(0);
  });
});

describe('encodeBinaryInput', () => {
  it.each(vectors.inputs.map((v) => [v.name, v] as const))('encodes %s byte for byte', (_, v) => {
    expect(toHex(encodeBinaryInput(v.ackTick, v.inputs))).toBe(v.hex);
  });

  it('refuses what no frame can carry', () => {
    expect(() => encodeBinaryInput(0, [])).toThrow(RangeError);
    const many = Array.from({ length: 65 }, (_, i) => ({ seq: i + 1, x: 1, y: 0 }));
    expect(() => encodeBinaryInput(0, many)).toThrow(RangeError);
    expect(() => encodeBinaryInput(0, [{ seq: 1, x: 0, y: 0 }, { seq: 3, x: 0, y: 0 }])).toThrow(/consecutive/);
  });
});

describe('the tests\' snapshot encoder', () => {
  it('writes the full vectors as the Go encoder does', () => {
    for (const v of vectors.snapshots.filter((s) => s.header.mode === 'full')) {
      expect(toHex(encodeSnapshot(v.header, entities(v.entities)))).toBe(v.hex);
    }
  });

  it('writes deltas the decoder applies', () => {
    const base = [ent({ id: 1, kind: 1, x: 10, y: 20, hp: 100 }), ent({ id: 5, kind: 2, x: 1, y: 2, hp: 3, state: 1, target: 1 })];
    const cur = [ent({ id: 1, kind: 1, x: 300, y: 20, hp: 90, state: 1, target: 5 }), ent({ id: 8, kind: 3, x: 4, y: 5, hp: 0 })];
    const data = encodeSnapshot({ tick: 11, ackSeq: 2, baseTick: 10 }, cur, base);
    expect(decodeBinarySnapshot(data, base)).toStrictEqual({ header: { mode: 'delta', tick: 11, baseTick: 10, ackSeq: 2 }, entities: cur });
  });
});
