// The Roomkeeper demo page: a join form, then the game on a canvas. Served
// by the manager at /play/ on the join API's address, so the join API is
// the page's own origin.

import { JoinAPI, JoinAPIError, RoomClient, contentPack, loadMapgen } from '../src/index.js';
import type { ClientOptions, Mapgen } from '../src/index.js';
import { installHook } from './hook.js';
import { byId } from './hud.js';
import { Keyboard } from './input.js';
import { Lobby } from './lobby.js';
import { Renderer } from './render.js';
import { Session, describeError } from './session.js';

type PageState = 'idle' | 'joining' | 'playing' | 'error';

/** Join API refusals that pass by themselves (a map still starting, a burst of joins, a full map): retried for a while. */
const TRANSIENT = new Set(['room_not_ready', 'rate_limited', 'room_full']);
const RETRY_FOR_MS = 30_000;

const form = byId<HTMLFormElement>('join');
const fields = {
  namespace: byId<HTMLInputElement>('namespace'),
  room: byId<HTMLInputElement>('room'),
  map: byId<HTMLInputElement>('map'),
  instance: byId<HTMLInputElement>('instance'),
  partyToken: byId<HTMLInputElement>('party-token'),
  authKey: byId<HTMLInputElement>('auth-key'),
  codec: byId<HTMLSelectElement>('codec'),
};
const joinError = byId('join-error');
const joinStatus = byId('join-status');
const canvas = byId<HTMLCanvasElement>('view');

const renderer = new Renderer(canvas);
const keyboard = new Keyboard(window);
let session: Session | undefined;
/** The page's own origin's join API, for the content definitions: one, so they are kept across joins. */
const contentAPI = new JoinAPI('');
/** The page's own errors (failed joins), for the test hook; the session keeps the server's. */
const pageErrors: string[] = [];

// The 3.5 MB generator loads while the player reads the form.
let mapgen: Promise<Mapgen> = loadMapgen('mapgen.wasm');
mapgen.catch(() => {}); // reported when a join needs it

/** The rooms of the namespace typed in; choosing one fills the form. */
const lobby = new Lobby(contentAPI, byId<HTMLUListElement>('lobby'), (room) => {
  fields.namespace.value = room.namespace;
  fields.room.value = room.name;
  fields.map.value = '';
  fields.instance.value = '';
});

function setPageState(state: PageState): void {
  document.body.dataset.state = state; // the CSS shows the form or the game from it; tests wait on it
  if (state === 'playing') lobby.stop();
  else lobby.show(fields.namespace.value.trim() || 'default');
}

/** ?namespace=&room=&map=&instance=&partyToken=&codec= fill the form, so a link can name a room (a friend's shard, and invite to a party). */
function prefill(): void {
  const q = new URLSearchParams(location.search);
  for (const name of ['namespace', 'room', 'map', 'instance', 'partyToken', 'codec'] as const) {
    const v = q.get(name);
    if (v !== null) fields[name].value = v;
  }
}

/**
 * Makes a party led by the authKey typed in (a guest without one), puts the
 * leader's token in the form and shows a link that invites a friend (a
 * member's token: whoever has the link joins the party).
 */
async function newParty(): Promise<void> {
  const invite = byId('party-invite');
  const namespace = fields.namespace.value.trim() || 'default', room = fields.room.value.trim();
  try {
    const leader = await contentAPI.createParty(namespace, room, fields.authKey.value.trim() || undefined);
    const member = await contentAPI.invite(namespace, room, leader);
    fields.partyToken.value = leader.token;
    const link = new URL(location.href);
    link.search = new URLSearchParams({ namespace, room, partyToken: member.token }).toString();
    invite.textContent = `party ${leader.party}, up to ${leader.maxSize} in an instance; invite a friend with ${link.toString()}`;
  } catch (err) {
    invite.textContent = '';
    joinError.textContent = describeError(err);
  }
}

