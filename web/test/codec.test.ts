import { describe, expect, it } from 'vitest';
import {
  ProtocolError,
  decodeBinarySnapshot,
  dequantize,
  encodeBinaryInput,
  peekBinaryHeader,
  quantize,
  quantizeDirection,
} from '../src/index.js';
import { fromHex, toHex, wireVectors } from './helpers/vectors.js';
import { encodeSnapshot } from './helpers/wire.js';

const vectors = wireVectors();

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
    expect(vectors.binaryVersion).toBe(3);
    expect(vectors.positionScale).toBe(16);
  });
});

describe('decodeBinarySnapshot', () => {
  it.each(vectors.snapshots.map((v) => [v.name, v] as const))('decodes %s as Go does', (_, v) => {
    const data = fromHex(v.hex);
    const base = v.base === null ? null : structuredClone(v.base);
    const got = decodeBinarySnapshot(data, base);
    expect(got.header).toStrictEqual(v.header);
    expect(got.entities).toStrictEqual(v.entities ?? []);
    expect(peekBinaryHeader(data)).toStrictEqual(v.header);
    expect(base).toStrictEqual(v.base); // the base is not modified
  });

  it.each(vectors.refusals.map((v) => [v.name, v] as const))('refuses %s with the Go message', (_, v) => {
    const err = refusal(fromHex(v.hex), v.base);
    expect(err.code).toBe('bad_request');
    expect(err.message).toContain(v.message);
    expect(err.message).toMatch(/^binary snapshot: /);
  });

  it.each(vectors.snapshots.map((v) => [v.name, v] as const))('refuses every truncation of %s', (_, v) => {
    const data = fromHex(v.hex);
    for (let n = 0; n < data.length; n++) {
      expect(refusal(data.subarray(0, n), v.base).code).toBe('bad_request');
    }
  });

  it('refuses trailing bytes after every valid vector', () => {
    for (const v of vectors.snapshots) {
      const data = Uint8Array.from([...fromHex(v.hex), 0]);
      expect(refusal(data, v.base).message).toContain('1 trailing bytes');
    }
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
      expect(toHex(encodeSnapshot(v.header, v.entities ?? []))).toBe(v.hex);
    }
  });

  it('writes deltas the decoder applies', () => {
    const base = [{ id: 1, kind: 1, x: 10, y: 20, hp: 100 }, { id: 5, kind: 2, x: 1, y: 2, hp: 3 }];
    const cur = [{ id: 1, kind: 1, x: 300, y: 20, hp: 90 }, { id: 8, kind: 3, x: 4, y: 5, hp: 0 }];
    const data = encodeSnapshot({ tick: 11, ackSeq: 2, baseTick: 10 }, cur, base);
    expect(decodeBinarySnapshot(data, base)).toStrictEqual({ header: { mode: 'delta', tick: 11, baseTick: 10, ackSeq: 2 }, entities: cur });
  });
});
