// One game session: a connected RoomClient and everything the page does
// with it (movement every tick, click-to-move, portals, loot, the HUD),
// until it closes.

import { DOOR_REACH, EntityKind, EventType, RoomError, doorDistance, doorOf, encumberedStepDistance, isDoorOpen } from '../src/index.js';
import type { Ack, ClientState, Entity, GameEvent, PackDefinitions, Portal, RoomClient, Slot, StaticWorld } from '../src/index.js';
import { Hud, type LogLine } from './hud.js';
import type { Keyboard } from './input.js';
import { PathFollower, findPath, gridWithDoors, type Grid, type Point } from './path.js';
import type { Scene } from './render.js';

/** How far the server lets a player reach for loot (docs/protocol.md, loot.pickup). */
export const PICKUP_RANGE = 24;
/** How near an enemy must be to be hit (the server's player range). */
export const ATTACK_RANGE = 32;

/** The errors kept for the HUD and the test hook. */
const MAX_ERRORS = 20;

/** The events kept for the HUD's log and the test hook. */
const MAX_EVENTS = 8;

const HUD_EVERY_MS = 250;

/** A refusal worded like the server's, for the HUD: the code first, since clients switch on it. */
export function describeError(err: unknown): string {
  if (err && typeof err === 'object' && 'code' in err && typeof err.code === 'string' && err.code) {
    // An Error's message, or an ack's.
    const message = 'message' in err && typeof err.message === 'string' ? err.message : '';
    return message && !message.startsWith(err.code) ? `${err.code}: ${message}` : message || err.code;
  }
  return err instanceof Error ? err.message : String(err);
}

function distance(a: Point, b: Point): number {
  return Math.hypot(a.x - b.x, a.y - b.y);
}

/** The portal nearest to p, and how far it is. */
function nearestPortal(portals: readonly Portal[], p: Point): { portal: Portal; dist: number } | undefined {
  let best: { portal: Portal; dist: number } | undefined;
  for (const portal of portals) {
    const dist = distance(portal, p);
    if (!best || dist < best.dist) best = { portal, dist };
  }
  return best;
}

/**
 * How far p is from a door entity, as the server measures reach: to the
 * nearest edge of its cells (to its middle without the static world).
 */
function doorReach(world: StaticWorld | undefined, door: Entity, p: Point): number {
  const d = world && doorOf(world, door);
  return d ? doorDistance(d, p) : distance(door, p);
}

/** An event as a line of the HUD's log (important: a room cleared, a boss phase); undefined for those it leaves out. */
export function describeEvent(e: GameEvent): LogLine | undefined {
  switch (e.type) {
    case EventType.RoomCleared:
      return { text: `room cleared: its doors open (${Math.round(e.x ?? 0)}, ${Math.round(e.y ?? 0)})`, important: true };
    case EventType.BossPhase:
      return { text: `the boss (${e.entity ?? '?'}) enters phase ${e.phase ?? '?'}!`, important: true };
    case EventType.Door:
      return { text: `door ${e.entity ?? '?'} ${e.detail === 'open' ? 'opened' : 'closed'}`, important: false };
    case EventType.Death:
      return { text: `${e.entity ?? '?'} died${e.by ? ` (by ${e.by})` : ''}`, important: false };
    default:
      return undefined;
  }
}

/** A refusal the page makes itself, shaped like the server's ack so callers handle both alike. */
function refused(code: string, message: string): Ack {
  return { seq: 0, ok: false, code, message };
}

