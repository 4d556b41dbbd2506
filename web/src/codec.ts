// The binary codecs of docs/protocol.md: the snapshot decoder (v5) and the
// input encoder (v1), with the quantization both sides share. They follow
// internal/protocol/binary.go, fields.go and binput.go check for check, so
// a frame the Go decoder refuses is refused here with the same message
// (for the inventory's JSON, one naming the same fault: inventory.ts); the
// wire vectors (internal/protocol/testdata) hold both to that.

import { parseInventory } from './inventory.js';
import { ProtocolError, type Entity, type Input, type Inventory } from './protocol.js';

/** Quantization steps per world unit of snapshot positions. */
export const POSITION_SCALE = 16;
/** Quantization of a direction component in binary inputs. */
export const DIRECTION_SCALE = 32767;
/** The most inputs one binary input frame carries. */
export const MAX_BINARY_INPUTS = 64;

const SNAPSHOT_MAGIC = 0x52; // 'R'
const SNAPSHOT_VERSION = 5;
const INPUT_MAGIC = 0x49; // 'I'
const INPUT_VERSION = 1;
const MODE_FULL = 0;
const MODE_DELTA = 1;
// The mode byte's bit that says the inventory channel ends the snapshot.
const MODE_HAS_INVENTORY = 2;

// Field flags of an upsert record.
const FIELD_KIND = 1 << 0;
const FIELD_X = 1 << 1;
const FIELD_Y = 1 << 2;
const FIELD_HP = 1 << 3;
const FIELD_MOVE = 1 << 4;
const FIELD_STATE = 1 << 5;
const FIELD_TARGET = 1 << 6;
// The fields a new entity always carries; state and target come with it
// when they are not 0.
const FIELDS_ALL = FIELD_KIND | FIELD_X | FIELD_Y | FIELD_HP;
// The fields after the position (internal/protocol/fields.go), in wire order.
const FIELDS_EXTRA = FIELD_HP | FIELD_STATE | FIELD_TARGET;
const FIELDS_ANY = FIELDS_ALL | FIELD_MOVE | FIELDS_EXTRA;

// The smallest upsert record (head and flags): bounds a believable count.
const MIN_UPSERT_BYTES = 2;
const MAX_UINT32 = 0xffffffff;
const MAX_UINT16 = 0xffff;
// binary.MaxVarintLen64: a uvarint of more bytes overflows 64 bits.
const MAX_VARINT_LEN = 10;

export interface SnapshotHeader {
  mode: 'full' | 'delta';
  tick: number;
  baseTick: number;
  ackSeq: number;
  /**
   * The player's inventory channel, when the snapshot ends with it (in a
   * full snapshot, and in a delta when it changed). peekBinaryHeader does
   * not read it.
   */
  inventory?: Inventory;
}

/**
 * A world coordinate as binary snapshots carry it: round(v*16) clamped to
 * 0..65535, NaN 0. v is taken as a float32, like protocol.Quantize.
 */
export function quantize(v: number): number {
  const f = Math.fround(v) * POSITION_SCALE;
  if (!(f > 0)) return 0; // also NaN
  if (f >= MAX_UINT16) return MAX_UINT16;
  return Math.floor(f + 0.5);
}

/** The world coordinate of a quantized one; exact. */
export function dequantize(q: number): number {
  return q / POSITION_SCALE;
}

/** A direction component as the int16 a binary input frame carries. */
function directionStep(v: number): number {
  const f = Math.fround(v);
  if (Number.isNaN(f)) return 0;
  return roundHalfAway(Math.max(-1, Math.min(1, f)) * DIRECTION_SCALE);
}

/**
 * Go's math.Round to an integer: halves away from zero (Math.round takes
 * them up), and never -0 (the int16 Go rounds to has no sign of zero).
 */
function roundHalfAway(v: number): number {
  return Math.sign(v) * Math.round(Math.abs(v)) || 0;
}

/**
 * The float32 value the server applies for direction component v sent in a
 * binary input frame (protocol.QuantizeDirection). Predict with it and the
 * reconciliation stays exact.
 */
export function quantizeDirection(v: number): number {
  return Math.fround(directionStep(v) / DIRECTION_SCALE);
}

/**
 * The binary input frame of inputs (1 to 64, consecutive seqs)
 * acknowledging ackTick (0: none).
 */
