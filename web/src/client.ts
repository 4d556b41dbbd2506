// RoomClient: one player's connection to a room, through the join API to a
// map's room server. It keeps the view a game needs (the entities in
// sight, this player predicted, the others interpolated), follows portal
// transfers to other maps and comes back by itself after a dropped
// connection or a map shutdown: it resumes its seat where the map runs
// now, or joins again when the seat is gone (docs/protocol.md).

import { MAX_BINARY_INPUTS, decodeBinarySnapshot, encodeBinaryInput, peekBinaryHeader, quantizeDirection } from './codec.js';
import { OPEN, detach, dial, parseEnvelope, type LinkHandlers, type WebSocketConstructor } from './dial.js';
import { Emitter } from './emitter.js';
import { Interpolator } from './interpolate.js';
import { sameInventory, toInventory } from './inventory.js';
import { JoinAPI, JoinAPIError, type JoinResponse } from './joinapi.js';
import { RateMeter } from './meter.js';
import { encumberedStepDistance, speedFactor } from './move.js';
import { Predictor } from './predict.js';
import {
  EventType,
  PROTOCOL_VERSION,
  ProtocolError,
  RoomError,
  type Ack,
  type Bag,
  type Entity,
  type GameEvent,
  type Hello,
  type Input,
  type Buff,
  type Cooldown,
  type Inventory,
  type Item,
  type Pong,
  type Portal,
  type Resources,
  type ServerErrorPayload,
  type Session,
  type Skill,
  type Slot,
  type SnapshotMessage,
  type Transfer,
  type Welcome,
} from './protocol.js';
import { SnapshotHistory, applyJSONSnapshot } from './snapshot.js';
import type { Mapgen, StaticWorld } from './world.js';

export interface ClientOptions {
  /** The join API's base URL; '' is the page's own origin. */
  joinAPI: string;
  namespace: string;
  room: string;
  authKey?: string;
  characterId?: string;
  map?: string;
  /** One shard of the map, by its instance name (a friend's welcome.instance). */
  instance?: string;
  /** Joins the party of this party token (JoinAPI.createParty, invite); rejoins keep it. */
  partyToken?: string;
  /** Snapshot codec; 'binary' (the default) also sends movement as binary input frames. */
  codec?: 'binary' | 'json';
  /** Set: build each map from welcome.mapConfig, refuse a hash mismatch, predict against colliders. */
  mapgen?: Mapgen;
  /** Default globalThis.WebSocket; node passes `ws`. */
  WebSocket?: WebSocketConstructor;
  /** How far behind other entities are drawn; 100 ms. */
  interpolationDelayMs?: number;
  /**
   * Coming back after a dropped connection or a map shutdown: at most
   * attempts tries (60), try n waiting a random time up to
   * min(maxDelayMs, baseDelayMs * 2^n) (200 ms, 2000 ms). locate (true):
   * from the third try on, ask the join API where the map runs now
   * (JoinAPI.resume). rejoin (true): when the seat cannot be resumed, join
   * again through the join API as connect did; also after a transfer whose
   * destination and way back both failed (false: the client stops).
   */
  resume?: { attempts?: number; baseDelayMs?: number; maxDelayMs?: number; locate?: boolean; rejoin?: boolean };
  /** Pings for state.rttMs every this many ms (3000); 0: only ping() pings. */
  pingIntervalMs?: number;
  /** How long to wait for a welcome (10000 ms). */
  handshakeTimeoutMs?: number;
  /** fetch for the join API (default globalThis.fetch). */
  fetch?: typeof fetch;
}

export interface ClientState {
  connected: boolean;
  playerId: number;
  room: string;
  map: string;
  instance: string;
  /** The party the player is in, as the map's welcome says; '' in none. */
  party: string;
  tick: number;
  ackSeq: number;
  tickRate: number;
  snapshotRate: number;
  playerSpeed: number;
  codec: string;
  /** The newest snapshot's entities. */
  entities: ReadonlyMap<number, Entity>;
  /** This player as the server last said. */
  self?: Entity;
  /** self plus the inputs the server has not applied. */
  predicted: { x: number; y: number };
  /**
   * What the player carries: bag items (no slot) and worn ones (their
   * slot), from the welcome, the acks of critical actions and the
   * snapshots' inventory channel, whichever came last. bagItems and
   * wornItems split it.
   */
  inventory: Item[];
  /** The weight of everything carried and worn, from the inventory channel (0 before the first). */
  weight: number;
  /** The player's skills, from the inventory channel ([] before the first). */
  skills: Skill[];
  /** Its mana and stamina, from the inventory channel (absent when the pack has none). */
  resources?: Resources;
  /** The buffs on it and its abilities cooling down, from the inventory channel. */
  buffs: Buff[];
  cooldowns: Cooldown[];
  /** The welcome's bag: capacity, maxWeight and the encumbrance rule. */
  bag: Bag;
  /** The fraction of full speed the player walks at with its weight (speedFactor): what prediction uses. */
  speedFactor: number;
  portals: Portal[];
  world?: StaticWorld;
  mapHash: string;
  /** Names the map's content pack: contentPack(await joinAPI.content(...), contentHash); '' from a server before it. */
  contentHash: string;
  rttMs?: number;
  /** Downstream bytes per second over the last two seconds. */
  bytesPerSecond: number;
  snapshots: number;
  /** Downstream bytes since connecting. */
  bytes: number;
  /** Times the client took its seat back after a drop or a shutdown. */
  resumes: number;
  /** Times the seat could not be resumed and the client joined again (a new seat). */
  rejoins: number;
  /** Transfers that arrived at their destination. */
  transfers: number;
  /** Transfers that came back to the source (the destination refused or was unreachable). */
  returns: number;
}

