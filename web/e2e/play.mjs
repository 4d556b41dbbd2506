// The demo page, played in Chromium against a running Roomkeeper (make dev,
// or the end-to-end cluster of test/e2e/browser_test.go):
//
//   1. a guest makes a party ("New party") and joins in it; the world the
//      page built with mapgen.wasm hashes like the server's (worldHash ===
//      mapHash);
//   2. it walks (arrow key, click-to-move as a fallback); the server's
//      position moves and the prediction converges on it;
//   3. another page's lobby lists the room, joinable, with player A in it;
//      a second player, in its own browser context, opens the first's
//      party invitation link, joins with an authKey typed into the form
//      (which the page then keeps nowhere) and JSON snapshots, is in the
//      first's party, sees the first and sees it move;
//   4. the first walks to the nearest loot, picks it up with F and drops
//      it again with its inventory button; then walks up to an NPC and
//      hits it with Space (the server acks, its hit points drop);
//   5. it walks to the portal, enters it, lands on the other map, whose
//      world hashes like the server's too, and plays on;
//   6. "Drop connection": the client resumes, same player, still playing.
//
// Environment: ROOMKEEPER_PAGE (http://127.0.0.1:8090/play/),
// ROOMKEEPER_ARTIFACTS (a directory: screenshots and summary.json),
// ROOMKEEPER_PLAYER_KEY (player B's authKey; made up when unset),
// ROOMKEEPER_ROOM (demo), ROOMKEEPER_NAMESPACE (default),
// ROOMKEEPER_CHROMIUM (/usr/bin/chromium). Exit status 0 only if every
// step held.
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { launch } from './browser.mjs';

const env = process.env;
const PAGE = env.ROOMKEEPER_PAGE;
const ARTIFACTS = env.ROOMKEEPER_ARTIFACTS;
const ROOM = env.ROOMKEEPER_ROOM || 'demo';
const NAMESPACE = env.ROOMKEEPER_NAMESPACE || 'default';

/** The whole run; every wait below is bounded by what is left of it too. */
const RUN_MS = 130_000;
const started = Date.now();
const left = () => RUN_MS - (Date.now() - started);

/** Player B's authKey: typed into the page, which must keep it nowhere. */
const PLAYER_KEY = env.ROOMKEEPER_PLAYER_KEY || `browser-key-${process.pid}-${started}`;

/** How far (world units) counts as "moved": a few steps, well over the 1/16 rounding of snapshots. */
const MOVED = 4;

const summary = {
  ok: false, error: '', page: PAGE, namespace: NAMESPACE, room: ROOM, chromium: '',
  playerId: 0, secondPlayerId: 0, worldHash: '', mapHash: '', maps: [], steps: [], problems: [], console: [],
};

class Failure extends Error {}

function check(cond, message) {
  if (!cond) throw new Failure(message);
}

const dist = (a, b) => Math.hypot(a.x - b.x, a.y - b.y);

/** The page's summary (window.__roomkeeper.state()). */
const state = (page) => page.evaluate(() => window.__roomkeeper.state());

/** A state with the long lists cut, for error messages. */
function brief(s) {
  return JSON.stringify({ ...s, entities: `${s.entities.length} entities`, errors: s.errors.slice(-3) });
}

/**
 * Waits until pred(arg) holds in the page, at most ms (and never past the
 * run's end). pred runs in the page and reads window.__roomkeeper.state()
 * itself: the page's Content-Security-Policy forbids eval, so the test
 * cannot hand it code as a string to combine there.
 */
async function until(page, what, ms, pred, arg = null) {
  const timeout = Math.max(1, Math.min(ms, left()));
  try {
    await page.waitForFunction(pred, arg, { timeout, polling: 100 });
  } catch (err) {
    if (!String(err).includes('Timeout')) throw err;
    throw new Failure(`${what}: not within ${timeout} ms; last state ${brief(await state(page))}`);
  }
  return state(page);
}

async function shot(page, name) {
  await page.screenshot({ path: join(ARTIFACTS, `${name}.png`) }).catch((err) => summary.problems.push(`screenshot ${name}: ${err.message}`));
}

