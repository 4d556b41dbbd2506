// The wire protocol roomkeeper.v1 (docs/protocol.md) as TypeScript types:
// message kinds, payloads and error codes, mirroring internal/protocol.

/** The WebSocket subprotocol every connection offers. */
export const SUBPROTOCOL = 'roomkeeper.v1';

/** The envelope's "v". */
export const PROTOCOL_VERSION = 1;

/** Entity kinds; clients ignore kinds they do not know. */
export const EntityKind = { Player: 1, NPC: 2, Loot: 3, Door: 4, Portal: 5 } as const;

/** What a client sees of one entity. Positions are world units, hp 0..255. */
export interface Entity {
  id: number;
  kind: number;
  x: number;
  y: number;
  hp: number;
}

/** One movement input: a direction of length <= 1, applied for one tick. */
export interface Input {
  seq: number;
  x: number;
  y: number;
}

/** Client message kinds. */
export const ClientKind = { Hello: 'hello', Command: 'command', Ping: 'ping' } as const;

/** Server message kinds. */
export const ServerKind = {
  Welcome: 'welcome',
  Ack: 'ack',
  Snapshot: 'snapshot',
  Event: 'event',
  Transfer: 'transfer',
  Error: 'error',
  Pong: 'pong',
} as const;

/** The stable error codes of docs/protocol.md; clients switch on them. */
export const ErrorCode = {
  BadRequest: 'bad_request',
  Unauthorized: 'unauthorized',
  TokenExpired: 'token_expired',
  TokenReplayed: 'token_replayed',
  WrongMap: 'wrong_map',
  NotOwner: 'not_owner',
  RoomFull: 'room_full',
  RateLimited: 'rate_limited',
  MapQuarantined: 'map_quarantined',
  PersistenceUnavailable: 'persistence_unavailable',
  InvalidAction: 'invalid_action',
  Cooldown: 'cooldown',
  OutOfRange: 'out_of_range',
  AlreadyTaken: 'already_taken',
  Internal: 'internal',
} as const;

/** Event types of `event` messages. */
export const EventType = {
  Join: 'join',
  Leave: 'leave',
  Death: 'death',
  LootRemoved: 'loot_removed',
  Door: 'door',
  RoomCleared: 'room_cleared',
  ServerShutdown: 'server_shutdown',
  Transferred: 'transferred',
} as const;

/** Every JSON message, in both directions. */
export interface Envelope {
  v: number;
  kind: string;
  seq?: number;
  feature?: string;
  action?: string;
  ackTick?: number;
  payload?: unknown;
}

/** The first client message: a ticket for a new seat or a token to resume one. */
export interface Hello {
  ticket?: string;
  resume?: string;
  lastSeq?: number;
  /** On a resume: the id of the last event received; the map sends the ones after it. */
  lastEvent?: number;
  codec?: string;
}

export interface Item {
  id: string;
  kind: string;
}

export interface Portal {
  entity: number;
  to: string;
  x: number;
  y: number;
  radius: number;
}

export interface Welcome {
  playerId: number;
  room: string;
  map: string;
  instance: string;
  tick: number;
  tickRate: number;
  snapshotRate: number;
  playerSpeed: number;
  resumeToken: string;
  resumed?: boolean;
  lastSeq?: number;
  codec: string;
  mapConfig: unknown;
  mapHash: string;
  inventory?: Item[];
  portals?: Portal[];
  transfer?: string;
}

export interface Ack {
  seq: number;
  ok: boolean;
  code?: string;
  message?: string;
  inventory?: Item[];
}

export interface GameEvent {
  /** The map's number for it (1, 2, ...): ids in your view have gaps, never repeat. None on server_shutdown. */
  id?: number;
  type: string;
  tick: number;
  entity?: number;
  x?: number;
  y?: number;
  detail?: string;
  /** Who caused it: the killer of a death. */
  by?: number;
}

export interface Transfer {
  endpoint: string;
  ticket: string;
  map: string;
  instance: string;
  id: string;
  returnTicket: string;
  /** When ticket expires, unix milliseconds. */
  expiresAt: number;
}

/** The `error` message: a problem that is not the answer to one command. */
export interface ServerErrorPayload {
  code: string;
  message: string;
}

export interface Pong {
  clientTime: number;
  serverTime: number;
}

/** A JSON snapshot (codec json). */
export interface SnapshotMessage {
  tick: number;
  ackSeq: number;
  mode: 'full' | 'delta';
  baseTick?: number;
  presence?: { add?: { id: number; kind: number }[]; remove?: number[] };
  movement?: { id: number; x: number; y: number }[];
  combat?: { id: number; hp: number }[];
}

/**
 * A malformed frame, named like the Go decoder names it
 * ("binary snapshot: truncated at y"). code is 'bad_request'.
 */
export class ProtocolError extends Error {
  readonly code: string;

  constructor(code: string, message: string) {
    super(message);
    this.name = 'ProtocolError';
    this.code = code;
  }
}

/**
 * Why a RoomClient could not connect or stopped: a server code
 * (docs/protocol.md) or one of the client's own: 'map_mismatch',
 * 'connection_failed', 'resume_failed', 'closed', 'server_shutdown'.
 */
export class RoomError extends Error {
  readonly code: string;

  constructor(code: string, message: string) {
    super(message);
    this.name = 'RoomError';
    this.code = code;
  }
}