export interface ClientEvents {
  welcome: Welcome;
  snapshot: { tick: number };
  event: GameEvent;
  ack: Ack;
  /** The inventory, its weight or the skills changed (state.inventory, weight and skills hold the same). */
  inventory: Inventory;
  serverError: { code: string; message: string };
  transfer: Transfer;
  reconnecting: { attempt: number; delayMs: number };
  /** The seat was taken back (a welcome event does not follow). */
  resumed: Welcome;
  /** The seat was gone and the client joined again: a new seat, afresh as after a transfer (a welcome event follows). */
  rejoined: Welcome;
  closed: { code: number; reason: string; error?: RoomError };
}

/** Makes a welcomed connection the client's (connectTo). */
type Adopt = (socket: WebSocket, welcome: Welcome, world: StaticWorld | undefined) => void;

/** A command waiting for its ack. */
interface PendingCommand {
  seq: number;
  feature: string;
  action: string;
  payload: unknown;
  resolve(ack: Ack): void;
  reject(err: RoomError): void;
  /**
   * Sent again after a resume although the server had handled it: its
   * answer is the first one once more, older than the resumed welcome.
   */
  replayed?: boolean;
}

const DEFAULTS = {
  interpolationDelayMs: 100,
  attempts: 60,
  baseDelayMs: 200,
  maxDelayMs: 2000,
  pingIntervalMs: 3000,
  handshakeTimeoutMs: 10_000,
};

/** Close codes of the client's own (4000-4999 are the application's). */
const CLOSE_DROPPED = 4000;
const CLOSE_FAULT = 4002;
/** A close reason has at most 123 bytes. */
const MAX_CLOSE_REASON = 120;

/** A close with this code is a refusal (unauthorized, idle, rate limited): resuming cannot help. */
const CLOSE_POLICY = 1008;
/** The server's close of a session an operator ended (kicked or banned): final, like a refusal. */
const CLOSE_KICKED = 4001;

/**
 * Closes after which the client comes back: its own drop, the server
 * going away (1001: shutting down), the network failing (1006), and the
 * server failing or saying it will be back (1011 internal error, 1012
 * restart, 1013 try again later, 1014 bad gateway). Not a refusal (1008),
 * a normal close or a protocol error.
 */
const RECONNECT_CLOSES = new Set([CLOSE_DROPPED, 1001, 1006, 1011, 1012, 1013, 1014]);

/** The tries made on the endpoint played on before asking the join API where the map runs now. */
const SAME_ENDPOINT_TRIES = 2;

/**
 * How long a transfer's destination is tried while its refusals are of the
 * moment, tries 200 ms · 2^n (at most 2 s) apart. A new pod behind a Gateway
 * is the slowest such destination: the gateway routes to it a few seconds
 * after its Service lists it Ready. CROSS_RESERVE_MS of the tickets' life
 * (10 s by default) is kept for the way back.
 */
const CROSS_PATIENCE_MS = 6_000;
const CROSS_RESERVE_MS = 3_000;

/**
 * Commands the server de-duplicates by seq (its critical actions): sent
 * again after a resume, even when the server had handled them, they
 * return their first ack.
 */
const DEDUPLICATED = new Set(['loot.pickup', 'inventory.drop', 'inventory.equip', 'inventory.unequip', 'inventory.use']);

/**
 * Commands whose ok ack carries the whole inventory as it now stands; the
 * server leaves an empty one out, so an ok ack without it means empty.
 */
const INVENTORY_ANSWERS = DEDUPLICATED;

/** The bag of a welcome without one: nothing slows the player. */
const NO_BAG: Bag = { capacity: 0, maxWeight: 0, encumberedAt: 0, encumberedSpeed: 0 };

/** Refusals of a resume that mean the seat cannot be resumed any more: joining again is the way back. */
const SEAT_GONE = new Set(['token_expired', 'token_replayed', 'unauthorized', 'wrong_map']);

/**
 * Failures of a try that another try may get past: the connection failed
 * (also an HTTP 429 or 503 instead of the upgrade), or the server refused
 * the moment, not the player (already_taken: a transfer, or a crashed
 * pod's lease, holds the character a little longer).
 */
const TRANSIENT = new Set(['connection_failed', 'persistence_unavailable', 'room_full', 'rate_limited', 'map_quarantined', 'internal', 'already_taken']);

const now = (): number => globalThis.performance?.now() ?? Date.now();

/** ClientState with bytesPerSecond read from the meter when asked. */
class LiveState implements ClientState {
  connected = false;
  playerId = 0;
  room = '';
  map = '';
  instance = '';
  party = '';
  tick = 0;
  ackSeq = 0;
  tickRate = 0;
  snapshotRate = 0;
  playerSpeed = 0;
  codec = '';
  entities: ReadonlyMap<number, Entity> = new Map();
  self?: Entity;
  predicted = { x: 0, y: 0 };
  inventory: Item[] = [];
  weight = 0;
  skills: Skill[] = [];
  resources?: Resources;
  buffs: Buff[] = [];
  cooldowns: Cooldown[] = [];
  bag: Bag = NO_BAG;
  speedFactor = 1;
  portals: Portal[] = [];
  world?: StaticWorld;
  mapHash = '';
  contentHash = '';
  rttMs?: number;
  snapshots = 0;
  bytes = 0;
  resumes = 0;
  rejoins = 0;
  transfers = 0;
  returns = 0;

  constructor(private readonly meter: RateMeter) {}

  get bytesPerSecond(): number {
    return this.meter.rate(now());
  }
}