/** Runs one step, records it in the summary, and screenshots pages afterwards (or on failure). */
async function step(name, pages, fn) {
  const t0 = Date.now();
  const record = { name, ok: false, ms: 0 };
  summary.steps.push(record);
  console.log(`play: ${name}…`);
  try {
    Object.assign(record, await fn());
    record.ok = true;
  } finally {
    record.ms = Date.now() - t0;
    for (const [label, page] of Object.entries(pages())) await shot(page, `${String(summary.steps.length).padStart(2, '0')}-${name}${label}`);
    console.log(`play: ${name}: ${record.ok ? 'ok' : 'FAILED'} (${record.ms} ms)`);
  }
}

/**
 * Collects what should never happen on the page: uncaught errors, a
 * Content-Security-Policy violation, a file of the page that does not load.
 */
function watch(page, label) {
  page.on('pageerror', (err) => summary.problems.push(`${label}: uncaught ${err.message}`));
  page.on('console', (msg) => {
    if (msg.text().includes(PLAYER_KEY)) summary.problems.push(`${label}: the authKey appeared in the console`);
    if (msg.type() !== 'error') return;
    // A violation of the page's Content-Security-Policy is a fault; other
    // console errors (a join API refusal the page retries) are kept to read.
    if (/Content.Security.Policy/i.test(msg.text())) summary.problems.push(`${label}: ${msg.text()}`);
    else if (summary.console.length < 50) summary.console.push(`${label}: ${msg.text()}`);
  });
  page.on('response', (res) => {
    if (res.url().startsWith(PAGE) && res.status() >= 400) summary.problems.push(`${label}: ${res.url()} answered ${res.status()}`);
  });
  page.on('requestfailed', (req) => {
    if (req.url().startsWith(PAGE)) summary.problems.push(`${label}: ${req.url()} failed: ${req.failure()?.errorText}`);
  });
}

/**
 * Opens the page in a new context and joins with the snapshot codec given,
 * as a guest or, with authKey, as that player (typed into the form); the
 * state once the first snapshot is in.
 */
async function joinPage(browser, label, { codec = 'binary', authKey = '', newParty = false, link = PAGE } = {}) {
  const context = await browser.newContext({ viewport: { width: 1280, height: 720 } });
  const page = await context.newPage();
  watch(page, label);
  const url = new URL(link);
  url.searchParams.set('namespace', NAMESPACE);
  url.searchParams.set('room', ROOM);
  url.searchParams.set('codec', codec);
  await page.goto(url.href, { timeout: Math.min(20_000, left()) });
  let invite = '';
  if (newParty) {
    await page.getByRole('button', { name: 'New party' }).click({ timeout: Math.min(10_000, left()) });
    await page.waitForFunction(() => /invite a friend with /.test(document.getElementById('party-invite')?.textContent ?? ''), null,
      { timeout: Math.min(20_000, left()) }).catch(async () => {
      throw new Failure(`${label}: "New party" made no party: the page says "${await page.locator('#join-error').textContent()}"`);
    });
    invite = (await page.locator('#party-invite').textContent()).replace(/^.*invite a friend with /, '').trim();
  }
  if (authKey) {
    await page.locator('#auth-key').fill(authKey, { timeout: Math.min(10_000, left()) });
    await page.getByRole('button', { name: 'Join', exact: true }).click({ timeout: Math.min(10_000, left()) });
  } else {
    await page.getByRole('button', { name: 'Play as guest' }).click({ timeout: Math.min(10_000, left()) });
  }
  // The page retries a room that is not ready for up to 30 s.
  await page.waitForFunction(() => ['playing', 'error'].includes(document.body.dataset.state ?? ''), null,
    { timeout: Math.min(60_000, left()) }).catch(() => {});
  const pageState = await page.evaluate(() => document.body.dataset.state);
  if (pageState !== 'playing') {
    const shown = await page.locator('#join-error').textContent();
    throw new Failure(`${label} did not get to play: data-state=${pageState}, the page says "${shown}"`);
  }
  const s = await until(page, `${label}: first snapshot and world`, 15_000, () => {
    const s = window.__roomkeeper?.state();
    return !!s && s.self !== null && s.worldHash !== '';
  });
  return { context, page, state: s, invite };
}

