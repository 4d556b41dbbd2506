// The Go side's test vectors (internal/protocol/testdata,
// internal/sim/testdata): the Go codec's and sim.Move's answers, which the
// SDK must reproduce exactly.

import { readFileSync } from 'node:fs';
import type { Entity, Inventory } from '../../src/index.js';

/** An entity as the vectors hold it: Go's JSON, which leaves state and target out when 0. */
export type VectorEntity = Omit<Entity, 'state' | 'target'> & { state?: number; target?: number };

/** The entity the SDK decodes for a vector's: state and target always there, 0 when left out. */
export function entity(e: VectorEntity): Entity {
  return { id: e.id, kind: e.kind, x: e.x, y: e.y, hp: e.hp, state: e.state ?? 0, target: e.target ?? 0 };
}

/** entity() over a list; null (Go's empty list) is []. */
export function entities(list: readonly VectorEntity[] | null): Entity[] {
  return (list ?? []).map(entity);
}

export interface WireVectors {
  comment: string;
  binaryVersion: number;
  positionScale: number;
  quantize: { v: number; q: number }[];
  quantizeDirection: { v: number; q: number }[];
  snapshots: {
    name: string;
    base: VectorEntity[] | null;
    hex: string;
    header: { mode: 'full' | 'delta'; tick: number; baseTick: number; ackSeq: number; inventory?: Inventory };
    entities: VectorEntity[] | null;
  }[];
  refusals: { name: string; base: VectorEntity[] | null; hex: string; message: string }[];
  inputs: { name: string; ackTick: number; inputs: { seq: number; x: number; y: number }[]; hex: string }[];
}

export interface MoveVectors {
  comment: string;
  maps: {
    config: Record<string, unknown>;
    hash: string;
    tickRate: number;
    playerSpeed: number;
    walks: { x: number; y: number; inputs: [number, number][]; path: [number, number][] }[];
  }[];
}

function readJSON<T>(relative: string): T {
  return JSON.parse(readFileSync(new URL(relative, import.meta.url), 'utf8')) as T;
}

export const wireVectors = (): WireVectors => readJSON('../../../internal/protocol/testdata/wire-vectors.json');
export const moveVectors = (): MoveVectors => readJSON('../../../internal/sim/testdata/move-vectors.json');

export function fromHex(hex: string): Uint8Array {
  return Uint8Array.from(hex.match(/../g) ?? [], (b) => parseInt(b, 16));
}

export function toHex(bytes: Uint8Array): string {
  return Array.from(bytes, (b) => b.toString(16).padStart(2, '0')).join('');
}