export class RoomClient {
  readonly state: ClientState;

  private readonly events = new Emitter<ClientEvents>();
  private readonly meter = new RateMeter(2000);
  private readonly codec: 'binary' | 'json';
  private readonly WebSocket: WebSocketConstructor;
  private readonly joinAPI: JoinAPI;
  /** close() aborts the dials and waits in progress. */
  private readonly lifetime = new AbortController();
  private readonly history = new SnapshotHistory();
  private readonly interpolator: Interpolator;
  private readonly pending = new Map<number, PendingCommand>();

  /** The welcomed connection played on; undefined between connections. */
  private socket?: WebSocket;
  private endpoint = '';
  /** The newest resume token, from the welcome or a session message. */
  private resumeToken = '';
  private predictor = new Predictor(undefined, 0);
  private inputSeq = 0;
  private commandSeq = 0;
  /** The id of the newest event received on this map: a resume asks for those after it. */
  private lastEvent = 0;
  /** The newest snapshot applied, acknowledged on every message. */
  private ackTick = 0;
  /** A transfer announced on the current connection, followed when it closes. */
  private transfer?: Transfer;
  private shuttingDown = false;
  private lastServerError?: ServerErrorPayload;
  private pingTimer?: ReturnType<typeof setInterval>;
  private ended = false;

  private constructor(private readonly opts: ClientOptions) {
    this.codec = opts.codec ?? 'binary';
    const ctor = opts.WebSocket ?? (globalThis as { WebSocket?: WebSocketConstructor }).WebSocket;
    if (ctor === undefined) throw new RoomError('connection_failed', 'no WebSocket implementation: pass options.WebSocket');
    this.WebSocket = ctor;
    this.joinAPI = new JoinAPI(opts.joinAPI, opts.fetch);
    this.interpolator = new Interpolator(opts.interpolationDelayMs ?? DEFAULTS.interpolationDelayMs);
    this.state = new LiveState(this.meter);
  }

  /**
   * Joins through the join API and connects to the map it names. Resolves
   * once the map welcomed the player (and, with mapgen, its map was
   * reproduced); rejects with JoinAPIError or RoomError.
   */
  static async connect(opts: ClientOptions): Promise<RoomClient> {
    const client = new RoomClient(opts); // first: a missing WebSocket must not cost a ticket
    const join = await client.join();
    await client.connectTo(join.endpoint, { ticket: join.ticket }, (socket, welcome, world) => {
      client.adoptFresh(socket, welcome, world, join.endpoint);
    });
    return client;
  }

  /** Calls fn on every event of type; returns the unsubscribe function. */
  on<K extends keyof ClientEvents>(type: K, fn: (e: ClientEvents[K]) => void): () => void {
    return this.events.on(type, fn);
  }

  /**
   * Moves steps ticks along (dx, dy), a direction of length at most 1
   * (a longer one is scaled to 1). The inputs are predicted at once and sent
   * as binary input frames with the binary codec (their components
   * quantized as the frame carries them), else as a movement.input command.
   * Returns the last input's seq; while not connected nothing is sent and
   * the last seq sent is returned.
   */
  move(dx: number, dy: number, steps = 1): number {
    if (!Number.isFinite(dx) || !Number.isFinite(dy)) throw new RangeError(`direction (${dx}, ${dy}) is not finite`);
    if (!Number.isInteger(steps) || steps < 1) throw new RangeError(`steps ${steps}: want a positive integer`);
    const socket = this.openSocket();
    if (socket === undefined) return this.inputSeq;
    const length = Math.hypot(dx, dy);
    if (length > 1) {
      dx /= length;
      dy /= length;
    }
    const binary = this.state.codec === 'binary';
    const x = binary ? quantizeDirection(dx) : Math.fround(dx);
    const y = binary ? quantizeDirection(dy) : Math.fround(dy);
    const inputs: Input[] = [];
    for (let i = 0; i < steps; i++) inputs.push({ seq: ++this.inputSeq, x, y });
    for (const input of inputs) this.predictor.record(input);
    this.state.predicted = { x: this.predictor.x, y: this.predictor.y };
    if (binary) {
      for (let i = 0; i < inputs.length; i += MAX_BINARY_INPUTS) {
        socket.send(encodeBinaryInput(this.ackTick, inputs.slice(i, i + MAX_BINARY_INPUTS)));
      }
    } else {
      this.send('command', { seq: ++this.commandSeq, feature: 'movement', action: 'input' }, { inputs });
    }
    return this.inputSeq;
  }

  /**
   * Sends a command; resolves with its ack (ok or not). Commands sent while
   * the connection is down go out when it is back. Rejects with RoomError
   * when the client closes (or leaves the map) before the answer.
   */
  command(feature: string, action: string, payload: unknown): Promise<Ack> {
    if (this.ended) return Promise.reject(new RoomError('closed', 'the client is closed'));
    const seq = ++this.commandSeq;
    return new Promise<Ack>((resolve, reject) => {
      const cmd: PendingCommand = { seq, feature, action, payload, resolve, reject };
      this.pending.set(seq, cmd);
      this.sendCommand(cmd);
    });
  }

  /** Takes the loot entity (kind 3) within 24 units. */
  pickup(entity: number): Promise<Ack> {
    return this.command('loot', 'pickup', { entity });
  }

  /**
   * Attacks an NPC: ok means the hit lands on the next tick (its hp drops
   * in the snapshots; a kill comes as a death event). Refusals: cooldown,
   * out_of_range, invalid_action.
   */
  attack(target: number): Promise<Ack> {
    return this.command('combat', 'attack', { target });
  }

