// The inventory channel (docs/protocol.md, "Items, equipment and skills"
// and "Snapshots"): read as strictly as the Go decoder reads it
// (protocol.UnmarshalStrict into protocol.Inventory), and the views of it
// a game draws: the bag, and what is worn in each slot.

import { EQUIPMENT_SLOTS, ProtocolError, type Buff, type Cooldown, type Inventory, type Item, type Skill, type Slot } from './protocol.js';

/** What a JSON value must be: an object of known fields, a list, or a scalar of a Go type. */
type Shape =
  | { type: 'object'; fields: Readonly<Record<string, Shape>> }
  | { type: 'array'; of: Shape }
  | { type: 'string' | 'bool' | 'int' | 'float32' }
  // Inside a value of the wrong type, already refused: only its syntax is checked.
  | { type: 'skip' };

const STRING: Shape = { type: 'string' };
const INT: Shape = { type: 'int' };
const FLOAT32: Shape = { type: 'float32' };
const SKIP: Shape = { type: 'skip' };

/** protocol.Inventory, field by field. */
const INVENTORY: Shape = {
  type: 'object',
  fields: {
    items: { type: 'array', of: { type: 'object', fields: { id: STRING, kind: STRING, slot: STRING } } },
    weight: FLOAT32,
    skills: { type: 'array', of: { type: 'object', fields: { name: STRING, level: INT, xp: INT } } },
    resources: { type: 'object', fields: { mana: INT, manaMax: INT, stamina: INT, staminaMax: INT } },
    buffs: { type: 'array', of: { type: 'object', fields: { ability: STRING, attack: INT, defence: INT, until: INT } } },
    cooldowns: { type: 'array', of: { type: 'object', fields: { ability: STRING, ready: INT } } },
  },
};

/** The nesting a channel may have; the inventory's own is 3, and anything deeper is refused anyway. */
const MAX_DEPTH = 64;

/** Bytes of the channel as the Go decoder takes them: invalid UTF-8 is replaced, a byte order mark is kept (and refused). */
const utf8 = new TextDecoder('utf-8', { ignoreBOM: true });

/**
 * The inventory channel from its UTF-8 JSON (a binary snapshot's last
 * part). Refused with a ProtocolError (code bad_request, the message
 * prefixed with what) as the Go decoder refuses it: not one JSON object,
 * a key it does not know (keys are case-sensitive) or twice in an object,
 * anything after the object, a value of the wrong type or a number that
 * does not fit its field. Fields left out (or null) are empty, 0.
 */
export function parseInventory(data: Uint8Array | string, what = 'inventory'): Inventory {
  const text = typeof data === 'string' ? data : utf8.decode(data);
  const p = new StrictParser(text, what);
  if (p.peek() !== '{') p.fail('not a JSON object');
  const value = p.value(INVENTORY, 0, '', '');
  p.space();
  if (!p.done) p.fail('data after the JSON object');
  p.throwTypeError();
  return inventoryOf(value as Fields);
}

/**
 * An inventory channel already parsed (a JSON snapshot's), checked and
 * normalized as parseInventory does. Duplicate keys cannot be seen once
 * parsed; everything else is refused alike.
 */
export function toInventory(value: unknown, what = 'inventory'): Inventory {
  if (!isRecord(value)) throw new ProtocolError('bad_request', `${what}: not a JSON object`);
  return parseInventory(JSON.stringify(value), what);
}

/** The items in the bag (those not worn), in the server's order. */
export function bagItems(items: readonly Item[]): Item[] {
  return items.filter((i) => !i.slot);
}

/** The worn items by slot. */
export function wornItems(items: readonly Item[]): Partial<Record<Slot, Item>> {
  const worn: Partial<Record<Slot, Item>> = {};
  for (const i of items) {
    if (isSlot(i.slot)) worn[i.slot] = i;
  }
  return worn;
}

/** Whether s names an equipment slot. */
export function isSlot(s: unknown): s is Slot {
  return typeof s === 'string' && (EQUIPMENT_SLOTS as readonly string[]).includes(s);
}

/** Whether two inventories hold the same items, weight and skills, in the same order. */
export function sameInventory(a: Inventory, b: Inventory): boolean {
  return (
    a.weight === b.weight &&
    a.items.length === b.items.length &&
    a.items.every((x, i) => sameItem(x, b.items[i])) &&
    a.skills.length === b.skills.length &&
    a.skills.every((x, i) => x.name === b.skills[i]?.name && x.level === b.skills[i]?.level && x.xp === b.skills[i]?.xp) &&
    JSON.stringify([a.resources, a.buffs ?? [], a.cooldowns ?? []]) === JSON.stringify([b.resources, b.buffs ?? [], b.cooldowns ?? []])
  );
}

