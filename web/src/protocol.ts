// The wire protocol roomkeeper.v1 (docs/protocol.md) as TypeScript types:
// message kinds, payloads and error codes, mirroring internal/protocol.

/** The WebSocket subprotocol every connection offers. */
export const SUBPROTOCOL = 'roomkeeper.v1';

/** The envelope's "v". */
export const PROTOCOL_VERSION = 1;

/** Entity kinds; clients ignore kinds they do not know. */
export const EntityKind = { Player: 1, NPC: 2, Loot: 3, Door: 4, Portal: 5 } as const;

/** A player's or an NPC's combat state: the low two bits of Entity.state (combatState). */
export const CombatState = { Idle: 0, Fighting: 1, Dead: 2, Returning: 3 } as const;

/**
 * The effect bits of a player's or an NPC's Entity.state, above its combat
 * state: an ability's buff (Strengthened) or debuff (Weakened) is on it.
 */
export const EffectState = { Strengthened: 4, Weakened: 8 } as const;

/** A player's or an NPC's combat state (CombatState), without its effect bits. */
export function combatState(e: { state: number }): number {
  return e.state & 3;
}

/** The bits of a door's Entity.state: open, locked (the boss room's, until the key). */
export const DoorState = { Open: 1, Locked: 2 } as const;

/**
 * What a client sees of one entity. Positions are world units, hp 0..255.
 * state and target are 0 when the server leaves them out.
 */