export function encodeBinaryInput(ackTick: number, inputs: readonly Input[]): Uint8Array {
  const first = inputs[0];
  if (first === undefined || inputs.length > MAX_BINARY_INPUTS) {
    throw new RangeError(`a binary input frame holds 1 to ${MAX_BINARY_INPUTS} inputs, got ${inputs.length}`);
  }
  const out: number[] = [INPUT_MAGIC, INPUT_VERSION];
  pushUvarint(out, ackTick);
  pushUvarint(out, first.seq);
  out.push(inputs.length);
  inputs.forEach((input, i) => {
    if (input.seq !== first.seq + i) {
      throw new RangeError(`input ${i} has seq ${input.seq}, want ${first.seq + i}: seqs must be consecutive`);
    }
    pushInt16(out, directionStep(input.x));
    pushInt16(out, directionStep(input.y));
    out.push(0); // buttons: none are defined yet
  });
  return Uint8Array.from(out);
}

/** Appends v (a non-negative integer up to 2^53) as a LEB128 uvarint. */
function pushUvarint(out: number[], v: number): void {
  if (!Number.isSafeInteger(v) || v < 0) throw new RangeError(`uvarint of ${v}`);
  // Division, not shifts: JS bit operators truncate to 32 bits.
  while (v >= 0x80) {
    out.push((v % 0x80) | 0x80);
    v = Math.floor(v / 0x80);
  }
  out.push(v);
}

function pushInt16(out: number[], v: number): void {
  const u = v & 0xffff;
  out.push(u & 0xff, u >> 8);
}

/** Decodes only a binary snapshot's header, to find the base a delta needs (not the inventory at its end). */
export function peekBinaryHeader(data: Uint8Array): SnapshotHeader {
  return new Reader(data).header().header;
}

/**
 * Decodes a binary snapshot. A full snapshot yields its entities; a delta
 * is applied to base (the snapshot at header.baseTick, sorted by id) and
 * yields the whole resulting list, sorted by id. header.inventory is the
 * inventory channel when the frame carries it. Malformed input throws a
 * ProtocolError with code 'bad_request'; base is never modified.
 */
export function decodeBinarySnapshot(
  data: Uint8Array,
  base: readonly Entity[] | null,
): { header: SnapshotHeader; entities: Entity[] } {
  const r = new Reader(data);
  const { header, hasInventory } = r.header();
  const removals = r.removals();
  const upserts = new IdCursor('upsert id', r.count(MIN_UPSERT_BYTES, 'upsert count'));
  if (header.mode === 'full' && removals.ids.left !== 0) r.fail('full snapshot with removals');
  const entities = merge(r, header.mode === 'full' ? [] : (base ?? []), removals, upserts);
  if (hasInventory) header.inventory = r.inventory();
  if (r.left !== 0) r.fail(`${r.left} trailing bytes`);
  return { header, entities };
}

/**
 * Reader consumes a frame. Unlike the Go reader, whose first error sticks,
 * it throws at the first fault: the same checks in the same order name the
 * same fault.
 */
class Reader {
  private pos: number;

  constructor(
    private readonly buf: Uint8Array,
    start = 0,
  ) {
    this.pos = start;
  }

  get left(): number {
    return this.buf.length - this.pos;
  }

  /** A reader at the same position, for a second pass over a list. */
  fork(): Reader {
    return new Reader(this.buf, this.pos);
  }

  /** Moves this reader to where other stands. */
  join(other: Reader): void {
    this.pos = other.pos;
  }

  fail(message: string): never {
    throw new ProtocolError('bad_request', `binary snapshot: ${message}`);
  }

  byte(what: string): number {
    const b = this.buf[this.pos];
    if (b === undefined) this.fail(`truncated at ${what}`);
    this.pos++;
    return b;
  }

  uint16le(what: string): number {
    if (this.left < 2) this.fail(`truncated at ${what}`);
    const lo = this.byte(what);
    return lo | (this.byte(what) << 8);
  }

  /**
   * A uvarint exactly as Go's binary.Uvarint accepts it: at most 10 bytes,
   * the tenth at most 1. Values past 2^53 lose precision, which no count,
   * id or tick that passes the later checks has.
   */
  uvarint(what: string): number {
    let v = 0;
    let scale = 1;
    for (let i = 0; i < MAX_VARINT_LEN; i++) {
      const b = this.buf[this.pos + i];
      if (b === undefined) break;
      if (b < 0x80) {
        if (i === MAX_VARINT_LEN - 1 && b > 1) break;
        this.pos += i + 1;
        return v + b * scale;
      }
      v += (b & 0x7f) * scale;
      scale *= 0x80;
    }
    return this.fail(`bad or truncated varint at ${what}`);
  }