export class Session {
  private readonly follower = new PathFollower();
  private readonly hud: Hud;
  private readonly hudTimer: ReturnType<typeof setInterval>;
  private readonly unsubscribe: (() => void)[] = [];
  private moveTimer: ReturnType<typeof setInterval> | undefined;
  private moveEveryMs = 0;
  private status = 'playing';
  private notice = '';
  /** The last refused inventory action (drop, wear, take off), its code first; cleared by one that goes through. */
  private inventoryError = '';
  readonly errors: string[] = [];
  /** The newest events worth a line in the HUD's log (rooms cleared, boss phases, doors, deaths), oldest first. */
  readonly events: LogLine[] = [];
  /** The walkability grid with the closed doors in view, and which doors those were. */
  private grid: { world: StaticWorld; closed: string; grid: Grid } | undefined;
  /** The server's last answer to a command, for the test hook. */
  lastAck: Ack | undefined;
  /** The definitions of the map's content pack, by the welcome's contentHash. */
  private pack: { hash: string; pack: PackDefinitions } | undefined;
  private ended = false;

  /** onEnd runs once, when the session is over: error is set when it ended on a failure. */
  constructor(readonly client: RoomClient, private readonly keyboard: Keyboard, private readonly onEnd: (error?: string) => void,
    private readonly definitions: (contentHash: string) => Promise<PackDefinitions | undefined>) {
    this.hud = new Hud({
      drop: (item) => void this.drop(item),
      use: (item) => void this.use(item),
      equip: (item, slot) => void this.equip(item, slot),
      unequip: (slot) => void this.unequip(slot),
    });
    this.listen();
    this.loadPack();
    this.retimeMovement();
    // RTT needs no timer here: the client pings on its own while connected.
    this.hudTimer = setInterval(() => this.refreshHud(), HUD_EVERY_MS);
    this.refreshHud();
  }

  private get state(): ClientState { return this.client.state; }

  private listen(): void {
    const c = this.client;
    this.unsubscribe.push(
      c.on('welcome', (w) => {
        // A new map (after a portal): the old path leads nowhere here.
        this.follower.cancel();
        this.status = 'playing';
        this.notice = w.transfer ? `arrived in ${w.map}` : '';
        this.loadPack();
        this.retimeMovement();
      }),
      c.on('transfer', (t) => { this.notice = `through the portal to ${t.map}…`; }),
      c.on('reconnecting', (r) => { this.status = `reconnecting (attempt ${r.attempt})`; }),
      c.on('resumed', () => { this.status = 'playing'; this.notice = 'connection resumed'; }),
      c.on('serverError', (e) => this.recordError(`${e.code}: ${e.message}`)),
      c.on('event', (e) => this.recordEvent(e)),
      c.on('ack', (a) => {
        this.lastAck = a;
        if (!a.ok) this.recordError(describeError(a));
      }),
      c.on('closed', (e) => this.end(e.error ? describeError(e.error) : undefined)),
    );
  }

  /**
   * Loads the definitions of the map's content pack, so the HUD names an
   * item's slots and stats; until they come (or if they cannot) it offers
   * every slot and the server's refusal says the rest.
   */
  private loadPack(): void {
    const hash = this.state.contentHash;
    if (!hash || this.pack?.hash === hash) return;
    this.definitions(hash).then((pack) => {
      if (pack && this.state.contentHash === hash) this.pack = { hash, pack };
    }, (err: unknown) => this.recordError(`content definitions: ${describeError(err)}`));
  }

  private recordEvent(e: GameEvent): void {
    const line = describeEvent(e);
    if (line === undefined) return;
    this.events.push(line);
    if (this.events.length > MAX_EVENTS) this.events.shift();
    if (line.important) this.notice = line.text;
  }

  private recordError(text: string): void {
    this.errors.push(text);
    if (this.errors.length > MAX_ERRORS) this.errors.shift();
  }

  /** Movement is sent once per server tick, so it matches the rate the server applies it at. */
  private retimeMovement(): void {
    const every = 1000 / (this.state.tickRate || 30);
    if (every === this.moveEveryMs && this.moveTimer !== undefined) return;
    if (this.moveTimer !== undefined) clearInterval(this.moveTimer);
    this.moveEveryMs = every;
    this.moveTimer = setInterval(() => this.tick(), every);
  }

