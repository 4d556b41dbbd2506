// A small binary snapshot encoder for tests (the SDK only decodes): full
// records, and deltas with the changed fields of each entity, as
// internal/protocol's AppendBinarySnapshot lays them out (without its
// compact move steps, which the wire vectors cover), and the inventory
// channel at the end when given.

import { quantize, type Entity, type Inventory } from '../../src/index.js';

const FIELD_KIND = 1;
const FIELD_X = 2;
const FIELD_Y = 4;
const FIELD_HP = 8;
const FIELD_STATE = 32;
const FIELD_TARGET = 64;
const FIELDS_ALL = FIELD_KIND | FIELD_X | FIELD_Y | FIELD_HP;

function uvarint(out: number[], v: number): void {
  while (v >= 0x80) {
    out.push((v % 0x80) | 0x80);
    v = Math.floor(v / 0x80);
  }
  out.push(v);
}

function uint16(out: number[], v: number): void {
  out.push(v & 0xff, v >> 8);
}

/** A snapshot of cur at tick: full without base, else a delta against base at baseTick. */
export function encodeSnapshot(
  h: { tick: number; ackSeq: number; baseTick?: number; inventory?: Inventory },
  cur: readonly Entity[],
  base?: readonly Entity[],
): Uint8Array {
  const delta = base !== undefined;
  const out: number[] = [0x52, 5, (delta ? 1 : 0) | (h.inventory ? 2 : 0)];
  uvarint(out, h.tick);
  uvarint(out, delta ? (h.baseTick ?? 0) : 0);
  uvarint(out, h.ackSeq);
  const sorted = [...cur].sort((a, b) => a.id - b.id);
  const was = new Map((base ?? []).map((e) => [e.id, e]));
  const removed = [...was.keys()].filter((id) => !sorted.some((e) => e.id === id)).sort((a, b) => a - b);
  uvarint(out, removed.length);
  removed.forEach((id, i) => uvarint(out, i === 0 ? id : id - removed[i - 1]!));
  const records = sorted.map((e) => ({ e, flags: changed(was.get(e.id), e) })).filter((r) => r.flags !== 0);
  uvarint(out, records.length);
  records.forEach(({ e, flags }, i) => {
    uvarint(out, (i === 0 ? e.id : e.id - records[i - 1]!.e.id) * 2);
    out.push(flags);
    if (flags & FIELD_KIND) out.push(e.kind);
    if (flags & FIELD_X) uint16(out, quantize(e.x));
    if (flags & FIELD_Y) uint16(out, quantize(e.y));
    if (flags & FIELD_HP) out.push(e.hp);
    if (flags & FIELD_STATE) out.push(e.state);
    if (flags & FIELD_TARGET) uvarint(out, e.target);
  });
  if (h.inventory) {
    // As Go marshals it: the fields in declaration order, an item's slot only when worn.
    const json = new TextEncoder().encode(JSON.stringify(h.inventory));
    uvarint(out, json.length);
    out.push(...json);
  }
  return Uint8Array.from(out);
}

function changed(b: Entity | undefined, c: Entity): number {
  if (b === undefined) return FIELDS_ALL | (c.state !== 0 ? FIELD_STATE : 0) | (c.target !== 0 ? FIELD_TARGET : 0);
  return (
    (b.kind !== c.kind ? FIELD_KIND : 0) |
    (quantize(b.x) !== quantize(c.x) ? FIELD_X : 0) |
    (quantize(b.y) !== quantize(c.y) ? FIELD_Y : 0) |
    (b.hp !== c.hp ? FIELD_HP : 0) |
    (b.state !== c.state ? FIELD_STATE : 0) |
    (b.target !== c.target ? FIELD_TARGET : 0)
  );
}