  /**
   * Casts an ability of the map's pack (its definitions' abilities): an
   * enemy one at target, a self one on the player. The server checks the
   * cost, the cooldown, the range and the sight; state.resources, buffs
   * and cooldowns follow. Refusals: not_enough_mana, not_enough_stamina,
   * cooldown, out_of_range, invalid_action.
   */
  cast(ability: string, target?: number): Promise<Ack> {
    return this.command('combat', 'cast', target === undefined ? { ability } : { ability, target });
  }

  /**
   * Opens or closes a door entity (kind 4) within 24 units (DOOR_REACH, to
   * its nearest edge): ok is followed by a door event and the door's new
   * state in the snapshots. Refusals: out_of_range, invalid_action (not a
   * door, locked without the key, closing it on someone in the doorway,
   * dead).
   */
  toggleDoor(door: number): Promise<Ack> {
    return this.command('door', 'toggle', { door });
  }

  /** Lays a carried item down where the player stands (a worn one is refused: unequip it first). */
  drop(item: string): Promise<Ack> {
    return this.command('inventory', 'drop', { item });
  }

  /**
   * Wears a bag item (its id) in slot; what the slot held goes into the
   * bag. A critical action: ok comes after the server's database commit,
   * with the inventory as it now stands (state.inventory follows). Refusals:
   * item_not_found (not in your bag), illegal_slot (not worn there),
   * skill_gate, equip_locked (the slot changed a moment ago, you are
   * fighting, or another change of it is being saved), invalid_action
   * (worn already, dead, on the way through a portal).
   */
  equip(item: string, slot: Slot): Promise<Ack> {
    return this.command('inventory', 'equip', { item, slot });
  }

  /**
   * Takes what slot holds back into the bag; a critical action like equip.
   * Refusals: item_not_found (nothing worn there), illegal_slot,
   * equip_locked, inventory_full (no bag slot for it).
   */
  unequip(slot: Slot): Promise<Ack> {
    return this.command('inventory', 'unequip', { slot });
  }

  /**
   * Uses up a carried consumable (its definition's `use`: a potion heals).
   * A critical action like equip: ok comes once the item is gone from the
   * database, with the inventory as it now stands; sent twice, it is used
   * once. Refusals: not_usable (its kind has no use), not_owner (not
   * carried), invalid_action (worn, dead), already_taken (being used).
   */
  use(item: string): Promise<Ack> {
    return this.command('inventory', 'use', { item });
  }

  /** Walks through a portal (an entity of welcome.portals); a transfer follows the ack. */
  enterPortal(portal: number): Promise<Ack> {
    return this.command('portal', 'enter', { portal });
  }

  /** Measures a round trip; the answer lands in state.rttMs. */
  ping(): void {
    this.send('ping', {}, { clientTime: now() });
  }

  /** The entities to draw at nowMs: others interpolated, this player at its predicted position. */
  interpolated(nowMs = now()): Entity[] {
    const self = this.state.self;
    const out = this.interpolator.sample(nowMs).filter((e) => e.id !== this.state.playerId);
    if (self !== undefined) out.push({ ...self, ...this.state.predicted });
    return out.sort((a, b) => a.id - b.id);
  }

  /** Closes the connection as a network drop would: the client comes back as after one. */
  dropConnection(): void {
    this.socket?.close(CLOSE_DROPPED, 'dropped by the client');
  }

  /** Closes for good; the server keeps the seat for its resume grace. */
  close(): void {
    this.finish(1000, 'closed by the client');
  }

  // ---- connections ----

  /** Asks the join API for a ticket, as connect does and a rejoin again. */
  private join(): Promise<JoinResponse> {
    const o = this.opts;
    return this.joinAPI.join(o.namespace, o.room, { authKey: o.authKey, characterId: o.characterId, map: o.map, instance: o.instance, partyToken: o.partyToken });
  }

  /**
   * Dials endpoint with hello (and the codec) and, on the welcome, builds and
   * checks the map and lets adopt make the connection the client's.
   */
  private connectTo(
    endpoint: string,
    hello: Hello,
    adopt: Adopt,
  ): Promise<Welcome> {
    return dial({
      WebSocket: this.WebSocket,
      endpoint,
      hello: { ...hello, codec: this.codec },
      timeoutMs: this.opts.handshakeTimeoutMs ?? DEFAULTS.handshakeTimeoutMs,
      signal: this.lifetime.signal,
      accept: (welcome, socket) => {
        adopt(socket, welcome, this.worldFor(welcome));
        return this.handlers(socket);
      },
    });
  }

  /**
   * The static world of a welcome: built from its mapConfig and refused
   * unless its hash is the server's, since predicting on another map
   * would desynchronise. The current world is kept when the hash is its.
   */
  private worldFor(welcome: Welcome): StaticWorld | undefined {
    const mapgen = this.opts.mapgen;
    if (mapgen === undefined) return undefined;
    if (this.state.world?.hash === welcome.mapHash) return this.state.world;
    let world: StaticWorld;
    try {
      world = mapgen.build(welcome.mapConfig);
    } catch (err) {
      throw new RoomError('map_mismatch', `the welcome's map config does not build here: ${errorMessage(err)}`);
    }
    if (world.hash !== welcome.mapHash) {
      throw new RoomError('map_mismatch', `the map built here (${world.hash}) is not the server's (${welcome.mapHash}): refusing to play on it`);
    }
    return world;
  }

  /** The handlers of a welcomed connection; those of a replaced one do nothing. */
  private handlers(socket: WebSocket): LinkHandlers {
    return {
      message: (data, bytes) => {
        if (socket === this.socket) this.receive(data, bytes);
      },
      close: (code, reason) => {
        if (socket === this.socket) this.closed(code, reason);
      },
    };
  }

