// A client of the manager's join API (docs/joinapi.md): a map's endpoint
// and a join ticket, and the player's characters.

export interface JoinRequest {
  /** The player's secret; without it the player is a guest. */
  authKey?: string;
  /** One of the player's characters; without it the active one plays. */
  characterId?: string;
  /** A non-instanced map of the room; without it the room's default map. */
  map?: string;
  /** One shard of the map, by its instance name (a friend's welcome.instance); without it the join API chooses. A full one is room_full. */
  instance?: string;
  /** Joins the party this token is for (JoinAPI.createParty, invite): its players share instanced maps. */
  partyToken?: string;
  /** When set, the party partyToken must be for; a party without its token is refused (unauthorized). */
  party?: string;
}

/** A party token and what it says (JoinAPI.createParty, JoinAPI.invite). */
export interface Party {
  /** The party's id, made by the join API. */
  party: string;
  /** The party token: keep it secret, whoever holds it joins the party. */
  token: string;
  /** 'leader' (it may invite) or 'member'. */
  role: string;
  /** The leader's user id. */
  leader: string;
  /** How many of the party play one instanced map together. */
  maxSize: number;
  /** RFC 3339: the party lasts as long as its leader's token. */
  expiresAt: string;
}

export interface JoinResponse {
  /** The map's WebSocket URL. */
  endpoint: string;
  map: string;
  /** The hello ticket, valid once until expiresAt. */
  ticket: string;
  /** RFC 3339. */
  expiresAt: string;
}

/** Where the map a resume token names runs now (the answer of JoinAPI.resume). */
export interface ResumeResponse {
  /** The map's WebSocket URL: say hello{resume} there. */
  endpoint: string;
  /** The map's name in the room. */
  map: string;
  /** Its MapInstance. */
  instance: string;
}

export interface Character {
  id: string;
  name: string;
  active: boolean;
  createdAt: string;
}

/** A room's content definitions (GET .../content): the packs its maps play, by name. */
export interface RoomContent {
  /** The answer's ETag, without quotes. */
  hash: string;
  /** Each map's pack, by map name. */
  maps: Record<string, string>;
  packs: Record<string, PackDefinitions>;
  /** Each pack's hash, by pack name: what a welcome's contentHash names. */
  hashes: Record<string, string>;
}

/** A content pack as a client sees it; a welcome's contentHash names one. */
export interface PackDefinitions {
  name: string;
  items: ItemDefinition[];
  enemies: EnemyDefinition[] | null;
  skills: { name: string; levels: number[] }[];
  bag: { capacity: number; maxWeight: number; encumberedAt: number; encumberedSpeed: number };
  /** The pools abilities cost, each one's most and its gain a second; absent: none. */
  resources?: { mana: number; manaRegen: number; stamina: number; staminaRegen: number };
  /** What combat.cast casts (client.cast). */
  abilities?: AbilityDefinition[];
}

/** An ability as a player casts it. */
export interface AbilityDefinition {
  name: string;
  mana?: number;
  stamina?: number;
  cooldown: number;
  /** 'enemy' (cast at an NPC within range) or 'self'. */
  target: string;
  range?: number;
  damage?: number;
  heal?: number;
  buffAttack?: number;
  buffDefence?: number;
  buffSeconds?: number;
  /** What an enemy ability takes off its target's attack and defence, for debuffSeconds. */
  debuffAttack?: number;
  debuffDefence?: number;
  debuffSeconds?: number;
}

/** An item kind: its name is its kind. */
export interface ItemDefinition {
  kind: string;
  /** The slots it is worn in; absent: only carried. */
  slots?: string[];
  weight: number;
  attack?: number;
  defence?: number;
  stackable?: boolean;
  requires?: { skill: string; level: number };
  trains?: string;
  critical?: boolean;
  /** What `use` of it does (a consumable); absent: it cannot be used. */
  use?: { heal: number };
}

export interface EnemyDefinition {
  name: string;
  hp: number;
  attack: number;
  defence: number;
  range: number;
  speed: number;
  hostile?: boolean;
  boss?: boolean;
  /** A boss's phase thresholds, in percent of its hit points. */
  phases?: number[];
}

/** What a lobby page asks for; every field is optional. */
export interface LobbyQuery {
  /** One namespace's rooms; absent: every namespace's. */
  namespace?: string;
  /** The rooms' labels to match, Kubernetes syntax: 'mode=coop,region in (eu,us)'. */
  labelSelector?: string;
  /** Rooms a page, 1 to 200 (the API's default: 50). */
  limit?: number;
  /** The previous page's continue, for the next page. */
  continue?: string;
}