  /** One tick of input: held keys win over a click-to-move path, and cancel it. */
  private tick(): void {
    const s = this.state;
    if (!s.connected) return; // inputs sent into a dropped connection would be lost anyway
    const keys = this.keyboard.direction();
    if (keys) {
      this.follower.cancel();
      this.client.move(keys.x, keys.y);
      return;
    }
    if (!this.follower.active) return;
    // A loaded player takes shorter steps (the server's encumbrance rule): the last one to a waypoint too.
    const dir = this.follower.next(s.predicted, encumberedStepDistance(s.playerSpeed, s.tickRate, s.bag, s.weight));
    if (dir) this.client.move(dir.x, dir.y);
  }

  /** Plans a path from the predicted position to (x, y) and starts following it; the number of waypoints, 0 if none. */
  walkTo(x: number, y: number): number {
    const grid = this.walkable();
    if (!grid) return 0;
    const path = findPath(grid, this.state.predicted, { x, y });
    if (!path) {
      this.notice = 'no way there (a closed door? G opens the nearest)';
      return 0;
    }
    this.notice = '';
    this.follower.follow(path);
    return path.length;
  }

  /**
   * The grid paths are planned on: the static world with the closed doors
   * in view, as the server blocks them. Rebuilt only when those doors
   * change, since a path finder reads the whole grid the first time.
   */
  private walkable(): Grid | undefined {
    const world = this.state.world;
    if (!world) return undefined;
    const doors = [...this.state.entities.values()].filter((e) => e.kind === EntityKind.Door);
    const closed = doors.filter((e) => !isDoorOpen(e)).map((e) => e.id).sort((a, b) => a - b).join(',');
    if (this.grid?.world !== world || this.grid.closed !== closed) this.grid = { world, closed, grid: gridWithDoors(world, doors) };
    return this.grid.grid;
  }

  /**
   * Opens or closes the door nearest to the player within reach (24 units
   * to its nearest edge). A locked door opens only for a player carrying
   * the key: the server says so in its ack.
   */
  async toggleNearestDoor(): Promise<Ack> {
    const here = this.position();
    let best: { door: Entity; dist: number } | undefined;
    for (const e of this.state.entities.values()) {
      if (e.kind !== EntityKind.Door) continue;
      const dist = doorReach(this.state.world, e, here);
      if (dist <= DOOR_REACH && (!best || dist < best.dist)) best = { door: e, dist };
    }
    if (!best) {
      this.notice = `no door within ${DOOR_REACH} units`;
      return refused('out_of_range', this.notice);
    }
    const door = best.door.id;
    return this.act(() => this.client.toggleDoor(door));
  }

  /** The nearest door within reach, for the HUD's button. */
  private doorInReach(): boolean {
    const here = this.position();
    for (const e of this.state.entities.values()) {
      if (e.kind === EntityKind.Door && doorReach(this.state.world, e, here) <= DOOR_REACH) return true;
    }
    return false;
  }

  /**
   * Enters the portal nearest to the player. The server decides whether it
   * is in range, from its own position of the player: the answer is its ack.
   */
  async enterNearestPortal(): Promise<Ack> {
    const near = nearestPortal(this.state.portals, this.position());
    if (!near) return refused('invalid_action', 'this map has no portal');
    this.follower.cancel();
    return this.act(() => this.client.enterPortal(near.portal.entity));
  }

  /** Picks up the nearest loot within reach, as the server measures it (from its own position of the player). */
  async pickupNearest(): Promise<Ack> {
    const loot = this.nearestWithin(EntityKind.Loot, PICKUP_RANGE, 'loot');
    return typeof loot === 'number' ? this.act(() => this.client.pickup(loot)) : loot;
  }

  drop(item: string): Promise<Ack> {
    return this.inventoryAction(() => this.client.drop(item));
  }

  /** Uses up a consumable from the bag (a potion heals); the server may refuse (not_usable). */
  use(item: string): Promise<Ack> {
    return this.inventoryAction(() => this.client.use(item));
  }

  /** Wears a bag item in slot (what the slot held goes to the bag); the server says whether it fits, and may refuse. */
  equip(item: string, slot: Slot): Promise<Ack> {
    return this.inventoryAction(() => this.client.equip(item, slot));
  }