  /** Starts afresh on a map: a first join, a transfer, or a return from one. */
  private adoptFresh(socket: WebSocket, welcome: Welcome, world: StaticWorld | undefined, endpoint: string): void {
    this.socket = socket;
    this.endpoint = endpoint;
    this.resumeToken = welcome.resumeToken;
    this.transfer = undefined;
    this.shuttingDown = false;
    this.lastServerError = undefined;
    // The map counts input seqs afresh (lastSeq 0), its own ticks and events.
    this.inputSeq = 0;
    this.lastEvent = 0;
    this.ackTick = 0;
    this.history.clear();
    this.interpolator.clear();
    this.predictor = new Predictor(world, 0, mapBounds(world));
    const s = this.state;
    Object.assign(s, welcomeFields(welcome), { tick: welcome.tick, ackSeq: 0, entities: new Map(), predicted: { x: 0, y: 0 } });
    s.self = undefined;
    s.world = world;
    // The weight and skills stay the last known until this map's first (full) snapshot brings its own.
    this.updateInventory({ ...this.owned(), items: welcome.inventory ?? [] });
    this.updateSpeed();
    // Commands queued while the client was between maps go to this one.
    for (const cmd of this.pending.values()) this.sendCommand(cmd);
    this.startPinging();
  }

  /**
   * Takes the seat back after a drop, on the pod that held it or the one
   * that replaced it (lastSeq 0: nothing known handled). Inputs the server
   * has not applied stay predicted; commands it did not get are sent again
   * (as are handled ones whose ack was lost, where the server
   * de-duplicates). The connection starts with a full snapshot: no
   * snapshot of the last one is acknowledged.
   */
  private adoptResumed(socket: WebSocket, welcome: Welcome, world: StaticWorld | undefined, endpoint: string): void {
    this.socket = socket;
    this.endpoint = endpoint;
    this.resumeToken = welcome.resumeToken; // a resume token works once
    this.transfer = undefined;
    this.shuttingDown = false;
    this.lastServerError = undefined;
    this.ackTick = 0;
    this.history.clear();
    const s = this.state;
    if (world !== s.world) this.predictor = new Predictor(world, 0, mapBounds(world));
    Object.assign(s, welcomeFields(welcome));
    s.world = world;
    // The server leaves an empty inventory out of the welcome.
    this.updateInventory({ ...this.owned(), items: welcome.inventory ?? [] });
    this.updateSpeed();
    s.resumes++;
    this.resendAfterResume(welcome.lastSeq ?? 0);
    this.startPinging();
  }

  private resendAfterResume(lastSeq: number): void {
    for (const cmd of [...this.pending.values()]) {
      if (cmd.seq > lastSeq || DEDUPLICATED.has(`${cmd.feature}.${cmd.action}`)) {
        cmd.replayed ||= cmd.seq <= lastSeq;
        this.sendCommand(cmd);
      } else {
        this.pending.delete(cmd.seq);
        cmd.reject(new RoomError('closed', `the answer to command ${cmd.seq} was lost with the connection`));
      }
    }
  }

  /** The current connection closed: follow a transfer, come back, or stop. */
  private closed(code: number, reason: string): void {
    this.socket = undefined;
    this.stopPinging();
    this.state.connected = false;
    const transfer = this.transfer;
    this.transfer = undefined;
    if (transfer !== undefined) {
      void this.follow(transfer, code, reason);
    } else if (code === CLOSE_POLICY || code === CLOSE_KICKED) {
      const e = this.lastServerError;
      this.finish(code, reason, new RoomError(reason || e?.code || 'unauthorized', e?.message || `the server closed the connection: ${reason}`));
    } else if (this.shuttingDown || RECONNECT_CLOSES.has(code)) {
      void this.reconnect(code, reason);
    } else {
      this.finish(code, reason, new RoomError('closed', `the server closed the connection with ${code}${reason ? `: ${reason}` : ''}`));
    }
  }

  /**
   * Follows a transfer to its destination or, when that refuses or cannot
   * be reached, back to the map it came from with the return ticket; each
   * way is tried again while the refusal is of the moment (cross). When
   * both fail the source has given the seat away, so the client comes back
   * as after a crash: the resume is refused and it joins again. With
   * resume.rejoin false nothing could bring it back: it stops. from is the
   * map that sent the transfer: the one played on, or the one a resume
   * was answered with it.
   */
  private async follow(t: Transfer, code: number, reason: string, from = this.endpoint): Promise<void> {
    this.rejectPending(new RoomError('closed', 'the map was left through a portal before it answered'));
    let failure: unknown;
    try {
      const expires = t.expiresAt > 0 ? t.expiresAt : Date.now() + 2 * CROSS_PATIENCE_MS;
      await this.cross(t.endpoint, t.ticket, Math.min(Date.now() + CROSS_PATIENCE_MS, expires - CROSS_RESERVE_MS), (socket, welcome, world) => {
        this.adoptFresh(socket, welcome, world, t.endpoint);
        this.state.transfers++;
        this.events.emit('transfer', t);
        this.events.emit('welcome', welcome);
      });
      return;
    } catch (err) {
      failure = err;
    }
    if (this.ended) return;
    if (failure instanceof RoomError && failure.code === 'map_mismatch') {
      this.finish(code, reason, failure); // the destination took the player: the return ticket is void
      return;
    }
    try {
      await this.cross(from, t.returnTicket, t.expiresAt > 0 ? t.expiresAt : Date.now() + CROSS_PATIENCE_MS, (socket, welcome, world) => {
        this.adoptFresh(socket, welcome, world, from);
        this.state.returns++;
        this.events.emit('welcome', welcome);
      });
    } catch (back) {
      if (this.ended) return;
      const message = `the transfer to ${t.map} failed (${errorMessage(failure)}) and so did the return (${errorMessage(back)})`;
      if (this.opts.resume?.rejoin !== false) void this.reconnect(code, reason, message);
      else this.finish(code, reason, new RoomError(back instanceof RoomError ? back.code : 'connection_failed', message));
    }
  }