/** A page of the lobby, sorted by namespace and name. */
export interface RoomList {
  rooms: RoomSummary[];
  /** Set when more rooms follow: ask again with it. */
  continue?: string;
}

/** A room in the lobby: its maps, their instances and players. */
export interface RoomSummary {
  namespace: string;
  name: string;
  labels?: Record<string, string>;
  /** Pending, Starting, Running or Degraded. */
  phase: string;
  defaultMap: string;
  /** Whether the default map has a Ready instance to join now. */
  joinable: boolean;
  /** Players connected; capacity: the seats of the shared maps' running shards. */
  players: number;
  capacity: number;
  maps: MapSummary[];
}

/** A map of a room in the lobby. */
export interface MapSummary {
  name: string;
  /** Instanced maps get an instance per party, entered through portals. */
  instanced?: boolean;
  players: number;
  /** The seats of one instance. */
  capacity: number;
  /** A shared map's shards running now, and the most it may have. */
  shards?: number;
  maxShards?: number;
  /** A shared map's shards (shard: its number; join one by name with JoinRequest.instance), an instanced map's party copies. */
  instances?: { name: string; phase?: string; players: number; shard?: number }[];
}

/**
 * An error answer of the join API. code is the API's stable code
 * (room_not_ready, rate_limited, ...); 'http_<status>' when the answer was
 * not the API's JSON (a proxy's page, say), 'unreachable' when no answer
 * came (status 0). retryAfterMs is 0 unless the API said when to retry.
 */
export class JoinAPIError extends Error {
  readonly status: number;
  readonly code: string;
  readonly retryAfterMs: number;

  constructor(status: number, code: string, message: string, retryAfterMs = 0) {
    super(message);
    this.name = 'JoinAPIError';
    this.status = status;
    this.code = code;
    this.retryAfterMs = retryAfterMs;
  }
}

/** How much of an unexpected error body goes into the message. */
const MAX_BODY_EXCERPT = 200;

export class JoinAPI {
  private readonly base: string;
  private readonly fetchImpl: typeof fetch;
  /** The content definitions asked for, by room path: revalidated by their ETag. */
  private readonly contents = new Map<string, RoomContent>();

  /** baseURL '' calls the page's own origin (the manager serves the page). */
  constructor(baseURL: string, fetchImpl?: typeof fetch) {
    this.base = baseURL.replace(/\/+$/, '');
    // Called through a wrapper: a bare window.fetch called as a method of
    // another object throws "Illegal invocation".
    this.fetchImpl = fetchImpl ?? ((input, init) => globalThis.fetch(input, init));
  }

  /** Asks for a ticket to the room's map. */
  join(namespace: string, room: string, req: JoinRequest = {}): Promise<JoinResponse> {
    return this.call<JoinResponse>('POST', `${roomPath(namespace, room)}/join`, undefined, withoutEmpty(req));
  }

  /**
   * Makes a new party of the room, led by the authKey's user (a guest
   * without one), and returns the leader's token: join with it as
   * partyToken, and invite others with it.
   */
  createParty(namespace: string, room: string, authKey?: string): Promise<Party> {
    return this.call<Party>('POST', `${roomPath(namespace, room)}/parties`, undefined, authKey ? { authKey } : {});
  }

  /**
   * A member's party token, asked for with the leader's party (createParty's
   * answer): hand it to the player who joins. Errors: not_owner (403: a
   * member's token), unauthorized (401: not the party's, or expired).
   */
  invite(namespace: string, room: string, leader: Pick<Party, 'party' | 'token'>): Promise<Party> {
    return this.call<Party>('POST', `${roomPath(namespace, room)}/parties/${encodeURIComponent(leader.party)}/invites`, leader.token);
  }

  /**
   * Asks where the map a resume token names runs now (after its pod
   * crashed or drained; instanced maps too), to say hello{resume} there.
   * The token is only read, not spent. Errors: unauthorized (401: not a
   * valid resume token of the room, or an expired one), room_not_ready
   * (409: the map is restarting), map_quarantined (503), room_not_found.
   */
  resume(namespace: string, room: string, resumeToken: string): Promise<ResumeResponse> {
    return this.call<ResumeResponse>('POST', `${roomPath(namespace, room)}/resume`, undefined, { resumeToken });
  }

  /** The player's characters in the room, oldest first. */
  async characters(namespace: string, room: string, authKey: string): Promise<Character[]> {
    const list = await this.call<{ characters: Character[] | null }>('GET', `${roomPath(namespace, room)}/characters`, authKey);
    return list.characters ?? [];
  }

  /** A new character named name; active makes it the one joins play. */
  createCharacter(namespace: string, room: string, authKey: string, name: string, active = false): Promise<Character> {
    const body = active ? { name, active } : { name };
    return this.call<Character>('POST', `${roomPath(namespace, room)}/characters`, authKey, body);
  }

