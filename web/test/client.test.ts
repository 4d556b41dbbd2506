import { afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { WebSocket as NodeWebSocket } from 'ws';
import {
  DoorState,
  ErrorCode,
  EventType,
  JoinAPIError,
  RoomClient,
  RoomError,
  bagItems,
  encodeBinaryInput,
  encumberedStepDistance,
  isEvent,
  move,
  quantizeDirection,
  stepDistance,
  withClosedDoors,
  wornItems,
  type ClientEvents,
  type ClientOptions,
  type Entity,
  type GameEvent,
  type Inventory,
  type Mapgen,
  type Welcome,
  type WebSocketConstructor,
} from '../src/index.js';
import { crossing, doorEntity, inDoor } from './helpers/doors.js';
import { testMapgen } from './helpers/mapgen.js';
import { JoinServer, RoomServer, type Connection } from './helpers/server.js';
import { moveVectors } from './helpers/vectors.js';
import { encodeSnapshot } from './helpers/wire.js';

const town = moveVectors().maps[0]!;
const crypt = moveVectors().maps[1]!;
const PLAYER = 17;
/** The built-in packs' bag (internal/content): above 25 a player walks at 0.6 of its speed. */
const BAG = { capacity: 20, maxWeight: 40, encumberedAt: 25, encumberedSpeed: 0.6 };

/** ws implements the browser's WebSocket API, which the SDK uses. */
const WebSocket = NodeWebSocket as unknown as WebSocketConstructor;

let mapgen: Mapgen;
let room: RoomServer;
let api: JoinServer;
const clients: RoomClient[] = [];
const servers: RoomServer[] = [];

beforeAll(async () => {
  mapgen = await testMapgen();
});

beforeEach(async () => {
  room = await startRoom();
  api = await JoinServer.start(room.url);
});

afterEach(async () => {
  for (const c of clients.splice(0)) c.close();
  await Promise.all(servers.splice(0).map((s) => s.stop()));
  await api.stop();
});

async function startRoom(): Promise<RoomServer> {
  const s = await RoomServer.start();
  servers.push(s);
  return s;
}

function options(extra: Partial<ClientOptions> = {}): ClientOptions {
  return {
    joinAPI: api.url,
    namespace: 'default',
    room: 'demo',
    WebSocket,
    pingIntervalMs: 0, // the tests ping when they want a ping
    resume: { baseDelayMs: 1, maxDelayMs: 4 },
    ...extra,
  };
}

function welcome(extra: Partial<Welcome> = {}): Welcome {
  return {
    playerId: PLAYER,
    room: 'demo',
    map: 'town',
    instance: 'demo-town',
    tick: 4200,
    tickRate: town.tickRate,
    snapshotRate: 10,
    playerSpeed: town.playerSpeed,
    resumeToken: 'resume-1',
    codec: 'binary',
    mapConfig: town.config,
    mapHash: town.hash,
    bag: BAG,
    portals: [{ entity: 7, to: 'crypt', x: 500, y: 256, radius: 24 }],
    ...extra,
  };
}

/** Connects through the join API and welcomes the client on the room server. */
async function connect(extra: Partial<ClientOptions> = {}, w: Partial<Welcome> = {}): Promise<{ client: RoomClient; conn: Connection }> {
  const connecting = RoomClient.connect(options(extra));
  const conn = await room.nextConnection();
  await conn.nextText(); // hello
  conn.sendJSON('welcome', welcome({ codec: extra.codec ?? 'binary', ...w }));
  const client = await connecting;
  clients.push(client);
  return { client, conn };
}

/** The next event of type. */
function once<K extends keyof ClientEvents>(client: RoomClient, type: K): Promise<ClientEvents[K]> {
  return new Promise((resolve) => {
    const off = client.on(type, (e) => {
      off();
      resolve(e);
    });
  });
}

/** Records the types of the events emitted, in order. */
function recordEvents(client: RoomClient, types: (keyof ClientEvents)[]): string[] {
  const seen: string[] = [];
  for (const t of types) client.on(t, () => seen.push(t));
  return seen;
}

const self = (x: number, y: number): Entity => ({ id: PLAYER, kind: 1, x, y, hp: 100, state: 0, target: 0 });
const npc = (x: number, y: number, hp = 30): Entity => ({ id: 40, kind: 2, x, y, hp, state: 0, target: 0 });
const loot: Entity = { id: 412, kind: 3, x: 120, y: 130, hp: 0, state: 0, target: 0 };

describe('connecting', () => {
  it('joins, offers the subprotocol and says hello with the ticket and codec', async () => {
    const connecting = RoomClient.connect(options({ authKey: 'secret', map: 'town', partyToken: '' }));
    const conn = await room.nextConnection();
    expect(conn.protocols).toStrictEqual(['roomkeeper.v1']);
    expect(conn.ws.protocol).toBe('roomkeeper.v1');
    expect(await conn.nextText()).toStrictEqual({ v: 1, kind: 'hello', payload: { ticket: 'ticket-1', codec: 'binary' } });
    conn.sendJSON('welcome', welcome({ inventory: [{ id: 'demo-town/loot/1', kind: 'gem' }] }));
    const client = await connecting;
    clients.push(client);

    expect(api.calls).toHaveLength(1);
    expect(api.calls[0]).toMatchObject({ method: 'POST', path: '/v1/namespaces/default/gamerooms/demo/join' });
    expect(api.calls[0]!.body).toStrictEqual({ authKey: 'secret', map: 'town' }); // empty fields left out
    const s = client.state;
    expect(s).toMatchObject({ connected: true, playerId: PLAYER, room: 'demo', map: 'town', instance: 'demo-town', tick: 4200, tickRate: 30, codec: 'binary' });
    expect(s.inventory).toStrictEqual([{ id: 'demo-town/loot/1', kind: 'gem' }]);
    expect(s.portals).toStrictEqual([{ entity: 7, to: 'crypt', x: 500, y: 256, radius: 24 }]);
    expect(s.world).toBeUndefined(); // no mapgen: no world
  });

  it('says hello with the json codec when asked', async () => {
    const connecting = RoomClient.connect(options({ codec: 'json' }));
    const conn = await room.nextConnection();
    expect((await conn.nextText()).payload).toStrictEqual({ ticket: 'ticket-1', codec: 'json' });
    conn.sendJSON('welcome', welcome({ codec: 'json' }));
    clients.push(await connecting);
  });

  it('builds the map and plays when its hash is the server', async () => {
    const { client } = await connect({ mapgen });
    expect(client.state.world?.hash).toBe(town.hash);
    expect(client.state.mapHash).toBe(town.hash);
    expect(client.state.world?.blocked(-1, 0)).toBe(true);
  });

  it.each([
    ['hash', { mapHash: 'f'.repeat(64) }],
    ['config', { mapConfig: crypt.config }],
  ])('refuses to play when the map %s does not match', async (_, w) => {
    const connecting = RoomClient.connect(options({ mapgen }));
    const conn = await room.nextConnection();
    await conn.nextText();
    conn.sendJSON('welcome', welcome(w));
    const err = await connecting.catch((e: unknown) => e);
    expect(err).toBeInstanceOf(RoomError);
    expect((err as RoomError).code).toBe('map_mismatch');
    await conn.closed; // the client hung up
  });

  it('refuses a map config the generator refuses', async () => {
    const connecting = RoomClient.connect(options({ mapgen }));
    const conn = await room.nextConnection();
    await conn.nextText();
    conn.sendJSON('welcome', welcome({ mapConfig: { seed: 1, width: 10, height: 256 } }));
    await expect(connecting).rejects.toMatchObject({ code: 'map_mismatch', message: expect.stringContaining('width') });
  });

  it('rejects with the code of a refused hello', async () => {
    const connecting = RoomClient.connect(options());
    const conn = await room.nextConnection();
    await conn.nextText();
    conn.sendJSON('error', { code: 'token_expired', message: 'the ticket has expired: ask for a new one' });
    conn.close(1008, 'token_expired');
    const err = await connecting.catch((e: unknown) => e);
    expect(err).toBeInstanceOf(RoomError);
    expect(err).toMatchObject({ code: 'token_expired', message: 'the ticket has expired: ask for a new one' });
  });

  it('rejects with connection_failed when the map cannot be reached', async () => {
    const gone = await RoomServer.start();
    await gone.stop();
    api.answer = () => ({ status: 200, body: { endpoint: gone.url, map: 'town', ticket: 't', expiresAt: '' } });
    await expect(RoomClient.connect(options())).rejects.toMatchObject({ name: 'RoomError', code: 'connection_failed' });
  });

  it('rejects with the join API error', async () => {
    api.answer = () => ({ status: 503, body: { code: 'map_quarantined', message: 'crash-looping', retryAfter: 5 } });
    const err = await RoomClient.connect(options()).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(JoinAPIError);
    expect(err).toMatchObject({ status: 503, code: 'map_quarantined', retryAfterMs: 5000 });
  });
});

describe('snapshots', () => {
  it('applies binary full and delta snapshots and acknowledges the newest on the next message', async () => {
    const { client, conn } = await connect();
    const full = [self(100, 100), npc(50, 60), loot];
    let applied = once(client, 'snapshot');
    conn.sendBinary(encodeSnapshot({ tick: 4201, ackSeq: 0 }, full));
    expect(await applied).toStrictEqual({ tick: 4201 });
    expect([...client.state.entities.values()]).toStrictEqual([self(100, 100), npc(50, 60), loot]);
    expect(client.state.self).toStrictEqual(self(100, 100));
    expect(client.state.predicted).toStrictEqual({ x: 100, y: 100 });

    client.ping();
    expect(await conn.nextText()).toMatchObject({ kind: 'ping', ackTick: 4201 });

    const next = [self(101.5, 100), npc(50, 60, 25)]; // the loot is gone
    applied = once(client, 'snapshot');
    conn.sendBinary(encodeSnapshot({ tick: 4202, ackSeq: 0, baseTick: 4201 }, next, full));
    await applied;
    expect([...client.state.entities.values()]).toStrictEqual(next);
    expect(client.state).toMatchObject({ tick: 4202, snapshots: 2 });
    expect(client.state.bytes).toBeGreaterThan(0);
    expect(client.state.bytesPerSecond).toBeGreaterThan(0);

    const pickup = client.pickup(412);
    expect(await conn.nextText()).toMatchObject({ kind: 'command', seq: 1, ackTick: 4202 });
    conn.sendJSON('ack', { seq: 1, ok: false, code: 'already_taken' });
    expect(await pickup).toMatchObject({ seq: 1, ok: false });
  });

  it('applies JSON full and delta snapshots', async () => {
    const { client, conn } = await connect({ codec: 'json' });
    let applied = once(client, 'snapshot');
    conn.sendJSON('snapshot', {
      tick: 10, ackSeq: 0, mode: 'full',
      presence: { add: [{ id: PLAYER, kind: 1 }, { id: 40, kind: 2 }] },
      movement: [{ id: PLAYER, x: 100, y: 100 }, { id: 40, x: 50, y: 60 }],
      combat: [{ id: PLAYER, hp: 100 }, { id: 40, hp: 30 }],
    });
    await applied;
    expect([...client.state.entities.values()]).toStrictEqual([self(100, 100), npc(50, 60)]);

    applied = once(client, 'snapshot');
    conn.sendJSON('snapshot', {
      tick: 11, ackSeq: 0, mode: 'delta', baseTick: 10,
      presence: { add: [{ id: 412, kind: 3 }], remove: [40] },
      movement: [{ id: PLAYER, x: 101.25, y: 100 }, { id: 412, x: 120, y: 130 }],
      combat: [{ id: 412, hp: 0 }],
    });
    await applied;
    expect([...client.state.entities.values()]).toStrictEqual([self(101.25, 100), loot]);
    client.ping();
    expect(await conn.nextText()).toMatchObject({ kind: 'ping', ackTick: 11 });
  });

  it('stops on a delta against a tick it does not have', async () => {
    const { client, conn } = await connect();
    const closed = once(client, 'closed');
    conn.sendBinary(encodeSnapshot({ tick: 4300, ackSeq: 0, baseTick: 4299 }, [self(1, 1)], [self(1, 1)]));
    const e = await closed;
    expect(e.error).toBeInstanceOf(RoomError);
    expect(e.error?.code).toBe('bad_request');
    expect(e.error?.message).toContain('4299');
    expect((await conn.closed).code).toBe(4002);
    expect(client.state.connected).toBe(false);
  });

  it('stops on a malformed binary snapshot', async () => {
    const { client, conn } = await connect();
    const closed = once(client, 'closed');
    conn.sendBinary(Uint8Array.from([0x52, 0x09, 0, 1, 0, 0, 0, 0]));
    expect((await closed).error).toMatchObject({ code: 'bad_request', message: 'binary snapshot: unsupported version 9' });
  });
});

describe('sending', () => {
  it('sends movement as binary input frames and predicts it', async () => {
    const { client, conn } = await connect({ mapgen });
    const start = town.walks[0]!;
    const applied = once(client, 'snapshot');
    conn.sendBinary(encodeSnapshot({ tick: 4201, ackSeq: 0 }, [self(start.x, start.y)]));
    await applied;

    expect(client.move(0.6, -0.8)).toBe(1);
    const x = quantizeDirection(0.6);
    const y = quantizeDirection(-0.8);
    expect(await conn.nextBinary()).toStrictEqual(encodeBinaryInput(4201, [{ seq: 1, x, y }]));
    expect(client.move(1, 1, 3)).toBe(4); // scaled to length 1
    const d = quantizeDirection(Math.SQRT1_2);
    expect(await conn.nextBinary()).toStrictEqual(
      encodeBinaryInput(4201, [{ seq: 2, x: d, y: d }, { seq: 3, x: d, y: d }, { seq: 4, x: d, y: d }]),
    );

    const world = client.state.world!;
    const dist = stepDistance(town.playerSpeed, town.tickRate);
    let p = { x: start.x, y: start.y };
    for (const [dx, dy] of [[x, y], [d, d], [d, d], [d, d]] as const) p = move(world, p.x, p.y, dx, dy, dist);
    expect(client.state.predicted).toStrictEqual(p);
  });

  it('sends movement as a movement.input command with the json codec', async () => {
    const { client, conn } = await connect({ codec: 'json' });
    client.move(0.6, -0.8, 2);
    expect(await conn.nextText()).toStrictEqual({
      v: 1, kind: 'command', seq: 1, feature: 'movement', action: 'input',
      payload: { inputs: [{ seq: 1, x: Math.fround(0.6), y: Math.fround(-0.8) }, { seq: 2, x: Math.fround(0.6), y: Math.fround(-0.8) }] },
    });
  });

  it('resolves each command with the ack of its seq', async () => {
    const { client, conn } = await connect();
    const pickup = client.pickup(412);
    const drop = client.drop('demo-town/loot/3');
    expect(await conn.nextText()).toStrictEqual({ v: 1, kind: 'command', seq: 1, feature: 'loot', action: 'pickup', payload: { entity: 412 } });
    expect(await conn.nextText()).toStrictEqual({ v: 1, kind: 'command', seq: 2, feature: 'inventory', action: 'drop', payload: { item: 'demo-town/loot/3' } });
    const inventory = [{ id: 'demo-town/loot/412', kind: 'gem' }];
    conn.sendJSON('ack', { seq: 2, ok: false, code: 'not_owner', message: 'not yours' });
    conn.sendJSON('ack', { seq: 1, ok: true, inventory });
    expect(await drop).toStrictEqual({ seq: 2, ok: false, code: 'not_owner', message: 'not yours' });
    expect(await pickup).toStrictEqual({ seq: 1, ok: true, inventory });
    expect(client.state.inventory).toStrictEqual(inventory);
  });

  it('sends an attack as combat.attack with its target', async () => {
    const { client, conn } = await connect();
    const attack = client.attack(40);
    expect(await conn.nextText()).toStrictEqual({ v: 1, kind: 'command', seq: 1, feature: 'combat', action: 'attack', payload: { target: 40 } });
    conn.sendJSON('ack', { seq: 1, ok: false, code: 'cooldown', message: 'attacks are still cooling down' });
    expect(await attack).toMatchObject({ ok: false, code: 'cooldown' });
  });

  it('sends a door toggle as door.toggle with the door', async () => {
    const { client, conn } = await connect();
    const toggle = client.toggleDoor(33);
    expect(await conn.nextText()).toStrictEqual({ v: 1, kind: 'command', seq: 1, feature: 'door', action: 'toggle', payload: { door: 33 } });
    conn.sendJSON('ack', { seq: 1, ok: false, code: 'invalid_action', message: 'the door is locked: it opens with the key' });
    expect(await toggle).toMatchObject({ ok: false, code: 'invalid_action' });
  });

  it('predicts with the doors of the snapshots: a closed one blocks, an open one does not', async () => {
    const { client, conn } = await connect({ mapgen, codec: 'json' }, {
      map: 'crypt', mapConfig: crypt.config, mapHash: crypt.hash, tickRate: crypt.tickRate, playerSpeed: crypt.playerSpeed,
    });
    const world = client.state.world!;
    const { door, from, dir } = crossing(world);
    const closed = doorEntity(door, 0, 900);
    let applied = once(client, 'snapshot');
    conn.sendJSON('snapshot', {
      tick: 10, ackSeq: 0, mode: 'full',
      presence: { add: [{ id: PLAYER, kind: 1 }, { id: 900, kind: 4 }] },
      movement: [{ id: PLAYER, x: from.x, y: from.y }, { id: 900, x: closed.x, y: closed.y }],
      combat: [{ id: PLAYER, hp: 100 }],
      doors: [{ id: 900, open: false }],
    });
    await applied;
    expect(client.state.entities.get(900)).toStrictEqual(closed);

    const steps = 20;
    client.move(dir.x, dir.y, steps);
    await conn.nextText();
    const dist = stepDistance(crypt.playerSpeed, crypt.tickRate);
    const walk = (w: Parameters<typeof move>[0]) => {
      let p = from;
      for (let i = 0; i < steps; i++) p = move(w, p.x, p.y, Math.fround(dir.x), Math.fround(dir.y), dist);
      return p;
    };
    expect(client.state.predicted).toStrictEqual(walk(withClosedDoors(world, [closed])));
    expect(inDoor(door, client.state.predicted)).toBe(false);

    // Someone opened it before the server applied any of the inputs: the replay goes through.
    applied = once(client, 'snapshot');
    conn.sendJSON('snapshot', { tick: 11, ackSeq: 0, mode: 'delta', baseTick: 10, doors: [{ id: 900, open: true }] });
    await applied;
    expect(client.state.entities.get(900)?.state).toBe(DoorState.Open);
    expect(client.state.predicted).toStrictEqual(walk(world));
    expect(client.state.predicted).not.toStrictEqual(walk(withClosedDoors(world, [closed])));
  });

  it('empties the inventory on an ok drop that leaves nothing (the server omits an empty inventory)', async () => {
    const { client, conn } = await connect();
    const pickup = client.pickup(412);
    await conn.nextText();
    conn.sendJSON('ack', { seq: 1, ok: true, inventory: [{ id: 'demo-town/loot/412', kind: 'gem' }] });
    await pickup;
    const refused = client.drop('demo-town/loot/9');
    await conn.nextText();
    conn.sendJSON('ack', { seq: 2, ok: false, code: 'not_owner', message: 'not yours' });
    await refused;
    expect(client.state.inventory).toHaveLength(1); // a refusal changes nothing
    const drop = client.drop('demo-town/loot/412');
    await conn.nextText();
    conn.sendJSON('ack', { seq: 3, ok: true });
    await drop;
    expect(client.state.inventory).toStrictEqual([]);
  });

  it('measures the round trip with ping', async () => {
    const { client, conn } = await connect();
    client.ping();
    const ping = await conn.nextText();
    expect(ping).toMatchObject({ v: 1, kind: 'ping', payload: { clientTime: expect.any(Number) } });
    expect(ping.seq).toBeUndefined();
    expect(ping.ackTick).toBeUndefined(); // no snapshot applied yet
    conn.sendJSON('pong', { clientTime: (ping.payload as { clientTime: number }).clientTime, serverTime: Date.now() });
    await expect.poll(() => client.state.rttMs).toBeGreaterThanOrEqual(0);
  });

  it('reports server errors and events', async () => {
    const { client, conn } = await connect();
    const error = once(client, 'serverError');
    const event = once(client, 'event');
    conn.sendJSON('error', { code: 'rate_limited', message: 'slow down' });
    conn.sendJSON('event', { type: 'join', tick: 4201, entity: 40, x: 99, y: 70.5 });
    expect(await error).toStrictEqual({ code: 'rate_limited', message: 'slow down' });
    expect(await event).toStrictEqual({ type: 'join', tick: 4201, entity: 40, x: 99, y: 70.5 });
    expect(client.state.connected).toBe(true);
  });

  it('passes on door, room_cleared and boss_phase events with their fields', async () => {
    const { client, conn } = await connect();
    const seen: GameEvent[] = [];
    const third = new Promise<void>((resolve) => client.on('event', (e) => { seen.push(e); if (seen.length === 3) resolve(); }));
    conn.sendJSON('event', { id: 1, type: 'door', tick: 4201, entity: 33, x: 192, y: 100, detail: 'open' });
    conn.sendJSON('event', { id: 2, type: 'room_cleared', tick: 4202, room: 2613905155, x: 192, y: 140 });
    conn.sendJSON('event', { id: 3, type: 'boss_phase', tick: 4203, entity: 61, x: 208, y: 224, phase: 2 });
    await third;
    const [door, cleared, phase] = seen as [GameEvent, GameEvent, GameEvent];
    expect(isEvent(door, EventType.Door) && door.detail).toBe('open');
    expect(isEvent(cleared, EventType.RoomCleared) && cleared.room).toBe(2613905155);
    expect(isEvent(phase, EventType.BossPhase) && [phase.entity, phase.phase]).toStrictEqual([61, 2]);
    expect(isEvent(phase, EventType.Door)).toBe(false);
  });

  it('closes: the server sees 1000, pending commands fail, closed is emitted', async () => {
    const { client, conn } = await connect();
    const pending = client.pickup(412);
    await conn.nextText();
    const closed = once(client, 'closed');
    client.close();
    expect(await closed).toStrictEqual({ code: 1000, reason: 'closed by the client' });
    await expect(pending).rejects.toMatchObject({ code: 'closed' });
    await expect(client.pickup(1)).rejects.toMatchObject({ code: 'closed' });
    expect((await conn.closed).code).toBe(1000);
  });
});

describe('inventory', () => {
  const sword = { id: 'demo-town/loot/3', kind: 'sword' };
  const gem = { id: 'demo-town/loot/9', kind: 'gem' };
  const skills = [{ name: 'melee', level: 2, xp: 6 }, { name: 'swords', level: 1, xp: 0 }];
  const light: Inventory = { items: [{ ...sword, slot: 'weapon' }, gem], weight: 3.1, skills };
  const heavy: Inventory = { items: [{ ...sword, slot: 'weapon' }, gem, { id: 'demo-town/loot/12', kind: 'hide' }], weight: 26, skills };
  /** Nothing blocks: the client predicts without a map here. */
  const open = { blocked: () => false };
  const slow = encumberedStepDistance(town.playerSpeed, town.tickRate, BAG, 26);
  const full = stepDistance(town.playerSpeed, town.tickRate);

  /** The inventory events emitted, in order. */
  function inventoryEvents(client: RoomClient): Inventory[] {
    const seen: Inventory[] = [];
    client.on('inventory', (inv) => seen.push(inv));
    return seen;
  }

  it('takes the welcome\'s bag and items, then the JSON snapshots\' inventory channel, and emits each change once', async () => {
    const { client, conn } = await connect({ codec: 'json' }, { inventory: [sword] });
    expect(client.state).toMatchObject({ bag: BAG, inventory: [sword], weight: 0, skills: [], speedFactor: 1 });
    const seen = inventoryEvents(client);
    const snapshot = async (tick: number, extra: object) => {
      const applied = once(client, 'snapshot');
      conn.sendJSON('snapshot', { tick, ackSeq: 0, mode: 'delta', baseTick: tick - 1, ...extra });
      await applied;
    };
    let applied = once(client, 'snapshot');
    conn.sendJSON('snapshot', {
      tick: 10, ackSeq: 0, mode: 'full', presence: { add: [{ id: PLAYER, kind: 1 }] },
      movement: [{ id: PLAYER, x: 100, y: 100 }], combat: [{ id: PLAYER, hp: 100 }], inventory: light,
    });
    await applied;
    expect(client.state).toMatchObject({ inventory: light.items, weight: 3.1, skills, speedFactor: 1 });
    expect(seen).toStrictEqual([light]);

    await snapshot(11, {}); // no inventory: unchanged
    await snapshot(12, { inventory: light }); // the same again: no event
    expect(seen).toHaveLength(1);
    await snapshot(13, { inventory: heavy });
    expect(seen).toStrictEqual([light, heavy]);
    expect(client.state).toMatchObject({ inventory: heavy.items, weight: 26, speedFactor: Math.fround(0.6) });
    expect(bagItems(client.state.inventory)).toStrictEqual([gem, heavy.items[2]]);
    expect(wornItems(client.state.inventory)).toStrictEqual({ weapon: { ...sword, slot: 'weapon' } });

    // Encumbered, the prediction walks at 0.6 of the speed, as the server will.
    client.move(1, 0);
    await conn.nextText();
    expect(client.state.predicted).toStrictEqual(move(open, 100, 100, 1, 0, slow));
    applied = once(client, 'snapshot');
    conn.sendJSON('snapshot', { tick: 14, ackSeq: 0, mode: 'delta', baseTick: 13 });
    await applied;
    expect(client.state.predicted).toStrictEqual(move(open, 100, 100, 1, 0, slow));
  });

  it('reads the inventory channel of binary snapshots and replays the pending inputs at the latest weight', async () => {
    const { client, conn } = await connect();
    const seen = inventoryEvents(client);
    let applied = once(client, 'snapshot');
    conn.sendBinary(encodeSnapshot({ tick: 4201, ackSeq: 0, inventory: heavy }, [self(100, 100)]));
    await applied;
    expect(client.state).toMatchObject({ inventory: heavy.items, weight: 26, skills, speedFactor: Math.fround(0.6) });
    expect(seen).toStrictEqual([heavy]);

    client.move(1, 0, 2);
    await conn.nextBinary();
    const once1 = move(open, 100, 100, 1, 0, slow);
    expect(client.state.predicted).toStrictEqual(move(open, once1.x, once1.y, 1, 0, slow));

    // The server moved input 1 slowly, then the player dropped the hide: input 2 replays at full speed.
    applied = once(client, 'snapshot');
    conn.sendBinary(encodeSnapshot({ tick: 4202, ackSeq: 1, baseTick: 4201, inventory: light }, [self(once1.x, once1.y)], [self(100, 100)]));
    await applied;
    expect(client.state).toMatchObject({ weight: 3.1, speedFactor: 1 });
    const self1 = client.state.self!;
    expect(client.state.predicted).toStrictEqual(move(open, self1.x, self1.y, 1, 0, full));
    expect(seen).toStrictEqual([heavy, light]);
  });

  it('takes the pools, buffs and cooldowns of the inventory channel, and sends cast as a combat command', async () => {
    const { client, conn } = await connect({ codec: 'json' }, { inventory: [gem] });
    const owned: Inventory = {
      items: [gem], weight: 0.1, skills,
      resources: { mana: 80, manaMax: 100, stamina: 70, staminaMax: 100 },
      buffs: [{ ability: 'battle cry', attack: 5, until: 340 }],
      cooldowns: [{ ability: 'firebolt', ready: 130 }],
    };
    const applied = once(client, 'snapshot');
    conn.sendJSON('snapshot', {
      tick: 40, ackSeq: 0, mode: 'full', presence: { add: [{ id: PLAYER, kind: 1 }] },
      movement: [{ id: PLAYER, x: 100, y: 100 }], combat: [{ id: PLAYER, hp: 100 }], inventory: owned,
    });
    await applied;
    expect(client.state).toMatchObject({ resources: owned.resources, buffs: owned.buffs, cooldowns: owned.cooldowns });
    const bolt = client.cast('firebolt', 40);
    expect(await conn.nextText()).toMatchObject({
      v: 1, kind: 'command', seq: 1, feature: 'combat', action: 'cast', payload: { ability: 'firebolt', target: 40 },
    });
    conn.sendJSON('ack', { seq: 1, ok: false, code: 'not_enough_mana', message: 'firebolt costs more mana than you have' });
    expect(await bolt).toMatchObject({ ok: false, code: ErrorCode.NotEnoughMana });
    const cry = client.cast('battle cry');
    expect(await conn.nextText()).toMatchObject({ action: 'cast', payload: { ability: 'battle cry' } });
    conn.sendJSON('ack', { seq: 2, ok: true });
    expect(await cry).toMatchObject({ ok: true });
  });

  it('sends use as an inventory command and takes the items of its ack', async () => {
    const potion = { id: 'p1', kind: 'potion' };
    const { client, conn } = await connect({}, { inventory: [potion, gem] });
    const used = client.use(potion.id);
    expect(await conn.nextText()).toStrictEqual({
      v: 1, kind: 'command', seq: 1, feature: 'inventory', action: 'use', payload: { item: potion.id },
    });
    conn.sendJSON('ack', { seq: 1, ok: true, inventory: [gem] });
    expect(await used).toStrictEqual({ seq: 1, ok: true, inventory: [gem] });
    expect(bagItems(client.state.inventory)).toStrictEqual([gem]);
    const refused = client.use(gem.id);
    await conn.nextText();
    conn.sendJSON('ack', { seq: 2, ok: false, code: 'not_usable', message: 'that item cannot be used' });
    expect(await refused).toMatchObject({ ok: false, code: ErrorCode.NotUsable });
    expect(bagItems(client.state.inventory)).toStrictEqual([gem]);
  });

  it('sends equip and unequip as inventory commands and takes the items of their acks', async () => {
    const { client, conn } = await connect({}, { inventory: [sword, gem] });
    const seen = inventoryEvents(client);
    const equip = client.equip(sword.id, 'weapon');
    expect(await conn.nextText()).toStrictEqual({
      v: 1, kind: 'command', seq: 1, feature: 'inventory', action: 'equip', payload: { item: sword.id, slot: 'weapon' },
    });
    conn.sendJSON('ack', { seq: 1, ok: true, inventory: [gem, { ...sword, slot: 'weapon' }] });
    expect(await equip).toStrictEqual({ seq: 1, ok: true, inventory: [gem, { ...sword, slot: 'weapon' }] });
    expect(wornItems(client.state.inventory)).toStrictEqual({ weapon: { ...sword, slot: 'weapon' } });
    expect(seen).toStrictEqual([{ items: [gem, { ...sword, slot: 'weapon' }], weight: 0, skills: [] }]);

    const locked = client.unequip('weapon');
    expect(await conn.nextText()).toStrictEqual({
      v: 1, kind: 'command', seq: 2, feature: 'inventory', action: 'unequip', payload: { slot: 'weapon' },
    });
    conn.sendJSON('ack', { seq: 2, ok: false, code: 'equip_locked', message: 'the slot changed less than 1 s ago' });
    expect(await locked).toMatchObject({ ok: false, code: ErrorCode.EquipLocked });
    expect(client.state.inventory).toStrictEqual([gem, { ...sword, slot: 'weapon' }]); // a refusal changes nothing

    const unequip = client.unequip('weapon');
    await conn.nextText();
    conn.sendJSON('ack', { seq: 3, ok: true, inventory: [gem, sword] });
    await unequip;
    expect(bagItems(client.state.inventory)).toStrictEqual([gem, sword]);
    expect(wornItems(client.state.inventory)).toStrictEqual({});
    expect(seen).toHaveLength(2);
  });

  it('answers each equipment refusal with its code', async () => {
    const { client, conn } = await connect();
    const codes = [ErrorCode.IllegalSlot, ErrorCode.SkillGate, ErrorCode.ItemNotFound, ErrorCode.InventoryFull];
    expect(codes).toStrictEqual(['illegal_slot', 'skill_gate', 'item_not_found', 'inventory_full']);
    const acks = codes.map((_, i) => (i % 2 === 0 ? client.equip('x', 'head') : client.unequip('offhand')));
    for (const [i, code] of codes.entries()) {
      await conn.nextText();
      conn.sendJSON('ack', { seq: i + 1, ok: false, code, message: code });
    }
    expect((await Promise.all(acks)).map((a) => a.code)).toStrictEqual(codes);
    expect(client.state.inventory).toStrictEqual([]);
  });

  it('stops on an inventory channel that is not the server\'s object', async () => {
    const { client, conn } = await connect({ codec: 'json' });
    const closed = once(client, 'closed');
    conn.sendJSON('snapshot', { tick: 10, ackSeq: 0, mode: 'full', inventory: { items: [], weight: 1, skills: [], bogus: 1 } });
    expect((await closed).error).toMatchObject({ code: 'bad_request', message: 'snapshot: inventory: unknown field "bogus"' });
  });

  it('keeps the resumed welcome\'s items over the replayed answers to equipment changes the server had handled', async () => {
    const { client, conn } = await connect({}, { inventory: [sword] });
    const equip = client.equip(sword.id, 'weapon'); // seq 1: handled, its ack lost
    const unequip = client.unequip('weapon'); // seq 2: handled, its ack lost
    await conn.nextText();
    await conn.nextText();
    const resumed = once(client, 'resumed');
    client.dropConnection();
    const again = await room.nextConnection();
    await again.nextText(); // hello
    again.sendJSON('welcome', welcome({ resumed: true, lastSeq: 2, resumeToken: 'resume-2', inventory: [sword] }));
    await resumed;
    // Both are sent again (the server de-duplicates them) and answered with their first acks, in any order.
    expect(await again.nextText()).toMatchObject({ seq: 1, action: 'equip' });
    expect(await again.nextText()).toMatchObject({ seq: 2, action: 'unequip' });
    again.sendJSON('ack', { seq: 2, ok: true, inventory: [sword] });
    again.sendJSON('ack', { seq: 1, ok: true, inventory: [{ ...sword, slot: 'weapon' }] });
    expect(await unequip).toMatchObject({ ok: true });
    expect(await equip).toMatchObject({ ok: true });
    expect(client.state.inventory).toStrictEqual([sword]);
  });

  it('empties the items on a resume whose welcome has none (the server leaves them out)', async () => {
    const { client } = await connect({}, { inventory: [sword] });
    const resumed = once(client, 'resumed');
    client.dropConnection();
    const again = await room.nextConnection();
    await again.nextText();
    again.sendJSON('welcome', welcome({ resumed: true, resumeToken: 'resume-2' }));
    await resumed;
    expect(client.state.inventory).toStrictEqual([]);
  });
});

describe('transfers', () => {
  const transferTo = (endpoint: string) => ({
    endpoint, ticket: 'transfer-ticket', map: 'crypt', instance: 'demo-crypt-k3v9q', id: 'tr-1',
    returnTicket: 'return-ticket', expiresAt: Date.now() + 10_000,
  });

  /** Walks the client through portal 7 of conn's map towards endpoint. */
  async function enterPortal(client: RoomClient, conn: Connection, endpoint: string): Promise<void> {
    const ack = client.enterPortal(7);
    expect(await conn.nextText()).toMatchObject({ kind: 'command', seq: 1, feature: 'portal', action: 'enter', payload: { portal: 7 } });
    conn.sendJSON('ack', { seq: 1, ok: true });
    conn.sendJSON('transfer', transferTo(endpoint));
    conn.close(1000, 'transferred');
    expect(await ack).toStrictEqual({ seq: 1, ok: true });
  }

  it('follows a transfer to the destination with its ticket', async () => {
    const dest = await startRoom();
    const { client, conn } = await connect({ mapgen });
    const before = once(client, 'snapshot');
    conn.sendBinary(encodeSnapshot({ tick: 4201, ackSeq: 0 }, [self(100, 100), npc(1, 1)]));
    await before;
    client.move(1, 0);
    await conn.nextBinary();
    const events = recordEvents(client, ['transfer', 'welcome', 'resumed', 'reconnecting']);
    const transferred = once(client, 'transfer');
    const welcomed = once(client, 'welcome');

    await enterPortal(client, conn, dest.url);
    const there = await dest.nextConnection();
    expect(there.protocols).toStrictEqual(['roomkeeper.v1']);
    expect(await there.nextText()).toStrictEqual({ v: 1, kind: 'hello', payload: { ticket: 'transfer-ticket', codec: 'binary' } });
    there.sendJSON('welcome', welcome({ map: 'crypt', instance: 'demo-crypt-k3v9q', tick: 90, resumeToken: 'resume-crypt',
      mapConfig: crypt.config, mapHash: crypt.hash, transfer: 'tr-1' }));

    expect(await transferred).toMatchObject({ map: 'crypt', id: 'tr-1' });
    expect((await welcomed).map).toBe('crypt');
    expect(events).toStrictEqual(['transfer', 'welcome']);
    const s = client.state;
    expect(s).toMatchObject({ connected: true, map: 'crypt', instance: 'demo-crypt-k3v9q', tick: 90, transfers: 1, returns: 0 });
    expect(s.world?.hash).toBe(crypt.hash);
    expect(s.entities.size).toBe(0);
    expect(s.self).toBeUndefined();

    // Input seqs start afresh, and no snapshot of the old map is acknowledged.
    expect(client.move(0, 1)).toBe(1);
    expect(await there.nextBinary()).toStrictEqual(encodeBinaryInput(0, [{ seq: 1, x: 0, y: 1 }]));
    // A delta against a tick of the old map is not applied against it.
    const closed = once(client, 'closed');
    there.sendBinary(encodeSnapshot({ tick: 91, ackSeq: 0, baseTick: 4201 }, [self(1, 1)], [self(1, 1)]));
    expect((await closed).error?.code).toBe('bad_request');
  });

  it('returns with the return ticket when the destination refuses', async () => {
    const dest = await startRoom();
    const { client, conn } = await connect();
    const welcomed = once(client, 'welcome');
    const events = recordEvents(client, ['transfer', 'welcome', 'closed']);
    await enterPortal(client, conn, dest.url);

    const there = await dest.nextConnection();
    expect((await there.nextText()).payload).toStrictEqual({ ticket: 'transfer-ticket', codec: 'binary' });
    there.sendJSON('error', { code: 'token_expired', message: 'the ticket has expired' });
    there.close(1008, 'token_expired');

    const back = await room.nextConnection();
    expect(await back.nextText()).toStrictEqual({ v: 1, kind: 'hello', payload: { ticket: 'return-ticket', codec: 'binary' } });
    back.sendJSON('welcome', welcome({ resumeToken: 'resume-back', transfer: 'tr-1' }));
    expect((await welcomed).map).toBe('town');
    expect(events).toStrictEqual(['welcome']);
    expect(client.state).toMatchObject({ connected: true, map: 'town', transfers: 0, returns: 1 });
  });

  it('returns with the return ticket when the destination stays unreachable', async () => {
    const gone = await RoomServer.start();
    await gone.stop();
    const { client, conn } = await connect();
    const welcomed = once(client, 'welcome');
    await enterPortal(client, conn, gone.url); // tried five times, a few seconds
    const back = await room.nextConnection();
    expect((await back.nextText()).payload).toStrictEqual({ ticket: 'return-ticket', codec: 'binary' });
    back.sendJSON('welcome', welcome());
    await welcomed;
    expect(client.state.returns).toBe(1);
  });

  /** Refuses the next connection to server with code, after checking its hello's payload (the codec aside). */
  async function refuse(server: RoomServer, payload: object, code: string): Promise<void> {
    const c = await server.nextConnection();
    expect((await c.nextText()).payload).toStrictEqual({ ...payload, codec: 'binary' });
    c.sendJSON('error', { code, message: `refused: ${code}` });
    c.close(1008, code);
  }

  it('tries the destination again with the same ticket while it refuses the moment', async () => {
    const dest = await startRoom();
    const { client, conn } = await connect();
    const events = recordEvents(client, ['transfer', 'welcome', 'reconnecting', 'closed']);
    const welcomed = once(client, 'welcome');
    await enterPortal(client, conn, dest.url);
    await refuse(dest, { ticket: 'transfer-ticket' }, 'persistence_unavailable');
    await refuse(dest, { ticket: 'transfer-ticket' }, 'persistence_unavailable');
    const there = await dest.nextConnection();
    expect((await there.nextText()).payload).toStrictEqual({ ticket: 'transfer-ticket', codec: 'binary' });
    there.sendJSON('welcome', welcome({ map: 'crypt', instance: 'demo-crypt-k3v9q', resumeToken: 'resume-crypt', transfer: 'tr-1' }));
    expect((await welcomed).map).toBe('crypt');
    expect(events).toStrictEqual(['transfer', 'welcome']);
    expect(client.state).toMatchObject({ connected: true, map: 'crypt', transfers: 1, returns: 0 });
  });

  it('tries the way back again while the source refuses the moment', async () => {
    const dest = await startRoom();
    const { client, conn } = await connect();
    const welcomed = once(client, 'welcome');
    await enterPortal(client, conn, dest.url);
    await refuse(dest, { ticket: 'transfer-ticket' }, 'token_expired'); // the player's: not tried again
    await refuse(room, { ticket: 'return-ticket' }, 'room_full');
    const back = await room.nextConnection();
    expect((await back.nextText()).payload).toStrictEqual({ ticket: 'return-ticket', codec: 'binary' });
    back.sendJSON('welcome', welcome({ resumeToken: 'resume-back', transfer: 'tr-1' }));
    expect((await welcomed).map).toBe('town');
    expect(client.state).toMatchObject({ connected: true, transfers: 0, returns: 1 });
  });

  it('joins again, as after a crash, when neither the destination nor the return takes the player', async () => {
    const dest = await startRoom();
    const { client, conn } = await connect();
    const events = recordEvents(client, ['transfer', 'resumed', 'rejoined', 'welcome', 'closed']);
    const rejoined = once(client, 'rejoined');
    await enterPortal(client, conn, dest.url);
    await refuse(dest, { ticket: 'transfer-ticket' }, 'token_expired');
    await refuse(room, { ticket: 'return-ticket' }, 'token_replayed');
    // The source gave the seat away with the transfer: its resume is refused.
    await refuse(room, { resume: 'resume-1', lastSeq: 1 }, 'unauthorized');
    const fresh = await room.nextConnection();
    expect((await fresh.nextText()).payload).toStrictEqual({ ticket: 'ticket-1', codec: 'binary' });
    fresh.sendJSON('welcome', welcome({ playerId: 18, resumeToken: 'resume-new' }));
    await rejoined;
    expect(events).toStrictEqual(['rejoined', 'welcome']);
    expect(client.state).toMatchObject({ connected: true, map: 'town', playerId: 18, transfers: 0, returns: 0, rejoins: 1 });
    expect(api.calls.map((c) => c.path.split('/').pop())).toStrictEqual(['join', 'join']);
  });

  it('gives up with resume_failed, naming the transfer, when joining again fails too', async () => {
    const dest = await startRoom();
    const { client, conn } = await connect();
    const closed = once(client, 'closed');
    await enterPortal(client, conn, dest.url);
    await refuse(dest, { ticket: 'transfer-ticket' }, 'token_expired');
    await refuse(room, { ticket: 'return-ticket' }, 'token_replayed');
    await refuse(room, { resume: 'resume-1', lastSeq: 1 }, 'unauthorized');
    await refuse(room, { ticket: 'ticket-1' }, 'unauthorized');
    const e = await closed;
    expect(e.error?.code).toBe('resume_failed');
    expect(e.error?.message).toMatch(/transfer to crypt failed .* and so did the return .*; then could not resume the seat or join again/);
  });

  it('stops when neither the destination nor the return takes the player and rejoining is off', async () => {
    const dest = await startRoom();
    const { client, conn } = await connect({ resume: { baseDelayMs: 1, maxDelayMs: 4, rejoin: false } });
    const events = recordEvents(client, ['reconnecting', 'closed']);
    const closed = once(client, 'closed');
    await enterPortal(client, conn, dest.url);
    await refuse(dest, { ticket: 'transfer-ticket' }, 'token_expired');
    await refuse(room, { ticket: 'return-ticket' }, 'token_expired');
    const e = await closed;
    expect(e.error?.code).toBe('token_expired');
    expect(e.error?.message).toContain('crypt');
    expect(events).toStrictEqual(['closed']);
  });
});

describe('resuming', () => {
  it('follows the transfer a resume is answered with (the seat left through a portal while away)', async () => {
    const dest = await startRoom();
    const { client, conn } = await connect();
    const events = recordEvents(client, ['transfer', 'welcome', 'resumed', 'rejoined']);
    const welcomed = once(client, 'welcome');
    client.dropConnection();
    await conn.closed;

    const again = await room.nextConnection();
    expect((await again.nextText()).payload).toMatchObject({ resume: 'resume-1' });
    again.sendJSON('transfer', {
      endpoint: dest.url, ticket: 'transfer-ticket', map: 'crypt', instance: 'demo-crypt-k3v9q', id: 'tr-1',
      returnTicket: 'return-ticket', expiresAt: Date.now() + 10_000,
    });
    again.close(1000, 'transferred');

    const there = await dest.nextConnection();
    expect((await there.nextText()).payload).toStrictEqual({ ticket: 'transfer-ticket', codec: 'binary' });
    there.sendJSON('welcome', welcome({ map: 'crypt', instance: 'demo-crypt-k3v9q', resumeToken: 'resume-crypt',
      mapConfig: crypt.config, mapHash: crypt.hash, transfer: 'tr-1' }));
    expect((await welcomed).map).toBe('crypt');
    expect(events).toStrictEqual(['transfer', 'welcome']);
    expect(client.state).toMatchObject({ connected: true, map: 'crypt', transfers: 1, resumes: 0, rejoins: 0 });
  });

  it('resumes after a drop with the token and lastSeq, and sends the lost commands again', async () => {
    const { client, conn } = await connect({ mapgen });
    const start = town.walks[0]!;
    let applied = once(client, 'snapshot');
    conn.sendBinary(encodeSnapshot({ tick: 4201, ackSeq: 0 }, [self(start.x, start.y)]));
    await applied;
    client.move(1, 0);
    client.move(1, 0);
    await conn.nextBinary();
    await conn.nextBinary();

    const first = client.pickup(412); // seq 1: acked
    const toggle = client.command('door', 'toggle', { door: 3 }); // seq 2: handled, its ack lost
    const dropped = client.drop('demo-town/loot/9'); // seq 3: handled (de-duplicated), its ack lost
    const second = client.pickup(413); // seq 4: lost with the connection
    for (let i = 0; i < 4; i++) await conn.nextText();
    conn.sendJSON('ack', { seq: 1, ok: true });
    await first;

    const reconnecting = once(client, 'reconnecting');
    const resumed = once(client, 'resumed');
    client.dropConnection();
    expect((await conn.closed).code).toBe(4000);
    expect((await reconnecting).attempt).toBe(1);

    const again = await room.nextConnection();
    expect(await again.nextText()).toStrictEqual({ v: 1, kind: 'hello', payload: { resume: 'resume-1', lastSeq: 4, codec: 'binary' } });
    again.sendJSON('welcome', welcome({ resumed: true, lastSeq: 3, resumeToken: 'resume-2' }));
    expect(await resumed).toMatchObject({ resumed: true, lastSeq: 3 });
    await expect(toggle).rejects.toMatchObject({ code: 'closed' });
    expect(await again.nextText()).toMatchObject({ kind: 'command', seq: 3, feature: 'inventory', action: 'drop' });
    expect(await again.nextText()).toMatchObject({ kind: 'command', seq: 4, feature: 'loot', action: 'pickup', payload: { entity: 413 } });
    again.sendJSON('ack', { seq: 3, ok: true });
    again.sendJSON('ack', { seq: 4, ok: false, code: 'already_taken' });
    expect(await dropped).toMatchObject({ seq: 3, ok: true });
    expect(await second).toMatchObject({ seq: 4, ok: false });
    expect(client.state).toMatchObject({ connected: true, resumes: 1, map: 'town' });

    // The movement inputs the server has not applied stay predicted.
    const dist = stepDistance(town.playerSpeed, town.tickRate);
    const afterOne = move(client.state.world!, start.x, start.y, 1, 0, dist);
    applied = once(client, 'snapshot');
    again.sendBinary(encodeSnapshot({ tick: 4300, ackSeq: 1 }, [self(afterOne.x, afterOne.y)]));
    await applied;
    const server = client.state.self!;
    expect(client.state.predicted).toStrictEqual(move(client.state.world!, server.x, server.y, 1, 0, dist));

    // The next resume uses the new token.
    client.dropConnection();
    const third = await room.nextConnection();
    expect((await third.nextText()).payload).toStrictEqual({ resume: 'resume-2', lastSeq: 4, codec: 'binary' });
  });

  it('resumes from the last event it got and passes each event on once', async () => {
    const { client, conn } = await connect();
    const seen: number[] = [];
    client.on('event', (e) => seen.push(e.id ?? 0));
    const second = new Promise<void>((resolve) => client.on('event', (e) => { if (e.id === 7) resolve(); }));
    conn.sendJSON('event', { id: 5, type: 'join', tick: 4201, entity: 40 });
    conn.sendJSON('event', { id: 7, type: 'death', tick: 4202, entity: 40, by: 17 });
    await second;
    client.dropConnection();
    const again = await room.nextConnection();
    expect((await again.nextText()).payload).toStrictEqual({ resume: 'resume-1', lastEvent: 7, codec: 'binary' });
    again.sendJSON('welcome', welcome({ resumed: true, resumeToken: 'resume-2' }));
    const ninth = new Promise<void>((resolve) => client.on('event', (e) => { if (e.id === 9) resolve(); }));
    again.sendJSON('event', { id: 7, type: 'death', tick: 4202, entity: 40, by: 17 }); // sent twice: passed on once
    again.sendJSON('event', { id: 9, type: 'leave', tick: 4210, entity: 41 });
    await ninth;
    expect(seen).toStrictEqual([5, 7, 9]);
  });

  it('gives up with resume_failed when the seat is gone and rejoining is off', async () => {
    const { client } = await connect({ resume: { baseDelayMs: 1, maxDelayMs: 4, rejoin: false } });
    const closed = once(client, 'closed');
    client.dropConnection();
    const again = await room.nextConnection();
    await again.nextText();
    again.sendJSON('error', { code: 'unauthorized', message: 'unknown or expired resume token: join with a new ticket' });
    again.close(1008, 'unauthorized');
    const e = await closed;
    expect(e.error).toMatchObject({ code: 'resume_failed', message: expect.stringContaining('unknown or expired resume token') });
    expect(api.calls).toHaveLength(1); // the first join only
  });

  it('gives up with resume_failed after its attempts', async () => {
    const { client, conn } = await connect({ resume: { attempts: 3, baseDelayMs: 1, maxDelayMs: 2 } });
    api.answer = () => ({ status: 200, body: { endpoint: room.url, map: 'town', instance: 'demo-town' } });
    const attempts: number[] = [];
    client.on('reconnecting', (e) => attempts.push(e.attempt));
    const closed = once(client, 'closed');
    await room.stop(); // nothing listens any more
    await conn.closed;
    const e = await closed;
    expect(e.error?.code).toBe('resume_failed');
    expect(e.error?.message).toContain('could not resume the seat');
    expect(attempts).toStrictEqual([1, 2, 3]);
    // The third try asked the join API where the map runs (still there: down).
    expect(api.calls.map((c) => c.path)).toStrictEqual(['/v1/namespaces/default/gamerooms/demo/join', '/v1/namespaces/default/gamerooms/demo/resume']);
  });

  it('does not resume after a refusal (1008)', async () => {
    const { client, conn } = await connect();
    const reconnecting: unknown[] = [];
    client.on('reconnecting', (e) => reconnecting.push(e));
    const closed = once(client, 'closed');
    conn.sendJSON('error', { code: 'unauthorized', message: 'signed in elsewhere' });
    conn.close(1008, 'unauthorized');
    const e = await closed;
    expect(e).toMatchObject({ code: 1008, reason: 'unauthorized', error: { code: 'unauthorized', message: 'signed in elsewhere' } });
    expect(reconnecting).toStrictEqual([]);
    await expect(client.pickup(1)).rejects.toMatchObject({ code: 'closed' });
  });

  it('does not reconnect after a kick (4001), and says why', async () => {
    const { client, conn } = await connect();
    const reconnecting: unknown[] = [];
    client.on('reconnecting', (e) => reconnecting.push(e));
    const closed = once(client, 'closed');
    conn.sendJSON('error', { code: 'kicked', message: 'an operator ended the session: afk' });
    conn.close(4001, 'kicked');
    const e = await closed;
    expect(e).toMatchObject({ code: 4001, reason: 'kicked', error: { code: 'kicked', message: 'an operator ended the session: afk' } });
    expect(reconnecting).toStrictEqual([]);
  });

  it('does not reconnect after a normal close (1000)', async () => {
    const { client, conn } = await connect();
    const reconnecting: unknown[] = [];
    client.on('reconnecting', (e) => reconnecting.push(e));
    const closed = once(client, 'closed');
    conn.close(1000, 'bye');
    const e = await closed;
    expect(e).toMatchObject({ code: 1000, reason: 'bye', error: { code: 'closed', message: expect.stringContaining('1000: bye') } });
    expect(reconnecting).toStrictEqual([]);
  });

  it('resumes with the newest token: a session message replaces the welcome\'s', async () => {
    const { client, conn } = await connect();
    conn.sendJSON('session', { resumeToken: 'resume-fresh', expiresAt: Date.now() + 30_000 });
    const seen = once(client, 'event');
    conn.sendJSON('event', { id: 3, type: 'join', tick: 4201, entity: 40 }); // after the session message: it was read
    await seen;
    const resumed = once(client, 'resumed');
    client.dropConnection();
    const again = await room.nextConnection();
    expect(await again.nextText()).toStrictEqual({ v: 1, kind: 'hello', payload: { resume: 'resume-fresh', lastEvent: 3, codec: 'binary' } });
    again.sendJSON('welcome', welcome({ resumed: true, resumeToken: 'resume-2' }));
    await resumed;

    // The resumed welcome's token is the newest now, until the next session message.
    client.dropConnection();
    const third = await room.nextConnection();
    expect((await third.nextText()).payload).toMatchObject({ resume: 'resume-2' });
  });

  it('resumes on the same endpoint after a server shutdown (server_shutdown, then 1001)', async () => {
    const { client, conn } = await connect();
    const events: string[] = [];
    client.on('event', (e) => events.push(e.type));
    const resumed = once(client, 'resumed');
    conn.sendJSON('event', { type: 'server_shutdown', tick: 4300 });
    conn.close(1001, 'server_shutdown');
    expect((await conn.closed).code).toBe(1001);

    const again = await room.nextConnection();
    expect(await again.nextText()).toStrictEqual({ v: 1, kind: 'hello', payload: { resume: 'resume-1', codec: 'binary' } });
    again.sendJSON('welcome', welcome({ resumed: true, lastSeq: 0, resumeToken: 'resume-2' }));
    expect(await resumed).toMatchObject({ resumed: true });
    expect(events).toStrictEqual(['server_shutdown']);
    expect(client.state).toMatchObject({ connected: true, resumes: 1, rejoins: 0 });
    expect(api.calls).toHaveLength(1); // the same endpoint: no need to ask the join API
  });

  it.each([1001, 1011, 1012, 1013, 1014, 1006])('resumes after a close with %i', async (code) => {
    const { client, conn } = await connect();
    const resumed = once(client, 'resumed');
    if (code === 1006) conn.ws.terminate(); // no close frame: the network failed
    else conn.close(code, 'going');
    const again = await room.nextConnection();
    expect((await again.nextText()).payload).toStrictEqual({ resume: 'resume-1', codec: 'binary' });
    again.sendJSON('welcome', welcome({ resumed: true, resumeToken: 'resume-2' }));
    await resumed;
    expect(client.state.resumes).toBe(1);
  });

  it.each([429, 503])('tries again when the endpoint answers HTTP %i instead of the upgrade', async (status) => {
    const { client } = await connect();
    room.refuseWith = status;
    client.on('reconnecting', (e) => {
      if (e.attempt === 2) room.refuseWith = undefined; // the first try was refused
    });
    const resumed = once(client, 'resumed');
    client.dropConnection();
    const again = await room.nextConnection();
    expect((await again.nextText()).payload).toStrictEqual({ resume: 'resume-1', codec: 'binary' });
    again.sendJSON('welcome', welcome({ resumed: true, resumeToken: 'resume-2' }));
    await resumed;
    expect(room.refused).toBe(1);
  });

  it('tries again after a refusal of the moment (persistence_unavailable)', async () => {
    const { client } = await connect();
    const attempts: number[] = [];
    client.on('reconnecting', (e) => attempts.push(e.attempt));
    const resumed = once(client, 'resumed');
    client.dropConnection();
    const busy = await room.nextConnection();
    await busy.nextText();
    busy.sendJSON('error', { code: 'persistence_unavailable', message: 'the database cannot be reached' });
    busy.close(1008, 'persistence_unavailable');
    const again = await room.nextConnection();
    expect((await again.nextText()).payload).toStrictEqual({ resume: 'resume-1', codec: 'binary' });
    again.sendJSON('welcome', welcome({ resumed: true, resumeToken: 'resume-2' }));
    await resumed;
    expect(attempts).toStrictEqual([1, 2]);
  });

  it('asks the join API where the map runs when its endpoint stays down, and resumes there', async () => {
    const replacement = await startRoom();
    const { client, conn } = await connect({ resume: { attempts: 4, baseDelayMs: 1, maxDelayMs: 4 } });
    api.answer = (call) =>
      call.path.endsWith('/resume')
        ? { status: 200, body: { endpoint: replacement.url, map: 'town', instance: 'demo-town' } }
        : { status: 500, body: { code: 'internal', message: 'no join expected' } };
    let applied = once(client, 'snapshot');
    conn.sendBinary(encodeSnapshot({ tick: 4201, ackSeq: 0 }, [self(100, 100)]));
    await applied;
    // Event ids of a map grow across its pods, from the pod's start in microseconds.
    const oldId = 1_800_000_000_000_123;
    const seen: number[] = [];
    client.on('event', (e) => seen.push(e.id ?? 0));
    const event = once(client, 'event');
    conn.sendJSON('session', { resumeToken: 'resume-fresh', expiresAt: Date.now() + 30_000 });
    conn.sendJSON('event', { id: oldId, type: 'join', tick: 4201, entity: 40 }); // after the session message: it was read
    await event;
    const pickup = client.pickup(412); // seq 1: never acknowledged
    await conn.nextText();

    const attempts: number[] = [];
    client.on('reconnecting', (e) => attempts.push(e.attempt));
    const resumed = once(client, 'resumed');
    await room.stop(); // the pod is gone: its endpoint refuses connections

    const there = await replacement.nextConnection();
    expect(await there.nextText()).toStrictEqual({
      v: 1, kind: 'hello', payload: { resume: 'resume-fresh', lastSeq: 1, lastEvent: oldId, codec: 'binary' },
    });
    expect(api.calls.slice(1).map((c) => [c.method, c.path, c.body])).toStrictEqual([
      ['POST', '/v1/namespaces/default/gamerooms/demo/resume', { resumeToken: 'resume-fresh' }],
    ]);
    expect(attempts).toStrictEqual([1, 2, 3]); // two on the old endpoint, then located

    // The replacement pod knows nothing handled (lastSeq 0): the command goes again, acknowledging no snapshot of the old pod.
    const sword = { id: 'demo-town/loot/412', kind: 'sword' };
    there.sendJSON('welcome', welcome({ resumed: true, lastSeq: 0, tick: 90, resumeToken: 'resume-2', inventory: [sword] }));
    expect(await resumed).toMatchObject({ resumed: true, lastSeq: 0 });
    const again = await there.nextText();
    expect(again).toMatchObject({ kind: 'command', seq: 1, feature: 'loot', action: 'pickup', payload: { entity: 412 } });
    expect(again.ackTick).toBeUndefined();
    there.sendJSON('ack', { seq: 1, ok: false, code: 'already_taken' }); // it took effect before the crash
    expect(await pickup).toMatchObject({ seq: 1, ok: false });
    expect(client.state).toMatchObject({ connected: true, resumes: 1, rejoins: 0, inventory: [sword] });

    // Its events are newer than any of the old pod's; a repeated one is passed on once.
    applied = once(client, 'snapshot');
    const newer = once(client, 'event');
    there.sendJSON('event', { id: oldId, type: 'join', tick: 4201, entity: 40 });
    there.sendJSON('event', { id: oldId + 5_000_000, type: 'leave', tick: 91, entity: 40 });
    there.sendBinary(encodeSnapshot({ tick: 91, ackSeq: 0 }, [self(100, 100)]));
    await newer;
    await applied;
    expect(seen).toStrictEqual([oldId, oldId + 5_000_000]);

    // The next drop resumes at the endpoint found.
    client.dropConnection();
    const next = await replacement.nextConnection();
    expect((await next.nextText()).payload).toMatchObject({ resume: 'resume-2' });
  });

  it('joins again through the join API when the resume is refused with token_replayed', async () => {
    const { client, conn } = await connect({ authKey: 'secret', map: 'town' });
    const lost = client.pickup(412); // seq 1: sent to the seat that is lost
    await conn.nextText();
    api.answer = () => ({ status: 200, body: { endpoint: room.url, map: 'town', ticket: 'ticket-2', expiresAt: '2030-01-01T00:00:00Z' } });
    const events = recordEvents(client, ['resumed', 'rejoined', 'welcome', 'closed']);
    const welcomed = once(client, 'welcome');
    client.dropConnection();

    const again = await room.nextConnection();
    expect((await again.nextText()).payload).toStrictEqual({ resume: 'resume-1', lastSeq: 1, codec: 'binary' });
    again.sendJSON('error', { code: 'token_replayed', message: 'the resume token was used, or the seat was taken again: join with a new ticket' });
    again.close(1008, 'token_replayed');

    const fresh = await room.nextConnection();
    expect(await fresh.nextText()).toStrictEqual({ v: 1, kind: 'hello', payload: { ticket: 'ticket-2', codec: 'binary' } });
    const queued = client.toggleDoor(3); // seq 2: asked for while away
    fresh.sendJSON('welcome', welcome({ playerId: 18, tick: 10, resumeToken: 'resume-new' }));
    expect((await welcomed).playerId).toBe(18);
    expect(events).toStrictEqual(['rejoined', 'welcome']);
    await expect(lost).rejects.toMatchObject({ code: 'closed', message: expect.stringContaining('joined again') });
    expect(await fresh.nextText()).toMatchObject({ kind: 'command', seq: 2, feature: 'door', action: 'toggle', payload: { door: 3 } });
    fresh.sendJSON('ack', { seq: 2, ok: true });
    expect(await queued).toMatchObject({ seq: 2, ok: true });
    expect(client.state).toMatchObject({ connected: true, playerId: 18, tick: 10, resumes: 0, rejoins: 1 });
    const join = '/v1/namespaces/default/gamerooms/demo/join';
    expect(api.calls.map((c) => [c.path, c.body])).toStrictEqual([
      [join, { authKey: 'secret', map: 'town' }],
      [join, { authKey: 'secret', map: 'town' }],
    ]);

    // The new seat is the one resumed next.
    client.dropConnection();
    const next = await room.nextConnection();
    expect((await next.nextText()).payload).toStrictEqual({ resume: 'resume-new', lastSeq: 2, codec: 'binary' });
  });

  it('joins again when the join API says the token is no longer valid', async () => {
    const replacement = await startRoom();
    const { client } = await connect({ resume: { attempts: 4, baseDelayMs: 1, maxDelayMs: 4 } });
    api.answer = (call) =>
      call.path.endsWith('/resume')
        ? { status: 401, body: { code: 'unauthorized', message: 'the resume token expired: join again' } }
        : { status: 200, body: { endpoint: replacement.url, map: 'town', ticket: 'ticket-2', expiresAt: '2030-01-01T00:00:00Z' } };
    const rejoined = once(client, 'rejoined');
    await room.stop();
    const fresh = await replacement.nextConnection();
    expect((await fresh.nextText()).payload).toStrictEqual({ ticket: 'ticket-2', codec: 'binary' });
    fresh.sendJSON('welcome', welcome({ resumeToken: 'resume-new' }));
    await rejoined;
    expect(api.calls.map((c) => c.path.split('/').pop())).toStrictEqual(['join', 'resume', 'join']);
    expect(client.state).toMatchObject({ connected: true, rejoins: 1 });
  });

  it('gives up when the new join is refused, without trying again', async () => {
    const { client } = await connect({ resume: { attempts: 5, baseDelayMs: 1, maxDelayMs: 4 } });
    const attempts: number[] = [];
    client.on('reconnecting', (e) => attempts.push(e.attempt));
    const closed = once(client, 'closed');
    client.dropConnection();
    const again = await room.nextConnection();
    await again.nextText();
    again.sendJSON('error', { code: 'token_expired', message: 'the resume token has expired: join with a new ticket' });
    again.close(1008, 'token_expired');
    const fresh = await room.nextConnection();
    expect((await fresh.nextText()).payload).toMatchObject({ ticket: 'ticket-1' });
    fresh.sendJSON('error', { code: 'unauthorized', message: 'signed in elsewhere' });
    fresh.close(1008, 'unauthorized');
    const e = await closed;
    expect(e.error).toMatchObject({ code: 'resume_failed', message: expect.stringContaining('signed in elsewhere') });
    expect(attempts).toStrictEqual([1]);
    expect(client.state.rejoins).toBe(0);
  });
});

describe('interpolated', () => {
  it('draws others behind and this player at its prediction', async () => {
    const { client, conn } = await connect({ interpolationDelayMs: 0 });
    const applied = once(client, 'snapshot');
    conn.sendBinary(encodeSnapshot({ tick: 4201, ackSeq: 0 }, [self(100, 100), npc(50, 60)]));
    await applied;
    client.move(1, 0);
    const drawn = client.interpolated();
    expect(drawn).toStrictEqual([self(client.state.predicted.x, 100), npc(50, 60)]);
    expect(client.state.predicted.x).toBeGreaterThan(100);
  });
});