  /**
   * Says hello with a transfer's ticket at endpoint, again with the same
   * ticket while the refusal is of the moment (the map's database
   * restarting, the map busy, a route the gateway has not programmed yet,
   * the network), until the next try would start after until (ms since the
   * epoch; one try at least).
   */
  private async cross(endpoint: string, ticket: string, until: number, adopt: Adopt): Promise<void> {
    for (let attempt = 0; ; attempt++) {
      try {
        await this.connectTo(endpoint, { ticket }, adopt);
        return;
      } catch (err) {
        if (this.ended || !retryable(err)) throw err;
        const pause = backoff(attempt, DEFAULTS.baseDelayMs, DEFAULTS.maxDelayMs);
        if (Date.now() + pause > until) throw err;
        await this.wait(pause);
      }
    }
  }

  /**
   * Comes back after the connection dropped or the map shut down, with
   * backoff and full jitter: resumes the seat on the endpoint played on
   * (the first SAME_ENDPOINT_TRIES tries), then where the join API says the
   * map runs now; once the seat cannot be resumed (its token expired or
   * was spent), joins again. A refusal of the player ends the tries.
   * cause, when set, says what ended the connection (a failed transfer)
   * for the message of giving up.
   */
  private async reconnect(code: number, reason: string, cause?: string): Promise<void> {
    const r = this.opts.resume ?? {};
    const attempts = r.attempts ?? DEFAULTS.attempts;
    // Commands up to this seq may have reached the seat that was lost.
    const sentBefore = this.commandSeq;
    let endpoint = this.endpoint;
    /** Why the seat cannot be resumed, once that is known: from then on each try joins again. */
    let seatGone: RoomError | undefined =
      this.resumeToken === '' ? new RoomError('unauthorized', 'the map gave no resume token') : undefined;
    let failure: unknown;
    for (let attempt = 0; attempt < attempts; attempt++) {
      const delayMs = backoff(attempt, r.baseDelayMs ?? DEFAULTS.baseDelayMs, r.maxDelayMs ?? DEFAULTS.maxDelayMs);
      this.events.emit('reconnecting', { attempt: attempt + 1, delayMs });
      await this.wait(delayMs);
      if (this.ended) return;
      try {
        if (seatGone === undefined) {
          try {
            if (attempt >= SAME_ENDPOINT_TRIES && r.locate !== false) endpoint = await this.locate();
            await this.resumeAt(endpoint);
            return;
          } catch (err) {
            if (err instanceof RoomError && err.transfer !== undefined) {
              // The seat left through a portal while the client was away.
              void this.follow(err.transfer, code, reason, endpoint);
              return;
            }
            if (!(err instanceof RoomError && SEAT_GONE.has(err.code))) throw err;
            seatGone = err;
          }
        }
        if (r.rejoin === false) throw seatGone;
        await this.rejoin(sentBefore);
        return;
      } catch (err) {
        if (this.ended) return;
        failure = err;
        if (!retryable(err)) break;
      }
    }
    const why = failure === undefined ? 'no attempt made' : errorMessage(failure);
    const what = seatGone !== undefined && r.rejoin !== false ? 'resume the seat or join again' : 'resume the seat';
    const after = cause === undefined ? '' : `${cause}; then `;
    this.finish(code, reason, new RoomError('resume_failed', `${after}could not ${what}: ${why}`));
  }

  /**
   * Where the map runs now, by the join API's resume call. A token it
   * refuses (unauthorized: expired, or not the room's) cannot resume the
   * seat: that is thrown as the map would refuse it.
   */
  private async locate(): Promise<string> {
    try {
      return (await this.joinAPI.resume(this.opts.namespace, this.opts.room, this.resumeToken)).endpoint;
    } catch (err) {
      if (err instanceof JoinAPIError && err.code === 'unauthorized') throw new RoomError('unauthorized', err.message);
      throw err;
    }
  }

  /** Says hello{resume} at endpoint with the newest token, the last command seq sent and the last event received. */
  private async resumeAt(endpoint: string): Promise<void> {
    const hello: Hello = { resume: this.resumeToken };
    if (this.commandSeq > 0) hello.lastSeq = this.commandSeq;
    if (this.lastEvent > 0) hello.lastEvent = this.lastEvent;
    await this.connectTo(endpoint, hello, (socket, welcome, world) => {
      this.adoptResumed(socket, welcome, world, endpoint);
      this.events.emit('resumed', welcome);
    });
  }

  /**
   * Joins again through the join API, as connect did: a new seat, started
   * afresh. Commands sent to the lost seat (seq up to sentBefore) are
   * rejected, since whether it handled them is unknown; those queued since
   * go to the new seat.
   */
  private async rejoin(sentBefore: number): Promise<void> {
    const join = await this.join();
    await this.connectTo(join.endpoint, { ticket: join.ticket }, (socket, welcome, world) => {
      for (const cmd of [...this.pending.values()]) {
        if (cmd.seq > sentBefore) continue;
        this.pending.delete(cmd.seq);
        cmd.reject(new RoomError('closed', `the seat was lost before it answered command ${cmd.seq}: the client joined again`));
      }
      this.adoptFresh(socket, welcome, world, join.endpoint);
      this.state.rejoins++;
      this.events.emit('rejoined', welcome);
      this.events.emit('welcome', welcome);
    });
  }