function sameItem(a: Item, b: Item | undefined): boolean {
  return b !== undefined && a.id === b.id && a.kind === b.kind && (a.slot ?? '') === (b.slot ?? '');
}

/** A parsed object's fields (null ones left out): what the shape walk returns for an object. */
type Fields = Record<string, unknown>;

/** The Inventory of checked fields, with Go's zero values for those left out; an item's empty slot is no slot. */
function inventoryOf(f: Fields): Inventory {
  const items = ((f['items'] ?? []) as (Fields | undefined)[]).map((e): Item => {
    const it = e ?? {};
    const item: Item = { id: str(it['id']), kind: str(it['kind']) };
    const slot = str(it['slot']);
    if (slot !== '') item.slot = slot;
    return item;
  });
  const skills = ((f['skills'] ?? []) as (Fields | undefined)[]).map((e): Skill => {
    const s = e ?? {};
    return { name: str(s['name']), level: num(s['level']), xp: num(s['xp']) };
  });
  const inv: Inventory = { items, weight: num(f['weight']), skills };
  const r = f['resources'] as Fields | undefined;
  if (r) inv.resources = { mana: num(r['mana']), manaMax: num(r['manaMax']), stamina: num(r['stamina']), staminaMax: num(r['staminaMax']) };
  const buffs = ((f['buffs'] ?? []) as (Fields | undefined)[]).map((e): Buff => {
    const b = e ?? {};
    const buff: Buff = { ability: str(b['ability']), until: num(b['until']) };
    if (num(b['attack']) !== 0) buff.attack = num(b['attack']);
    if (num(b['defence']) !== 0) buff.defence = num(b['defence']);
    return buff;
  });
  if (buffs.length > 0) inv.buffs = buffs;
  const cooldowns = ((f['cooldowns'] ?? []) as (Fields | undefined)[]).map((e): Cooldown => {
    const c = e ?? {};
    return { ability: str(c['ability']), ready: num(c['ready']) };
  });
  if (cooldowns.length > 0) inv.cooldowns = cooldowns;
  return inv;
}

const str = (v: unknown): string => (typeof v === 'string' ? v : '');
const num = (v: unknown): number => (typeof v === 'number' ? v : 0);