/**
 * The authKey a player typed lives only in the page's memory: not in the
 * form any more, the URL, storage or cookies (nor the console: watch).
 */
/**
 * The HUD offers the item just picked up in exactly the slots the room's
 * content definitions name for its kind (GET .../content,
 * docs/joinapi.md), or none when it is only carried: the page knows before
 * the server could refuse a wrong one. Returns the kind and its slots.
 */
async function checkSlotsFromDefinitions(page, carried, before) {
  const item = carried.inventory.find((i) => !before.some((o) => o.id === i.id));
  check(item, 'the picked-up item is not in the inventory');
  const defs = await page.evaluate(async ({ ns, room }) =>
    (await fetch(`/v1/namespaces/${encodeURIComponent(ns)}/gamerooms/${encodeURIComponent(room)}/content`)).json(),
  { ns: NAMESPACE, room: ROOM });
  const def = defs.packs[defs.maps[carried.map]]?.items.find((d) => d.kind === item.kind);
  check(def, `the definitions of ${carried.map} have no item ${item.kind}`);
  const want = def.slots ?? [];
  await until(page, `the HUD offers ${item.kind} in ${want.join(', ') || 'no slot'}, as the definitions say`, 10_000, ({ kind, want }) => {
    const li = [...document.querySelectorAll('#inventory li')].find((l) => l.querySelector('span')?.textContent === kind);
    if (!li) return false;
    const offered = [...li.querySelectorAll('option')].map((o) => o.value);
    return offered.join() === want.join() && (want.length > 0 || li.textContent.includes('carried'));
  }, { kind: item.kind, want });
  return { kind: item.kind, slots: want };
}

async function checkKeyForgotten(page, key) {
  const kept = await page.evaluate((key) => {
    const storage = [localStorage, sessionStorage].flatMap((s) => Object.keys(s).map((k) => k + '=' + s.getItem(k)));
    return {
      field: document.querySelector('#auth-key').value !== '',
      url: location.href.includes(key),
      storage: storage.some((v) => v.includes(key)),
      cookies: document.cookie.includes(key),
    };
  }, key);
  const where = Object.entries(kept).filter(([, found]) => found).map(([place]) => place);
  check(where.length === 0, `the page kept the authKey in: ${where.join(', ')}`);
}

/**
 * Walks player A up to the nearest NPC and hits it with Space until a hit
 * lands: the server acks it and the NPC's hit points drop in the
 * snapshots (or it dies and leaves the view).
 */
async function attackAnNPC(page) {
  for (let tries = 1; tries <= 8; tries++) {
    const s = await state(page);
    const npc = s.entities.filter((e) => e.kind === 2 && e.hp > 0).sort((p, q) => dist(p, s.self) - dist(q, s.self))[0];
    check(npc, `player A sees no NPC around (${s.self.x}, ${s.self.y})`);
    await page.evaluate(({ x, y }) => window.__roomkeeper.walkTo(x, y), npc);
    const near = await until(page, `player A walks up to NPC ${npc.id}`, 20_000, (id) => {
      const s = window.__roomkeeper.state();
      const n = s.entities.find((e) => e.id === id);
      return s.self !== null && (!n || s.path === 0 || Math.hypot(n.x - s.self.x, n.y - s.self.y) <= 16);
    }, npc.id);
    const around = Object.fromEntries(near.entities.filter((e) => e.kind === 2 && dist(e, near.self) <= 40).map((e) => [e.id, e.hp]));
    await page.keyboard.press('Space');
    const answered = await until(page, 'the attack is answered', 5_000,
      (seq) => (window.__roomkeeper.state().lastAck?.seq ?? 0) > seq, near.lastAck?.seq ?? 0).catch(() => null);
    if (!answered?.lastAck?.ok) continue; // out of range (it wandered off) or no enemy near: walk again
    const hit = await until(page, 'the NPC hit shows fewer hit points', 5_000, (before) => {
      const now = new Map(window.__roomkeeper.state().entities.map((e) => [e.id, e.hp]));
      return Object.entries(before).some(([id, hp]) => !now.has(Number(id)) || now.get(Number(id)) < hp);
    }, around);
    return { tries, before: around, after: hit.entities.filter((e) => String(e.id) in around) };
  }
  throw new Failure('no attack landed in 8 tries');
}