  /** Ends the client: closes any connection, settles pending commands, emits closed once. */
  private finish(code: number, reason: string, error?: RoomError): void {
    if (this.ended) return;
    this.ended = true;
    this.lifetime.abort();
    this.stopPinging();
    const socket = this.socket;
    this.socket = undefined;
    if (socket !== undefined) {
      // Only close() and a protocol fault end the client with a connection
      // still open; code is then theirs (1000 or CLOSE_FAULT).
      detach(socket);
      if (socket.readyState <= OPEN) socket.close(isApplicationCloseCode(code) ? code : 1000, reason.slice(0, MAX_CLOSE_REASON));
    }
    this.state.connected = false;
    this.rejectPending(error ?? new RoomError('closed', 'the client is closed'));
    this.events.emit('closed', error === undefined ? { code, reason } : { code, reason, error });
  }

  private rejectPending(err: RoomError): void {
    const cmds = [...this.pending.values()];
    this.pending.clear();
    for (const cmd of cmds) cmd.reject(err);
  }

  /** Resolves after ms, or at once when the client closes. */
  private wait(ms: number): Promise<void> {
    const signal = this.lifetime.signal;
    return new Promise((resolve) => {
      const done = (): void => {
        clearTimeout(timer);
        signal.removeEventListener('abort', done);
        resolve();
      };
      const timer = setTimeout(done, ms);
      signal.addEventListener('abort', done);
    });
  }

  private startPinging(): void {
    this.stopPinging();
    const every = this.opts.pingIntervalMs ?? DEFAULTS.pingIntervalMs;
    if (every <= 0) return;
    this.ping(); // a first RTT right away
    this.pingTimer = setInterval(() => this.ping(), every);
  }

  private stopPinging(): void {
    clearInterval(this.pingTimer);
    this.pingTimer = undefined;
  }

  // ---- receiving ----

  private receive(data: string | ArrayBuffer, bytes: number): void {
    this.state.bytes += bytes;
    this.meter.add(now(), bytes);
    try {
      if (typeof data === 'string') this.receiveText(data);
      else this.applyBinary(new Uint8Array(data));
    } catch (err) {
      // A frame this client cannot apply: its view of the world is wrong
      // from here on, so it stops rather than play on it.
      const e = err instanceof ProtocolError || err instanceof RoomError ? err : undefined;
      this.finish(CLOSE_FAULT, 'protocol fault', new RoomError(e?.code ?? 'bad_request', errorMessage(err)));
    }
  }

  private receiveText(text: string): void {
    const env = parseEnvelope(text);
    if (env === undefined) throw new ProtocolError('bad_request', `the server sent a message that is not a v${PROTOCOL_VERSION} envelope`);
    switch (env.kind) {
      case 'snapshot':
        this.applyJSON(env.payload as SnapshotMessage);
        break;
      case 'ack':
        this.receiveAck(env.payload as Ack);
        break;
      case 'event': {
        const e = env.payload as GameEvent;
        if (e.type === EventType.ServerShutdown) this.shuttingDown = true;
        if (e.id !== undefined && e.id > 0) {
          if (e.id <= this.lastEvent) break; // already seen, before a resume: each event once
          this.lastEvent = e.id;
        }
        this.events.emit('event', e);
        break;
      }
      case 'transfer':
        this.transfer = env.payload as Transfer; // followed when the map closes the connection
        break;
      case 'error': {
        const e = env.payload as ServerErrorPayload;
        this.lastServerError = e;
        this.events.emit('serverError', { code: e.code, message: e.message });
        break;
      }
      case 'pong':
        this.state.rttMs = now() - (env.payload as Pong).clientTime;
        break;
      case 'session': {
        // The token of the welcome expires with the resume grace: keep the newest.
        const token = (env.payload as Session | undefined)?.resumeToken;
        if (typeof token === 'string' && token !== '') this.resumeToken = token;
        break;
      }
      default: // a kind of a newer server: nothing this client needs
    }
  }

  /**
   * Settles the command of the ack's seq. An ok critical action's ack
   * carries the items as they stand after it; the answer to one the server
   * had handled before a resume (or a second answer to one) is older than
   * the resumed welcome and the snapshots since, so it leaves them be.
   */
  private receiveAck(ack: Ack): void {
    const cmd = this.pending.get(ack.seq);
    this.pending.delete(ack.seq);
    if (ack.ok && cmd !== undefined && !cmd.replayed && INVENTORY_ANSWERS.has(`${cmd.feature}.${cmd.action}`)) {
      const s = this.state;
      this.updateInventory({ ...this.owned(), items: ack.inventory ?? [] });
    }
    cmd?.resolve(ack);
    this.events.emit('ack', ack);
  }

  private applyJSON(snap: SnapshotMessage): void {
    if (!Number.isSafeInteger(snap.tick) || (snap.mode !== 'full' && snap.mode !== 'delta')) {
      throw new ProtocolError('bad_request', 'a JSON snapshot without a tick or a mode');
    }
    const base = snap.mode === 'delta' ? this.base(snap.baseTick ?? 0) : null;
    const inventory = snap.inventory === undefined ? undefined : toInventory(snap.inventory, 'snapshot: inventory');
    this.applyEntities(snap.tick, snap.ackSeq, applyJSONSnapshot(base, snap), inventory);
  }

