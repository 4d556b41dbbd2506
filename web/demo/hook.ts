// window.__roomkeeper: what the browser tests (web/e2e/play.mjs) read and
// drive. state() is a plain JSON-safe summary, so page.evaluate can return
// it as is.

import type { Ack, Item, RoomClient, Slot } from '../src/index.js';
import type { Session } from './session.js';

export interface Summary {
  pageState: string;
  connected: boolean;
  playerId: number;
  room: string;
  map: string;
  instance: string;
  /** The party the map's welcome says the player is in; '' in none. */
  party: string;
  /** The snapshot codec the map welcomed the page with. */
  codec: string;
  tick: number;
  self: { x: number; y: number; hp: number } | null;
  predicted: { x: number; y: number } | null;
  /** state: combat state, or a door's bits (1 open, 2 locked); target: whom a fighter fights. */
  entities: { id: number; kind: number; x: number; y: number; hp: number; state: number; target: number }[];
  portals: { entity: number; to: string; x: number; y: number; radius: number }[];
  worldHash: string;
  mapHash: string;
  resumes: number;
  transfers: number;
  snapshots: number;
  rttMs: number | null;
  bytesPerSecond: number;
  /** Bag items, and worn ones with their slot. */
  inventory: { id: string; kind: string; slot?: string }[];
  /** The weight of it all, and the fraction of full speed the player walks at with it. */
  weight: number;
  speedFactor: number;
  skills: { name: string; level: number; xp: number }[];
  /** Waypoints left on the click-to-move path. */
  path: number;
  /** The server's last answer to a command (pickup, drop, portal): did it arrive, what did it say. */
  lastAck: { seq: number; ok: boolean; code?: string; inventory?: { id: string; kind: string; slot?: string }[] } | null;
  /** The HUD's event log (rooms cleared, boss phases, doors, deaths), oldest first. */
  events: string[];
  errors: string[];
}

export interface Hook {
  readonly client: RoomClient | undefined;
  state(): Summary;
  /** Click-to-move to (x, y): the number of waypoints planned, 0 when there is no way. */
  walkTo(x: number, y: number): number;
  /** Enters the nearest portal: the server's ack, as plain data. */
  enterNearestPortal(): Promise<{ ok: boolean; code?: string; message?: string }>;
  /** Opens or closes the nearest door within reach (the G key): the server's ack, as plain data. */
  toggleNearestDoor(): Promise<{ ok: boolean; code?: string; message?: string }>;
  /** Wears a bag item in slot, as its "wear" button does: the server's ack, as plain data. */
  equip(item: string, slot: Slot): Promise<{ ok: boolean; code?: string; message?: string }>;
  /** Takes off what slot holds, as its "take off" button does. */
  unequip(slot: Slot): Promise<{ ok: boolean; code?: string; message?: string }>;
}

declare global {
  interface Window { __roomkeeper?: Hook }
}

/** Installs the hook; session() is the current session, if any, and errors() the page's own (join failures). */
export function installHook(session: () => Session | undefined, errors: () => readonly string[]): void {
  window.__roomkeeper = {
    get client() { return session()?.client; },
    state: () => summarize(session(), errors()),
    walkTo: (x, y) => session()?.walkTo(x, y) ?? 0,
    enterNearestPortal: () => plain(session(), (s) => s.enterNearestPortal()),
    toggleNearestDoor: () => plain(session(), (s) => s.toggleNearestDoor()),
    equip: (item, slot) => plain(session(), (s) => s.equip(item, slot)),
    unequip: (slot) => plain(session(), (s) => s.unequip(slot)),
  };
}

/** What run answers on the session, as plain data; a refusal when there is none. */
async function plain(session: Session | undefined, run: (s: Session) => Promise<Ack>): Promise<{ ok: boolean; code?: string; message?: string }> {
  if (!session) return { ok: false, code: 'closed', message: 'not playing' };
  const ack = await run(session);
  return { ok: ack.ok, code: ack.code, message: ack.message };
}

function summarize(session: Session | undefined, pageErrors: readonly string[]): Summary {
  const pageState = document.body.dataset.state ?? '';
  const s = session?.client.state;
  const errors = [...pageErrors, ...(session?.errors ?? [])];
  if (!s) {
    return {
      pageState, connected: false, playerId: 0, room: '', map: '', instance: '', party: '', codec: '', tick: 0, self: null, predicted: null,
      entities: [], portals: [], worldHash: '', mapHash: '', resumes: 0, transfers: 0, snapshots: 0, rttMs: null,
      bytesPerSecond: 0, inventory: [], weight: 0, speedFactor: 1, skills: [], path: 0, lastAck: null, events: [], errors,
    };
  }
  return {
    pageState,
    connected: s.connected,
    playerId: s.playerId,
    room: s.room,
    map: s.map,
    instance: s.instance,
    party: s.party,
    codec: s.codec,
    tick: s.tick,
    self: s.self ? { x: s.self.x, y: s.self.y, hp: s.self.hp } : null,
    predicted: { x: s.predicted.x, y: s.predicted.y },
    entities: [...s.entities.values()].map((e) => ({ id: e.id, kind: e.kind, x: e.x, y: e.y, hp: e.hp, state: e.state, target: e.target })),
    portals: s.portals.map((p) => ({ entity: p.entity, to: p.to, x: p.x, y: p.y, radius: p.radius })),
    worldHash: s.world?.hash ?? '',
    mapHash: s.mapHash,
    resumes: s.resumes,
    transfers: s.transfers,
    snapshots: s.snapshots,
    rttMs: s.rttMs ?? null,
    bytesPerSecond: s.bytesPerSecond,
    inventory: s.inventory.map(itemSummary),
    weight: s.weight,
    speedFactor: s.speedFactor,
    skills: s.skills.map((k) => ({ name: k.name, level: k.level, xp: k.xp })),
    path: session?.path.length ?? 0,
    lastAck: session?.lastAck ? ackSummary(session.lastAck) : null,
    events: session?.events.map((l) => l.text) ?? [],
    errors,
  };
}

function ackSummary(a: Ack): NonNullable<Summary['lastAck']> {
  const out: NonNullable<Summary['lastAck']> = { seq: a.seq, ok: a.ok };
  if (a.code !== undefined) out.code = a.code;
  if (a.inventory !== undefined) out.inventory = a.inventory.map(itemSummary);
  return out;
}

function itemSummary(i: Item): Summary['inventory'][number] {
  return i.slot ? { id: i.id, kind: i.kind, slot: i.slot } : { id: i.id, kind: i.kind };
}