export interface Entity {
  id: number;
  kind: number;
  x: number;
  y: number;
  hp: number;
  /**
   * A player's or an NPC's combat state in its low two bits (combatState:
   * idle, fighting, dead, returning) with its effect bits (EffectState:
   * strengthened, weakened), or a door's bits (DoorState: open, locked);
   * 0..255.
   */
  state: number;
  /** The entity a fighting player or NPC fights, 0 for none (uint32). */
  target: number;
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
  Session: 'session',
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
  IllegalSlot: 'illegal_slot',
  SkillGate: 'skill_gate',
  EquipLocked: 'equip_locked',
  ItemNotFound: 'item_not_found',
  InventoryFull: 'inventory_full',
  NotUsable: 'not_usable',
  NotEnoughMana: 'not_enough_mana',
  NotEnoughStamina: 'not_enough_stamina',
  Banned: 'banned',
  Kicked: 'kicked',
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
  BossPhase: 'boss_phase',
  ServerShutdown: 'server_shutdown',
  SystemMessage: 'system_message',
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

/** The equipment slots, in the server's order (internal/content: Slots). */
export const EQUIPMENT_SLOTS = ['head', 'chest', 'hands', 'legs', 'feet', 'weapon', 'offhand'] as const;

/** Where an item is worn: one of EQUIPMENT_SLOTS. */
export type Slot = (typeof EQUIPMENT_SLOTS)[number];

/** An item the player carries: in the bag (no slot), or worn in slot. */
export interface Item {
  id: string;
  kind: string;
  /** The slot it is worn in; left out for a bag item. */
  slot?: string;
}

/** A player's standing in one skill (melee, swords): level from 1, and the experience that made it. */
export interface Skill {
  name: string;
  level: number;
  xp: number;
}

/**
 * The inventory channel of snapshots: what the player carries and wears,
 * the weight of it all, and its skills.
 */
export interface Inventory {
  /** Bag items (no slot) and worn ones (their slot). */
  items: Item[];
  /** Everything carried and worn; above bag.encumberedAt the player walks slower. */
  weight: number;
  skills: Skill[];
  /** The player's mana and stamina and their most; absent when the map's pack has none. */
  resources?: Resources;
  /** The buffs on the player, each until a tick. */
  buffs?: Buff[];
  /** The abilities cooling down: each can be cast again at tick `ready`. */
  cooldowns?: Cooldown[];
}

/** A player's pools (docs/protocol.md, Abilities). */
export interface Resources {
  mana: number;
  manaMax: number;
  stamina: number;
  staminaMax: number;
}

/** A buff on the player: the ability's, what it adds, the tick it ends. */
export interface Buff {
  ability: string;
  attack?: number;
  defence?: number;
  until: number;
}

/** An ability that can be cast again at tick `ready`. */
export interface Cooldown {
  ability: string;
  ready: number;
}

/**
 * welcome.bag: how much a player carries, and the encumbrance rule: above
 * encumberedAt it walks at encumberedSpeed times its speed (when that is
 * above 0).
 */
export interface Bag {
  /** Bag slots: an item takes one, a stack of a stackable kind one. Worn items take none. */
  capacity: number;
  /** The most a player carries, worn items included: a pickup above it is refused (inventory_full). */
  maxWeight: number;
  encumberedAt: number;
  encumberedSpeed: number;
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
  /** Names the definitions of the map's content pack (the join API's GET .../content); servers before it leave it out. */
  contentHash?: string;
  /** What the player carries and wears; left out when nothing. */
  inventory?: Item[];
  /** Its carrying limits and the encumbrance rule. */
  bag: Bag;
  portals?: Portal[];
  transfer?: string;
  /** The party the player is in (its party token's id); absent: none. */
  party?: string;
}

export interface Ack {
  seq: number;
  ok: boolean;
  code?: string;
  message?: string;
  /**
   * On an ok critical action (pickup, drop, equip, unequip): the bag and
   * worn items as they now stand; left out when nothing is left.
   */
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
  /** A door event's `open` or `closed` (DoorDetail). */
  detail?: string;
  /** Who caused it: the killer of a death, who took the loot. */
  by?: number;
  /** The room a room_cleared names (the map's room id: StaticWorld.rooms[i].id). */
  room?: number;
  /** The phase a boss entered, from 1 (boss_phase). */
  phase?: number;
}

/** A door event's detail. */
export const DoorDetail = { Open: 'open', Closed: 'closed' } as const;

/** A door opened or closed: entity is the door, x and y where it stands. */
export interface DoorEvent extends GameEvent {
  type: typeof EventType.Door;
  entity: number;
  detail: (typeof DoorDetail)[keyof typeof DoorDetail];
}

/** A room's last guard died: room is its id, x and y its middle. Its doors open (a door event each). */
export interface RoomClearedEvent extends GameEvent {
  type: typeof EventType.RoomCleared;
  room: number;
}

/** A boss (entity, where it stands) entered phase 1, 2, ...: it hits harder and faster. */
export interface BossPhaseEvent extends GameEvent {
  type: typeof EventType.BossPhase;
  entity: number;
  phase: number;
}

/** Narrows an event by its type: isEvent(e, EventType.BossPhase) makes e a BossPhaseEvent. */
export function isEvent<T extends keyof TypedEvents>(e: GameEvent, type: T): e is TypedEvents[T] {
  return e.type === type;
}

/** The events with fields of their own, by type. */
export interface TypedEvents {
  door: DoorEvent;
  room_cleared: RoomClearedEvent;
  boss_phase: BossPhaseEvent;
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

/**
 * The `session` message: a fresh resume token, sent to an attached client
 * every third of its resume grace. The token in welcome expires with the
 * grace (30 s for players, 10 s for guests), so the newest one is what a
 * resume needs.
 */
export interface Session {
  resumeToken: string;
  /** When resumeToken expires, unix milliseconds. */
  expiresAt: number;
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
  /** Players' and NPCs' hit points, combat state and target; state and target are left out when 0. Doors are not in it. */
  combat?: { id: number; hp: number; state?: number; target?: number }[];
  /** Doors that are new or opened, closed or were unlocked; locked is left out when false. */
  doors?: { id: number; open: boolean; locked?: boolean }[];
  /** This player's inventory, whole: in every full snapshot, and in a delta when it changed. */
  inventory?: Inventory;
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
 * 'connection_failed', 'resume_failed' (it could neither resume its seat
 * nor join again), 'closed', 'transferred' (a resume answered with the
 * transfer of a seat that left through a portal meanwhile: transfer is
 * set, and the client follows it).
 */
export class RoomError extends Error {
  readonly code: string;
  readonly transfer?: Transfer;

  constructor(code: string, message: string, transfer?: Transfer) {
    super(message);
    this.name = 'RoomError';
    this.code = code;
    if (transfer !== undefined) this.transfer = transfer;
  }
}