  private applyBinary(data: Uint8Array): void {
    const peek = peekBinaryHeader(data);
    const base = peek.mode === 'delta' ? this.base(peek.baseTick) : null;
    const { header, entities } = decodeBinarySnapshot(data, base);
    this.applyEntities(header.tick, header.ackSeq, entities, header.inventory);
  }

  /** The snapshot a delta applies to; one this client does not have is a fault. */
  private base(tick: number): Entity[] {
    const base = this.history.get(tick);
    if (base === undefined) throw new ProtocolError('bad_request', `a delta against tick ${tick}, which this client does not have`);
    return base;
  }

  /**
   * Installs a snapshot (and its inventory channel, when it carries one)
   * and re-predicts this player from the server's position, at the speed
   * its weight allows.
   */
  private applyEntities(tick: number, ackSeq: number, entities: Entity[], inventory?: Inventory): void {
    this.history.put(tick, entities);
    this.ackTick = tick;
    const s = this.state;
    s.tick = tick;
    s.ackSeq = ackSeq;
    s.entities = new Map(entities.map((e) => [e.id, e]));
    s.snapshots++;
    if (inventory !== undefined && this.updateInventory(inventory)) this.updateSpeed();
    // Doors that closed or opened block the replay as they block the server.
    this.predictor.useDoors(entities);
    const self = s.entities.get(s.playerId);
    if (self !== undefined) {
      s.self = self;
      s.predicted = this.predictor.reconcile(self.x, self.y, ackSeq);
    }
    this.interpolator.push(now(), entities);
    this.events.emit('snapshot', { tick });
  }

  /** The inventory channel as the state holds it now. */
  private owned(): Inventory {
    const s = this.state;
    return { items: s.inventory, weight: s.weight, skills: s.skills, resources: s.resources, buffs: s.buffs, cooldowns: s.cooldowns };
  }

  /** Sets the inventory; emits inventory and returns true when it changed. */
  private updateInventory(inv: Inventory): boolean {
    const s = this.state;
    if (sameInventory(inv, this.owned())) return false;
    s.inventory = inv.items;
    s.weight = inv.weight;
    s.skills = inv.skills;
    s.resources = inv.resources;
    s.buffs = inv.buffs ?? [];
    s.cooldowns = inv.cooldowns ?? [];
    this.events.emit('inventory', { items: inv.items, weight: inv.weight, skills: inv.skills });
    return true;
  }

  /**
   * The speed prediction walks at: the server's rule (content.Bag) with the
   * latest weight. The pending inputs are replayed with it at the next
   * snapshot, which comes with the weight that changed it.
   */
  private updateSpeed(): void {
    const s = this.state;
    s.speedFactor = speedFactor(s.bag, s.weight);
    this.predictor.stepDistance = encumberedStepDistance(s.playerSpeed, s.tickRate, s.bag, s.weight);
  }

  // ---- sending ----

  private openSocket(): WebSocket | undefined {
    return this.socket?.readyState === OPEN ? this.socket : undefined;
  }

  private sendCommand(cmd: PendingCommand): void {
    this.send('command', { seq: cmd.seq, feature: cmd.feature, action: cmd.action }, cmd.payload);
  }

  /** Sends one JSON message acknowledging the newest snapshot; false when not connected. */
  private send(kind: string, head: { seq?: number; feature?: string; action?: string }, payload: unknown): boolean {
    const socket = this.openSocket();
    if (socket === undefined) return false;
    const ackTick = this.ackTick > 0 ? this.ackTick : undefined;
    socket.send(JSON.stringify({ v: PROTOCOL_VERSION, kind, ...head, ackTick, payload }));
    return true;
  }
}

/** The fields of state a welcome sets. */
function welcomeFields(w: Welcome): Partial<ClientState> {
  return {
    connected: true,
    playerId: w.playerId,
    room: w.room,
    map: w.map,
    instance: w.instance,
    party: w.party ?? '',
    tickRate: w.tickRate,
    snapshotRate: w.snapshotRate,
    playerSpeed: w.playerSpeed,
    codec: w.codec,
    mapHash: w.mapHash,
    contentHash: w.contentHash ?? '',
    portals: w.portals ?? [],
    bag: w.bag ?? NO_BAG, // a welcome without one slows nobody
  };
}

function mapBounds(world: StaticWorld | undefined): { width: number; height: number } | undefined {
  return world === undefined ? undefined : { width: world.width, height: world.height };
}

/**
 * The wait before try attempt (from 0): full jitter, a random time up to
 * min(maxDelayMs, baseDelayMs * 2^attempt), at least 1 ms, so a map's
 * players do not all knock at once.
 */
function backoff(attempt: number, baseDelayMs: number, maxDelayMs: number): number {
  const ceiling = Math.max(0, Math.min(baseDelayMs * 2 ** attempt, maxDelayMs));
  return Math.floor(Math.random() * ceiling) + 1;
}

/**
 * Whether a failed try is worth another: the connection failed, the map
 * refused the moment (busy, database down, quarantined), or the join API
 * could not answer now (unreachable, not ready, rate limited, a server
 * error). Not a refusal of the player, a map that does not match, or a
 * join API request it refuses (400, 401, 403, 404).
 */
function retryable(err: unknown): boolean {
  if (err instanceof RoomError) return TRANSIENT.has(err.code);
  if (err instanceof JoinAPIError) return err.status === 0 || err.status === 409 || err.status === 429 || err.status >= 500;
  return false;
}

/** Codes a browser lets a page close with: 1000 and 3000-4999. */
function isApplicationCloseCode(code: number): boolean {
  return code === 1000 || (code >= 3000 && code <= 4999);
}

function errorMessage(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}