  /** The fixed part of a snapshot, and whether the inventory channel ends it. */
  header(): { header: SnapshotHeader; hasInventory: boolean } {
    const magic = this.byte('magic');
    if (magic !== SNAPSHOT_MAGIC) this.fail(`bad magic 0x${hex2(magic)}`);
    const version = this.byte('version');
    if (version !== SNAPSHOT_VERSION) this.fail(`unsupported version ${version}`);
    const modeByte = this.byte('mode');
    const mode = modeByte & ~MODE_HAS_INVENTORY;
    const tick = this.uvarint('tick');
    const baseTick = this.uvarint('baseTick');
    const ackSeq = this.uvarint('ackSeq');
    if (ackSeq > MAX_UINT32) this.fail(`ackSeq ${ackSeq} overflows uint32`);
    if (mode > MODE_DELTA) this.fail(`unknown mode ${mode}`);
    if (mode === MODE_FULL && baseTick !== 0) this.fail(`full snapshot with baseTick ${baseTick}`);
    if (mode === MODE_DELTA && baseTick === 0) this.fail('delta snapshot without baseTick');
    return {
      header: { mode: mode === MODE_FULL ? 'full' : 'delta', tick, baseTick, ackSeq },
      hasInventory: (modeByte & MODE_HAS_INVENTORY) !== 0,
    };
  }

  /** The inventory channel that ends a snapshot: its length, then that much UTF-8 JSON. */
  inventory(): Inventory {
    const n = this.count(1, 'inventory length');
    const data = this.buf.subarray(this.pos, this.pos + n);
    this.pos += n;
    try {
      return parseInventory(data);
    } catch (err) {
      return this.fail(err instanceof Error ? err.message : String(err));
    }
  }

  /**
   * A list length, refused when the bytes left cannot hold it at minBytes
   * each, so no frame makes the decoder allocate more than it sent.
   */
  count(minBytes: number, what: string): number {
    const n = this.uvarint(what);
    if (n > Math.floor(this.left / minBytes)) this.fail(`${what} ${n} exceeds the ${this.left} bytes left`);
    return n;
  }

  /**
   * Validates the removal list and moves past it; the returned list starts
   * at its first ID for the merge.
   */
  removals(): IdList {
    const n = this.count(1, 'removal count');
    const list = new IdList(this.fork(), new IdCursor('removal id', n));
    const scan = new IdList(this.fork(), new IdCursor('removal id', n));
    while (scan.next() !== undefined);
    this.join(scan.r);
    return list;
  }

  /**
   * Reads the ID and flags of the next upsert record into up (one object
   * for the whole frame: the decoder allocates only the entities); false
   * past the last record.
   */
  upsertHead(ids: IdCursor, up: UpsertHead): boolean {
    if (ids.left === 0) return false;
    const head = this.uvarint(ids.name);
    const id = ids.step(this, Math.floor(head / 2));
    up.id = id;
    if (head % 2 === 1) { // a move-only record
      up.flags = FIELD_MOVE;
      return true;
    }
    const flags = this.byte('flags');
    if ((flags & ~FIELDS_ANY) !== 0) this.fail(`entity ${id}: unknown flags 0x${hex2(flags)}`);
    if ((flags & FIELD_MOVE) !== 0 && (flags & (FIELD_X | FIELD_Y)) !== 0) {
      this.fail(`entity ${id}: a move step together with a position`);
    }
    up.flags = flags;
    return true;
  }

  /** Reads the fields flags names into e, in the record's order. */
  applyFields(e: Entity, flags: number): void {
    if (flags & FIELD_KIND) e.kind = this.byte('kind');
    if (flags & FIELD_X) e.x = dequantize(this.uint16le('x'));
    if (flags & FIELD_Y) e.y = dequantize(this.uint16le('y'));
    if (flags & FIELD_MOVE) {
      e.x = this.step(e.x, 'x step');
      e.y = this.step(e.y, 'y step');
    }
    if (flags & FIELDS_EXTRA) this.applyExtras(e, flags);
  }