function isRecord(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

/**
 * A JSON parser that checks keys against a shape as it goes, in document
 * order as the Go decoder does: a syntax error or a refused key stops it
 * at once; the first value of a wrong type is remembered and thrown once
 * the whole object read well (encoding/json's order). Each value has two
 * names: field, the path of a type error (items.kind), and where, the
 * path of a refused key (items[1]).
 */
class StrictParser {
  private pos = 0;
  private typeError: string | undefined;

  constructor(
    private readonly text: string,
    private readonly what: string,
  ) {}

  get done(): boolean {
    return this.pos >= this.text.length;
  }

  fail(message: string): never {
    throw new ProtocolError('bad_request', `${this.what}: ${message}`);
  }

  throwTypeError(): void {
    if (this.typeError !== undefined) this.fail(this.typeError);
  }

  /** JSON's white space only (not JavaScript's). */
  space(): void {
    for (;;) {
      const c = this.text[this.pos];
      if (c !== ' ' && c !== '\t' && c !== '\r' && c !== '\n') return;
      this.pos++;
    }
  }

  peek(): string | undefined {
    this.space();
    return this.text[this.pos];
  }

  private malformed(what: string): never {
    return this.fail(`malformed JSON: ${what} at offset ${this.pos}`);
  }

  /** A value of shape; undefined for null and for a value of the wrong type. */
  value(shape: Shape, depth: number, field: string, where: string): unknown {
    if (depth > MAX_DEPTH) this.malformed('nested too deeply');
    switch (this.peek()) {
      case '{':
        return this.object(shape, depth, field, where);
      case '[':
        return this.array(shape, depth, field, where);
      case '"':
        return this.scalar(shape, 'string', this.string(), field);
      case undefined:
        return this.malformed('end of input');
      default:
        return this.literal(shape, field);
    }
  }

  private object(shape: Shape, depth: number, field: string, where: string): Fields | undefined {
    this.pos++; // '{'
    // Any other shape's object is refused as a whole: its keys are not looked at.
    const fields = shape.type === 'object' ? shape.fields : undefined;
    if (fields === undefined) this.mistype(field, 'object', shape);
    const seen = new Set<string>();
    const out: Fields = {};
    if (this.peek() === '}') {
      this.pos++;
      return fields && out;
    }
    for (;;) {
      if (this.peek() !== '"') this.malformed('want a key');
      const key = this.string();
      if (this.peek() !== ':') this.malformed('want a colon');
      this.pos++;
      let child = SKIP;
      if (fields !== undefined) {
        if (!Object.hasOwn(fields, key)) this.refuseKey(where, unknownField(key, Object.keys(fields)));
        if (seen.has(key)) this.refuseKey(where, `duplicate key ${quote(key)}`);
        seen.add(key);
        child = fields[key] ?? SKIP;
      }
      const v = this.value(child, depth + 1, join(field, key), join(where, key));
      if (v !== undefined) out[key] = v;
      const sep = this.peek();
      this.pos++;
      if (sep === '}') return fields && out;
      if (sep !== ',') this.malformed('want a comma or }');
    }
  }

  private array(shape: Shape, depth: number, field: string, where: string): unknown[] | undefined {
    this.pos++; // '['
    const of = shape.type === 'array' ? shape.of : undefined;
    if (of === undefined) this.mistype(field, 'array', shape);
    const out: unknown[] = [];
    if (this.peek() === ']') {
      this.pos++;
      return of && out;
    }
    for (let i = 0; ; i++) {
      out.push(this.value(of ?? SKIP, depth + 1, field, `${where}[${i}]`));
      const sep = this.peek();
      this.pos++;
      if (sep === ']') return of && out;
      if (sep !== ',') this.malformed('want a comma or ]');
    }
  }

  /** A quoted string's value; pos on its opening quote. */
  private string(): string {
    const start = this.pos;
    for (let i = start + 1; i < this.text.length; i++) {
      const c = this.text.charCodeAt(i);
      if (c === 0x5c) {
        i++; // a backslash: skip what it escapes
      } else if (c < 0x20) {
        break;
      } else if (c === 0x22) {
        try {
          const s = JSON.parse(this.text.slice(start, i + 1)) as string;
          this.pos = i + 1;
          return s;
        } catch {
          return this.malformed('a bad escape in a string');
        }
      }
    }
    return this.malformed('an unterminated string');
  }

  /** A number, true, false or null (undefined). */
  private literal(shape: Shape, field: string): unknown {
    const rest = this.text.slice(this.pos, this.pos + 32);
    for (const [word, v] of [['null', null], ['true', true], ['false', false]] as const) {
      if (rest.startsWith(word)) {
        this.pos += word.length;
        return v === null ? undefined : this.scalar(shape, 'bool', v, field);
      }
    }
    NUMBER.lastIndex = this.pos;
    const m = NUMBER.exec(this.text);
    if (m === null) return this.malformed(`unexpected ${quote(rest.slice(0, 1))}`);
    this.pos += m[0].length;
    return this.number(shape, m[0], field);
  }

  private number(shape: Shape, literal: string, field: string): number | undefined {
    const v = Number(literal);
    switch (shape.type) {
      case 'int':
        // Go's int takes an integer literal; beyond 2^53 JavaScript could not hold it exactly.
        if (/^-?\d+$/.test(literal) && Number.isSafeInteger(v)) return v;
        return this.mistype(field, `number ${literal}`, shape);
      case 'float32':
        if (Math.abs(Math.fround(v)) !== Infinity) return v;
        return this.mistype(field, `number ${literal}`, shape);
      default:
        return this.mistype(field, 'number', shape);
    }
  }

  private scalar<T>(shape: Shape, kind: 'string' | 'bool', v: T, field: string): T | undefined {
    return shape.type === kind ? v : this.mistype(field, kind, shape);
  }

  /** Remembers the first value of the wrong type, as encoding/json words it; a skipped value is none. */
  private mistype(field: string, value: string, want: Shape): undefined {
    if (want.type !== 'skip') this.typeError ??= `${field ? `field ${field}: ` : ''}${value} does not fit ${typeName(want)}`;
    return undefined;
  }

  private refuseKey(where: string, message: string): never {
    return this.fail(where ? `${where}: ${message}` : message);
  }
}

/** A JSON number, matched where the parser stands. */
const NUMBER = /-?(?:0|[1-9]\d*)(?:\.\d+)?(?:[eE][+-]?\d+)?/y;

function unknownField(key: string, fields: readonly string[]): string {
  const other = fields.find((f) => f.toLowerCase() === key.toLowerCase());
  return `unknown field ${quote(key)}${other === undefined ? '' : `: keys are case-sensitive, the field is ${quote(other)}`}`;
}

function join(path: string, key: string): string {
  return path ? `${path}.${key}` : key;
}

/** A Go type as encoding/json names it in a type error. */
function typeName(s: Shape): string {
  switch (s.type) {
    case 'object':
      return 'an object';
    case 'array':
      return 'an array';
    case 'string':
      return 'a string';
    default:
      return s.type;
  }
}

function quote(s: string): string {
  return JSON.stringify(s);
}