  /** Puts what slot holds back in the bag. */
  unequip(slot: Slot): Promise<Ack> {
    return this.inventoryAction(() => this.client.unequip(slot));
  }

  /** An inventory action whose refusal the HUD shows under the inventory, by its code (skill_gate, equip_locked, ...). */
  private async inventoryAction(command: () => Promise<Ack>): Promise<Ack> {
    const ack = await this.act(command);
    this.inventoryError = ack.ok ? '' : `refused: ${describeError(ack)}`;
    if (!this.ended) this.refreshHud();
    return ack;
  }

  /** Attacks the nearest NPC within reach of a hit. */
  async attackNearest(): Promise<Ack> {
    const target = this.nearestWithin(EntityKind.NPC, ATTACK_RANGE, 'enemy');
    return typeof target === 'number' ? this.act(() => this.client.attack(target)) : target;
  }

  /**
   * The id of the nearest living entity of kind within range, or the
   * refusal the page shows when there is none (what names it there).
   */
  private nearestWithin(kind: number, range: number, what: string): number | Ack {
    const here = this.position();
    let best: Entity | undefined;
    for (const e of this.state.entities.values()) {
      if (e.kind !== kind || (kind === EntityKind.NPC && e.hp === 0) || distance(e, here) > range) continue;
      if (!best || distance(e, here) < distance(best, here)) best = e;
    }
    if (best) return best.id;
    this.notice = `no ${what} within ${range} units`;
    return refused('out_of_range', this.notice);
  }

  /** Closes the socket as a network drop would: the client resumes, which the HUD's resume count shows. */
  dropConnection(): void {
    this.notice = 'connection dropped on purpose';
    this.client.dropConnection();
  }

  close(): void {
    this.client.close();
    this.end();
  }

  /** Runs a critical command; a failure that is not an ack (the connection closed meanwhile) becomes one. */
  private async act(command: () => Promise<Ack>): Promise<Ack> {
    try {
      const ack = await command();
      if (ack.ok) this.notice = '';
      return ack;
    } catch (err) {
      const code = err instanceof RoomError ? err.code : 'internal';
      this.recordError(describeError(err));
      return refused(code, err instanceof Error ? err.message : String(err));
    }
  }

  /** Where the server last put the player: range checks are the server's, made against this. */
  private position(): Point {
    return this.state.self ?? this.state.predicted;
  }

  /** Portal entities the player stands within the radius of. */
  portalsInRange(): Set<number> {
    const here = this.position();
    return new Set(this.state.portals.filter((p) => distance(p, here) <= p.radius).map((p) => p.entity));
  }

  /** What the next frame shows; the client's own clock places the interpolated entities. */
  scene(): Scene {
    const s = this.state;
    return {
      world: s.world, entities: this.client.interpolated(), selfId: s.playerId, focus: s.predicted,
      portals: s.portals, path: this.follower.remaining, inRange: this.portalsInRange(),
    };
  }

  /** The rest of the click-to-move path. */
  get path(): readonly Point[] { return this.follower.remaining; }

  private refreshHud(): void {
    const s = this.state;
    this.hud.update({
      state: s, status: this.status, entities: s.entities.size, lastError: this.errors.at(-1) ?? '', notice: this.notice, events: this.events,
      inventoryError: this.inventoryError, pack: this.pack?.pack,
    });
    const portal = document.getElementById('enter-portal');
    if (portal instanceof HTMLButtonElement) portal.disabled = this.portalsInRange().size === 0;
    const door = document.getElementById('toggle-door');
    if (door instanceof HTMLButtonElement) door.disabled = !this.doorInReach();
  }

  private end(error?: string): void {
    if (this.ended) return;
    this.ended = true;
    if (error) this.recordError(error);
    clearInterval(this.hudTimer);
    if (this.moveTimer !== undefined) clearInterval(this.moveTimer);
    for (const off of this.unsubscribe) off();
    this.onEnd(error);
  }
}