  /** The fields of fields.go's table, in its order: hp, state (a byte each), target (a uvarint that fits uint32). */
  private applyExtras(e: Entity, flags: number): void {
    if (flags & FIELD_HP) e.hp = this.byte('hp');
    if (flags & FIELD_STATE) e.state = this.byte('state');
    if (flags & FIELD_TARGET) {
      const target = this.uvarint('target');
      if (target > MAX_UINT32) this.fail(`entity ${e.id}: target ${target} overflows uint32`);
      e.target = target;
    }
  }

  /** Reads an int8 move step and applies it to the quantized v. */
  private step(v: number, what: string): number {
    const b = this.byte(what);
    const q = quantize(v) + (b << 24 >> 24); // sign-extend the int8
    if (q < 0 || q > MAX_UINT16) this.fail(`${what} moves off the quantized range`);
    return dequantize(q);
  }
}

/** The ID and field flags of an upsert record. */
interface UpsertHead {
  id: number;
  flags: number;
}

/** A strictly ascending, delta-coded ID list: the first as is, then differences. */
class IdCursor {
  private prev = 0;
  private started = false;

  constructor(
    readonly name: string,
    public left: number,
  ) {}

  /** Moves the cursor by the difference d read from r. */
  step(r: Reader, d: number): number {
    if (this.started && d === 0) r.fail(`duplicate ${this.name} ${this.prev}`);
    if (d > MAX_UINT32 - this.prev) r.fail(`${this.name} overflows uint32`);
    this.left--;
    this.prev += d;
    this.started = true;
    return this.prev;
  }
}

/** An ID list with its own reader, walked by the merge beside the upserts. */
class IdList {
  constructor(
    readonly r: Reader,
    readonly ids: IdCursor,
  ) {}

  next(): number | undefined {
    if (this.ids.left === 0) return undefined;
    return this.ids.step(this.r, this.r.uvarint(this.ids.name));
  }
}

/**
 * Walks base, the removals and the upserts in ID order. Every removal names
 * a base entity that is not also upserted; an update changes at least one
 * field; a new entity carries kind, position and hp.
 */
function merge(r: Reader, base: readonly Entity[], rm: IdList, ups: IdCursor): Entity[] {
  const out: Entity[] = [];
  const up: UpsertHead = { id: 0, flags: 0 };
  let haveUp = r.upsertHead(ups, up);
  let rid = rm.next();
  let i = 0;
  while (haveUp || i < base.length) {
    const b = base[i];
    const prevBase = base[i - 1];
    if (b !== undefined && prevBase !== undefined && b.id <= prevBase.id) r.fail(`base is not sorted by id at ${b.id}`);
    if (b !== undefined && (!haveUp || b.id < up.id)) {
      if (rid === b.id) rid = rm.next();
      else if (rid !== undefined && rid < b.id) r.fail(`removal of id ${rid} that is not in base`);
      else out.push(copy(b));
      i++;
      continue;
    }
    if (rid !== undefined && rid <= up.id) r.fail(`removal of id ${rid} that is not in base or is also upserted`);
    if (b !== undefined && b.id === up.id) {
      if (up.flags === 0) r.fail(`entity ${b.id}: update without fields`);
      i++;
      out.push(applied(r, copy(b), up.flags));
    } else {
      // kind, position and hp, and state and target when not 0 (else they are 0); never a move step.
      if ((up.flags & FIELDS_ALL) !== FIELDS_ALL || (up.flags & FIELD_MOVE) !== 0) {
        r.fail(`new entity ${up.id} without all fields (flags 0x${hex2(up.flags)})`);
      }
      out.push(applied(r, { id: up.id, kind: 0, x: 0, y: 0, hp: 0, state: 0, target: 0 }, up.flags));
    }
    haveUp = r.upsertHead(ups, up);
  }
  if (rid !== undefined) r.fail(`removal of id ${rid} that is not in base`);
  return out;
}

/**
 * A copy of e, so the caller's snapshots stay independent; written out
 * field by field, which keeps every entity one shape (and is several times
 * faster than a spread).
 */
function copy(e: Entity): Entity {
  return { id: e.id, kind: e.kind, x: e.x, y: e.y, hp: e.hp, state: e.state, target: e.target };
}

function applied(r: Reader, e: Entity, flags: number): Entity {
  r.applyFields(e, flags);
  return e;
}

function hex2(b: number): string {
  return b.toString(16).padStart(2, '0');
}