  /**
   * The room's content definitions: its items' names, slots and stats,
   * its enemies, skills and bag (docs/joinapi.md). Kept once asked for,
   * and asked again with their ETag, so unchanged ones cost a 304.
   * contentPack finds a map's pack by its welcome's contentHash.
   */
  async content(namespace: string, room: string): Promise<RoomContent> {
    const path = `${roomPath(namespace, room)}/content`;
    const cached = this.contents.get(path);
    const fresh = await this.call<RoomContent | undefined>('GET', path, undefined, undefined,
      cached ? { 'If-None-Match': `"${cached.hash}"` } : {});
    if (fresh === undefined && cached) return cached;
    if (fresh === undefined) throw new JoinAPIError(304, 'http_304', 'join API: 304 for content never asked for');
    this.contents.set(path, fresh);
    return fresh;
  }

  /** A page of the lobby: the rooms players can choose from (docs/joinapi.md). */
  rooms(query: LobbyQuery = {}): Promise<RoomList> {
    const path = query.namespace ? `/v1/namespaces/${encodeURIComponent(query.namespace)}/gamerooms` : '/v1/gamerooms';
    const params = new URLSearchParams();
    if (query.labelSelector) params.set('labelSelector', query.labelSelector);
    if (query.limit) params.set('limit', String(query.limit));
    if (query.continue) params.set('continue', query.continue);
    const search = params.toString();
    return this.call<RoomList>('GET', search ? `${path}?${search}` : path);
  }

  /**
   * Sends body as JSON with the authKey as bearer (when given) and returns
   * the decoded answer (undefined for 304 Not Modified), or throws
   * JoinAPIError.
   */
  private async call<T>(method: string, path: string, authKey?: string, body?: object, extra: Record<string, string> = {}): Promise<T> {
    const headers: Record<string, string> = { ...extra };
    if (body !== undefined) headers['Content-Type'] = 'application/json';
    if (authKey) headers['Authorization'] = `Bearer ${authKey}`;
    let resp: Response;
    try {
      resp = await this.fetchImpl(this.base + path, {
        method,
        headers,
        body: body === undefined ? undefined : JSON.stringify(body),
      });
    } catch (err) {
      throw new JoinAPIError(0, 'unreachable', `join API: ${err instanceof Error ? err.message : String(err)}`);
    }
    const text = await resp.text();
    if (resp.status === 304) return undefined as T;
    if (!resp.ok) throw apiError(resp, text);
    try {
      return JSON.parse(text) as T;
    } catch {
      throw new JoinAPIError(resp.status, `http_${resp.status}`, `join API: the answer is not JSON: ${excerpt(text)}`);
    }
  }
}

/** The pack a welcome's contentHash names, if content has it. */
export function contentPack(content: RoomContent, contentHash: string): PackDefinitions | undefined {
  const name = Object.keys(content.hashes).find((pack) => content.hashes[pack] === contentHash);
  return name === undefined ? undefined : content.packs[name];
}

function roomPath(namespace: string, room: string): string {
  return `/v1/namespaces/${encodeURIComponent(namespace)}/gamerooms/${encodeURIComponent(room)}`;
}

/** The request without empty fields: the API reads bodies strictly, as Go's omitempty writes them. */
function withoutEmpty(req: JoinRequest): JoinRequest {
  return Object.fromEntries(Object.entries(req).filter(([, v]) => v !== undefined && v !== '')) as JoinRequest;
}

/** Decodes an error answer: {code, message, retryAfter (seconds)}, or Retry-After. */
function apiError(resp: Response, text: string): JoinAPIError {
  let body: { code?: unknown; message?: unknown; retryAfter?: unknown } = {};
  try {
    body = JSON.parse(text) as typeof body;
  } catch {
    // not the API's JSON: keep the status and the start of the body
  }
  if (typeof body.code !== 'string' || body.code === '') {
    return new JoinAPIError(resp.status, `http_${resp.status}`, `join API: HTTP ${resp.status}: ${excerpt(text)}`);
  }
  let retryAfter = typeof body.retryAfter === 'number' ? body.retryAfter : 0;
  const header = Number(resp.headers.get('Retry-After') ?? '');
  if (retryAfter === 0 && Number.isInteger(header) && header > 0) retryAfter = header;
  const message = typeof body.message === 'string' ? body.message : '';
  return new JoinAPIError(resp.status, body.code, `join API: ${body.code} (${resp.status}): ${message}`, retryAfter * 1000);
}

function excerpt(text: string): string {
  return text.slice(0, MAX_BODY_EXCERPT).trim();
}