/** Points around p to walk to, for when the way in one direction is blocked. */
const around = (p, d) => [[d, 0], [0, d], [-d, 0], [0, -d]].map(([dx, dy]) => ({ x: p.x + dx, y: p.y + dy }));

/** Click-to-move somewhere a little away, then waits until the server has the player there-ish. */
async function walkAway(page, what) {
  const from = (await state(page)).self;
  for (const to of around(from, 32)) {
    const waypoints = await page.evaluate(({ x, y }) => window.__roomkeeper.walkTo(x, y), to);
    if (waypoints > 0) {
      return until(page, what, 10_000, (a) => {
        const s = window.__roomkeeper.state();
        return s.self !== null && Math.hypot(s.self.x - a.x, s.self.y - a.y) >= a.d;
      }, { ...from, d: MOVED });
    }
  }
  throw new Failure(`${what}: no free cell 32 units around (${from.x}, ${from.y}) to walk to`);
}

async function run(browser) {
  let a, b;
  const both = () => Object.fromEntries([['-a', a?.page], ['-b', b?.page]].filter(([, p]) => p));

  await step('join', both, async () => {
    a = await joinPage(browser, 'player A', { newParty: true });
    const s = a.state;
    check(s.party !== '' && a.invite.includes('partyToken='), `player A made a party and plays in party "${s.party}", invitation "${a.invite}"`);
    check(s.worldHash === s.mapHash, `the page built world ${s.worldHash}, the server simulates ${s.mapHash}`);
    summary.playerId = s.playerId;
    summary.worldHash = s.worldHash;
    summary.mapHash = s.mapHash;
    summary.maps.push({ map: s.map, instance: s.instance, worldHash: s.worldHash, mapHash: s.mapHash });
    return { playerId: s.playerId, map: s.map, instance: s.instance, party: s.party, worldHash: s.worldHash, self: s.self };
  });

  await step('move', both, async () => {
    const before = (await state(a.page)).self;
    await a.page.locator('#view').focus();
    await a.page.keyboard.down('ArrowRight');
    let how = 'ArrowRight';
    let after;
    try {
      after = await until(a.page, 'holding ArrowRight moves the player on the server', 4_000,
        (a) => {
          const s = window.__roomkeeper.state();
          return s.self !== null && s.self.x >= a.x + a.d;
        }, { ...before, d: MOVED });
    } catch (err) {
      if (!(err instanceof Failure)) throw err;
      how = 'click-to-move (a collider is right of the spawn)';
    } finally {
      await a.page.keyboard.up('ArrowRight');
    }
    if (!after) after = await walkAway(a.page, 'click-to-move moves the player on the server');
    // No input pending: the server's position and the prediction meet.
    const settled = await until(a.page, 'prediction converges on the server position', 5_000,
      () => {
        const s = window.__roomkeeper.state();
        return s.self !== null && s.predicted !== null && s.path === 0 && Math.hypot(s.self.x - s.predicted.x, s.self.y - s.predicted.y) < 0.5;
      });
    return { how, from: before, to: after.self, predicted: settled.predicted, settled: settled.self };
  });

  await step('lobby', both, async () => {
    // Another page, not joined: its lobby lists the room with player A in it.
    const context = await browser.newContext({ viewport: { width: 1280, height: 720 } });
    try {
      const page = await context.newPage();
      watch(page, 'lobby');
      const url = new URL(PAGE);
      url.searchParams.set('namespace', NAMESPACE);
      await page.goto(url.href, { timeout: Math.min(20_000, left()) });
      const entry = page.locator(`#lobby li[data-room="${ROOM}"]`);
      await page.waitForFunction((room) => {
        const li = document.querySelector(`#lobby li[data-room="${room}"]`);
        return li !== null && Number(li.getAttribute('data-players')) >= 1 && li.getAttribute('data-joinable') === 'true';
      }, ROOM, { timeout: Math.min(20_000, left()), polling: 200 }).catch(async () => {
        throw new Failure(`the lobby does not list ${ROOM} joinable with player A: it shows "${await page.locator('#lobby').textContent()}"`);
      });
      const shown = await entry.textContent();
      await entry.getByRole('button').click({ timeout: Math.min(5_000, left()) });
      check(await page.locator('#room').inputValue() === ROOM, 'choosing the room in the lobby does not fill the form');
      return { shown };
    } finally {
      await context.close();
    }
  });

  await step('second-player', both, async () => {
    // The other codec, against the real server; through A's party invitation.
    b = await joinPage(browser, 'player B', { codec: 'json', authKey: PLAYER_KEY, link: a.invite });
    check(b.state.party === a.state.party, `player B joined through A's invitation and is in party "${b.state.party}", A in "${a.state.party}"`);
    const id = summary.playerId;
    summary.secondPlayerId = b.state.playerId;
    check(b.state.codec === 'json', `player B asked for JSON snapshots and plays with ${b.state.codec}`);
    await checkKeyForgotten(b.page, PLAYER_KEY);
    check(b.state.playerId !== id, `both guests got player id ${id}`);
    const seen = await until(b.page, `player B sees player A (${id})`, 15_000,
      (id) => window.__roomkeeper.state().entities.some((e) => e.id === id && e.kind === 1), id);
    const where = seen.entities.find((e) => e.id === id);
    await walkAway(a.page, 'player A walks');
    const moved = await until(b.page, 'player B sees player A move', 10_000,
      (a) => window.__roomkeeper.state().entities.some((e) => e.id === a.id && Math.hypot(e.x - a.x, e.y - a.y) >= a.d),
      { ...where, d: MOVED });
    return { playerB: b.state.playerId, sawAAt: where, thenAt: moved.entities.find((e) => e.id === id) };
  });

  await step('loot', both, async () => {
    const s = await state(a.page);
    const loot = s.entities.filter((e) => e.kind === 3).sort((p, q) => dist(p, s.self) - dist(q, s.self))[0];
    check(loot, `player A sees no loot around (${s.self.x}, ${s.self.y})`);
    const waypoints = await a.page.evaluate(({ x, y }) => window.__roomkeeper.walkTo(x, y), loot);
    check(waypoints > 0, `no path to the loot at (${loot.x}, ${loot.y})`);
    await until(a.page, `player A reaches the loot at (${loot.x}, ${loot.y})`, 20_000, (l) => {
      const s = window.__roomkeeper.state();
      return s.self !== null && s.path === 0 && Math.hypot(s.self.x - l.x, s.self.y - l.y) <= 8;
    }, loot);
    await a.page.keyboard.press('KeyF');
    const carried = await until(a.page, 'F picks the loot up', 10_000,
      (n) => window.__roomkeeper.state().inventory.length > n, s.inventory.length);
    const slots = await checkSlotsFromDefinitions(a.page, carried, s.inventory);
    await a.page.locator('#inventory button', { hasText: 'drop' }).first().click({ timeout: Math.min(5_000, left()) });
    const dropped = await until(a.page, 'its drop button drops it', 10_000,
      (n) => window.__roomkeeper.state().inventory.length === n, s.inventory.length);
    return { loot, carried: carried.inventory, slots, after: dropped.inventory };
  });

  await step('attack', both, async () => attackAnNPC(a.page));

  await step('portal', both, async () => {
    const s = await state(a.page);
    const portal = s.portals.find((p) => p.to === 'crypt') ?? s.portals[0];
    check(portal, `map ${s.map} has no portal`);
    const waypoints = await a.page.evaluate(({ x, y }) => window.__roomkeeper.walkTo(x, y), portal);
    check(waypoints > 0, `no path from (${s.self.x}, ${s.self.y}) to the portal at (${portal.x}, ${portal.y})`);
    await until(a.page, `player A reaches the portal to ${portal.to}`, 30_000,
      (p) => {
        const s = window.__roomkeeper.state();
        return s.self !== null && Math.hypot(s.self.x - p.x, s.self.y - p.y) <= p.radius - 2;
      }, portal);
    // The destination may still be starting: the server says map_quarantined
    // (it did not start in time) and the player may try again.
    let ack;
    for (let attempt = 0; attempt < 3 && !ack?.ok; attempt++) {
      ack = await a.page.evaluate(() => window.__roomkeeper.enterNearestPortal());
      check(ack.ok || ack.code === 'map_quarantined', `portal.enter refused: ${ack.code}: ${ack.message}`);
    }
    check(ack.ok, `portal.enter refused: ${ack.code}: ${ack.message}`);
    const there = await until(a.page, `player A lands on ${portal.to}`, 45_000,
      (to) => {
        const s = window.__roomkeeper.state();
        return s.map === to && s.connected && s.self !== null && s.worldHash !== '' && s.worldHash === s.mapHash;
      }, portal.to);
    check(there.transfers >= 1, `the client counted ${there.transfers} transfers`);
    summary.maps.push({ map: there.map, instance: there.instance, worldHash: there.worldHash, mapHash: there.mapHash });
    const played = await walkAway(a.page, `player A walks on ${portal.to}`);
    return { portal, map: there.map, instance: there.instance, worldHash: there.worldHash, arrivedAt: there.self, walkedTo: played.self };
  });

  await step('resume', both, async () => {
    const before = await state(a.page);
    await a.page.getByRole('button', { name: 'Drop connection' }).click({ timeout: Math.min(5_000, left()) });
    const after = await until(a.page, 'the client resumes after the dropped connection', 20_000,
      (r) => {
        const s = window.__roomkeeper.state();
        return s.resumes > r && s.connected && s.pageState === 'playing';
      }, before.resumes);
    check(after.playerId === before.playerId, `resumed as player ${after.playerId}, was ${before.playerId}`);
    check(after.map === before.map, `resumed on ${after.map}, was on ${before.map}`);
    const played = await walkAway(a.page, 'player A walks after the resume');
    return { resumes: after.resumes, playerId: after.playerId, map: after.map, walkedTo: played.self };
  });

  check(summary.problems.length === 0, `the page reported problems:\n  ${summary.problems.join('\n  ')}`);
}

