import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { JoinAPI, JoinAPIError, contentPack, type RoomContent } from '../src/index.js';
import { JoinServer } from './helpers/server.js';

let server: JoinServer;

beforeEach(async () => {
  server = await JoinServer.start('ws://127.0.0.1:1/ws');
});

afterEach(() => server.stop());

describe('JoinAPI', () => {
  it('joins with a bare POST as a guest', async () => {
    const got = await new JoinAPI(`${server.url}/`).join('default', 'demo');
    expect(got).toStrictEqual({ endpoint: 'ws://127.0.0.1:1/ws', map: 'town', ticket: 'ticket-1', expiresAt: '2030-01-01T00:00:00Z' });
    expect(server.calls[0]).toMatchObject({ method: 'POST', path: '/v1/namespaces/default/gamerooms/demo/join', body: {} });
    expect(server.calls[0]!.headers.authorization).toBeUndefined();
  });

  it('asks where the map of a resume token runs, without the authKey', async () => {
    server.answer = () => ({ status: 200, body: { endpoint: 'ws://10.0.0.9:7350/ws', map: 'crypt', instance: 'demo-crypt-k3v9q' } });
    const got = await new JoinAPI(server.url).resume('default', 'demo', 'eyJ.resume');
    expect(got).toStrictEqual({ endpoint: 'ws://10.0.0.9:7350/ws', map: 'crypt', instance: 'demo-crypt-k3v9q' });
    expect(server.calls[0]).toMatchObject({ method: 'POST', path: '/v1/namespaces/default/gamerooms/demo/resume', body: { resumeToken: 'eyJ.resume' } });
    expect(server.calls[0]!.headers.authorization).toBeUndefined();
  });

  it('throws the resume call\'s error', async () => {
    server.answer = () => ({ status: 409, body: { code: 'room_not_ready', message: 'map demo-town is not running' } });
    await expect(new JoinAPI(server.url).resume('default', 'demo', 't')).rejects.toMatchObject({ name: 'JoinAPIError', status: 409, code: 'room_not_ready' });
  });

  it('lists and creates characters with the authKey as bearer', async () => {
    const ayla = { id: 'c-1', name: 'Ayla', active: true, createdAt: '2026-03-04T05:06:07Z' };
    server.answer = (call) => (call.method === 'GET' ? { status: 200, body: { characters: [ayla] } } : { status: 201, body: ayla });
    const api = new JoinAPI(server.url);
    expect(await api.characters('default', 'demo', 'key-1')).toStrictEqual([ayla]);
    expect(await api.createCharacter('default', 'demo', 'key-1', 'Ayla', true)).toStrictEqual(ayla);
    expect(server.calls.map((c) => [c.method, c.path, c.headers.authorization, c.body])).toStrictEqual([
      ['GET', '/v1/namespaces/default/gamerooms/demo/characters', 'Bearer key-1', undefined],
      ['POST', '/v1/namespaces/default/gamerooms/demo/characters', 'Bearer key-1', { name: 'Ayla', active: true }],
    ]);
  });

  it('keeps a room\'s content definitions and revalidates them by ETag', async () => {
    const content: RoomContent = {
      hash: 'h-room',
      maps: { town: 'wilds' },
      packs: { wilds: { name: 'wilds', items: [{ kind: 'sword', slots: ['weapon'], weight: 3, attack: 4 }], enemies: [], skills: [],
        bag: { capacity: 20, maxWeight: 40, encumberedAt: 25, encumberedSpeed: 0.6 } } },
      hashes: { wilds: 'h-wilds' },
    };
    server.answer = (call) => (call.headers['if-none-match'] === '"h-room"'
      ? { status: 304, body: undefined }
      : { status: 200, body: content, headers: { ETag: '"h-room"' } });
    const api = new JoinAPI(server.url);
    expect(await api.content('default', 'demo')).toStrictEqual(content);
    expect(await api.content('default', 'demo')).toStrictEqual(content);
    expect(server.calls.map((c) => [c.method, c.path, c.headers['if-none-match']])).toStrictEqual([
      ['GET', '/v1/namespaces/default/gamerooms/demo/content', undefined],
      ['GET', '/v1/namespaces/default/gamerooms/demo/content', '"h-room"'],
    ]);
    expect(contentPack(content, 'h-wilds')?.items[0]).toStrictEqual({ kind: 'sword', slots: ['weapon'], weight: 3, attack: 4 });
    expect(contentPack(content, 'h-other')).toBeUndefined();
  });

  it("joins a friend's shard by its instance name", async () => {
    await new JoinAPI(server.url).join('default', 'demo', { instance: 'demo-town-s2' });
    expect(server.calls[0]).toMatchObject({ method: 'POST', path: '/v1/namespaces/default/gamerooms/demo/join', body: { instance: 'demo-town-s2' } });
  });

  it('asks the lobby for a page of rooms, in one namespace or all, by labels', async () => {
    const demo = { namespace: 'games', name: 'demo', phase: 'Running', defaultMap: 'town', joinable: true, players: 3, capacity: 100,
      maps: [{ name: 'town', players: 3, capacity: 100, shards: 2, maxShards: 4,
        instances: [{ name: 'demo-town', phase: 'Ready', players: 3, shard: 1 }, { name: 'demo-town-s2', phase: 'Starting', players: 0, shard: 2 }] }] };
    server.answer = () => ({ status: 200, body: { rooms: [demo], continue: 'next' } });
    const api = new JoinAPI(server.url);
    expect(await api.rooms({ namespace: 'games', labelSelector: 'mode=coop,region in (eu)', limit: 10 }))
      .toStrictEqual({ rooms: [demo], continue: 'next' });
    await api.rooms({ continue: 'next' });
    await api.rooms();
    expect(server.calls.map((c) => [c.method, c.path])).toStrictEqual([
      ['GET', '/v1/namespaces/games/gamerooms?labelSelector=mode%3Dcoop%2Cregion+in+%28eu%29&limit=10'],
      ['GET', '/v1/gamerooms?continue=next'],
      ['GET', '/v1/gamerooms'],
    ]);
  });

  it('creates a party, invites with the leader\'s token as bearer, and joins with a party token', async () => {
    const leader = { party: 'p-1', token: 'eyJ.leader', role: 'leader', leader: 'u-1', maxSize: 10, expiresAt: '2030-01-01T00:00:00Z' };
    const member = { ...leader, token: 'eyJ.member', role: 'member' };
    const joined = { endpoint: 'ws://127.0.0.1:1/ws', map: 'town', ticket: 'ticket-1', expiresAt: '2030-01-01T00:00:00Z' };
    server.answer = (call) => (call.path.endsWith('/join') ? { status: 200, body: joined }
      : { status: 201, body: call.path.endsWith('/invites') ? member : leader });
    const api = new JoinAPI(server.url);
    expect(await api.createParty('default', 'demo', 'key-1')).toStrictEqual(leader);
    expect(await api.createParty('default', 'demo')).toStrictEqual(leader);
    expect(await api.invite('default', 'demo', leader)).toStrictEqual(member);
    await api.join('default', 'demo', { partyToken: member.token });
    expect(server.calls.map((c) => [c.method, c.path, c.headers.authorization, c.body])).toStrictEqual([
      ['POST', '/v1/namespaces/default/gamerooms/demo/parties', undefined, { authKey: 'key-1' }],
      ['POST', '/v1/namespaces/default/gamerooms/demo/parties', undefined, {}],
      ['POST', '/v1/namespaces/default/gamerooms/demo/parties/p-1/invites', 'Bearer eyJ.leader', undefined],
      ['POST', '/v1/namespaces/default/gamerooms/demo/join', undefined, { partyToken: 'eyJ.member' }],
    ]);
  });

  it('reads an empty character list', async () => {
    server.answer = () => ({ status: 200, body: { characters: null } });
    expect(await new JoinAPI(server.url).characters('default', 'demo', 'k')).toStrictEqual([]);
  });

  it('throws the API error with its code and retry delay', async () => {
    server.answer = () => ({ status: 429, body: { code: 'rate_limited', message: 'slow down' }, headers: { 'Retry-After': '3' } });
    const err = await new JoinAPI(server.url).join('default', 'demo').catch((e: unknown) => e);
    expect(err).toBeInstanceOf(JoinAPIError);
    expect(err).toMatchObject({ status: 429, code: 'rate_limited', retryAfterMs: 3000, message: expect.stringContaining('slow down') });
  });

  it('keeps the status of an answer that is not the API JSON', async () => {
    server.answer = () => ({ status: 502, body: 'bad gateway' });
    await expect(new JoinAPI(server.url).join('default', 'demo')).rejects.toMatchObject({ status: 502, code: 'http_502' });
  });

  it('says when the API cannot be reached', async () => {
    const url = server.url;
    await server.stop();
    server = await JoinServer.start('');
    await expect(new JoinAPI(url).join('default', 'demo')).rejects.toMatchObject({ name: 'JoinAPIError', status: 0, code: 'unreachable' });
  });
});