function delay(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

/** Connects, retrying the join API's transient refusals with the delay it asks for. */
async function connect(opts: ClientOptions): Promise<RoomClient> {
  const deadline = performance.now() + RETRY_FOR_MS;
  for (;;) {
    try {
      return await RoomClient.connect(opts);
    } catch (err) {
      if (!(err instanceof JoinAPIError) || !TRANSIENT.has(err.code) || performance.now() > deadline) throw err;
      const wait = Math.max(err.retryAfterMs, 1000);
      joinStatus.textContent = `${describeError(err)}; trying again in ${Math.ceil(wait / 1000)} s`;
      await delay(wait);
    }
  }
}

async function join(guest: boolean): Promise<void> {
  // The key is read once and wiped from the form: it lives only in this
  // call and the client, never in storage, the URL or the console.
  const authKey = guest ? undefined : fields.authKey.value;
  fields.authKey.value = '';
  if (!guest && !authKey) {
    joinError.textContent = 'type your authKey, or play as guest';
    return;
  }
  session?.close();
  joinError.textContent = '';
  joinStatus.textContent = 'joining…';
  setPageState('joining');
  try {
    const generator = await mapgen.catch(() => (mapgen = loadMapgen('mapgen.wasm'))); // one more try after a failed load
    const namespace = fields.namespace.value.trim() || 'default', room = fields.room.value.trim();
    const client = await connect({
      joinAPI: '', namespace, room,
      map: fields.map.value.trim() || undefined, instance: fields.instance.value.trim() || undefined,
      partyToken: fields.partyToken.value.trim() || undefined,
      authKey, mapgen: generator, codec: fields.codec.value === 'json' ? 'json' : 'binary',
    });
    // The items' names, slots and stats: the join API's definitions of the map's pack, kept and revalidated by the SDK.
    const definitions = (hash: string) => contentAPI.content(namespace, room).then((c) => contentPack(c, hash));
    session = new Session(client, keyboard, ended, definitions);
    joinStatus.textContent = '';
    setPageState('playing');
    canvas.focus();
  } catch (err) {
    fail(describeError(err));
  }
}

function fail(message: string): void {
  pageErrors.push(message);
  joinStatus.textContent = '';
  joinError.textContent = message;
  setPageState('error');
}

/** The session closed: back to the form, with the reason if it failed. */
function ended(error?: string): void {
  session = undefined;
  if (error) fail(error);
  else setPageState('idle');
}

function wireControls(): void {
  form.addEventListener('submit', (e) => {
    e.preventDefault(); // the page joins itself; the form never navigates (nor puts the key in a URL)
    const button = e.submitter instanceof HTMLButtonElement ? e.submitter : undefined;
    void join(button?.value === 'guest');
  });
  fields.namespace.addEventListener('change', () => lobby.show(fields.namespace.value.trim() || 'default'));
  byId('new-party').addEventListener('click', () => void newParty());
  canvas.addEventListener('click', (e) => {
    const p = renderer.toWorld(e.clientX, e.clientY);
    session?.walkTo(p.x, p.y);
  });
  keyboard.onKey('KeyE', () => void session?.enterNearestPortal());
  keyboard.onKey('KeyF', () => void session?.pickupNearest());
  keyboard.onKey('Space', () => void session?.attackNearest());
  keyboard.onKey('KeyG', () => void session?.toggleNearestDoor());
  byId('enter-portal').addEventListener('click', () => void session?.enterNearestPortal());
  byId('pickup').addEventListener('click', () => void session?.pickupNearest());
  byId('attack').addEventListener('click', () => void session?.attackNearest());
  byId('toggle-door').addEventListener('click', () => void session?.toggleNearestDoor());
  byId('drop-connection').addEventListener('click', () => session?.dropConnection());
  byId('leave').addEventListener('click', () => session?.close());
}

function frame(): void {
  renderer.draw(session?.scene() ?? { world: undefined, entities: [], selfId: 0, focus: { x: 0, y: 0 }, portals: [], path: [] });
  requestAnimationFrame(frame);
}

prefill();
wireControls();
setPageState('idle');
installHook(() => session, () => pageErrors);
requestAnimationFrame(frame);