async function main() {
  check(PAGE, 'ROOMKEEPER_PAGE is not set (the page URL, like http://127.0.0.1:8090/play/)');
  check(ARTIFACTS, 'ROOMKEEPER_ARTIFACTS is not set (a directory for screenshots and summary.json)');
  mkdirSync(ARTIFACTS, { recursive: true });
  const browser = await launch();
  // The last resort if something hangs outside a bounded wait.
  const watchdog = setTimeout(() => {
    summary.error = `the run took over ${RUN_MS + 20_000} ms`;
    writeSummary();
    console.error(`play: FAIL: ${summary.error}`);
    process.exit(2);
  }, RUN_MS + 20_000);
  try {
    summary.chromium = browser.version();
    await run(browser);
    summary.ok = true;
  } catch (err) {
    summary.error = err instanceof Error ? err.message : String(err);
  } finally {
    await browser.close().catch(() => {});
    clearTimeout(watchdog);
    writeSummary();
  }
}

function writeSummary() {
  if (ARTIFACTS) writeFileSync(join(ARTIFACTS, 'summary.json'), JSON.stringify(summary, null, 2) + '\n');
}

main().then(() => {
  if (summary.ok) {
    console.log(`play: PASS (${Date.now() - started} ms); artifacts in ${ARTIFACTS}`);
    return;
  }
  console.error(`play: FAIL: ${summary.error}`);
  process.exit(1);
}, (err) => {
  console.error(`play: FAIL: ${err instanceof Error ? err.stack : err}`);
  process.exit(1);
});
