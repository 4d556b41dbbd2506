// Client benchmarks in Chromium, on the built page (web/dist, served here
// with the manager's Content-Security-Policy):
//
//   (a) the SDK's binary snapshot decoder on the "delta, 200 entities
//       moving" wire vector of internal/protocol (budget: 50 us a decode);
//   (b) the demo renderer's frame time with 200 moving entities on screen.
//
// Usage: cd web && node build.mjs && node e2e/bench.mjs
// Needs dist/mapgen.wasm and dist/wasm_exec.js (make web). Exits 1 over
// budget or on any failure. With ROOMKEEPER_ARTIFACTS set, screenshots the
// last frame into that directory.
import { existsSync, readFileSync } from 'node:fs';
import { cpus } from 'node:os';
import { join } from 'node:path';
import { distDir, launch, serveDir, watchPage, webDir } from './browser.mjs';

const DECODE_BUDGET_US = 50;
const VECTOR = 'delta, 200 entities moving';
const DECODE_ITERATIONS = 5000, DECODE_BATCHES = 9;
const FRAME_SECONDS = 4, FRAME_ENTITIES = 200;
const TIMEOUT_MS = 90_000;

function vector() {
  const file = join(webDir, '..', 'internal/protocol/testdata/wire-vectors.json');
  const v = JSON.parse(readFileSync(file, 'utf8')).snapshots.find((s) => s.name === VECTOR);
  if (!v) throw new Error(`${file} has no snapshot vector "${VECTOR}"`);
  return v;
}

function table(rows) {
  const widths = rows[0].map((_, i) => Math.max(...rows.map((r) => String(r[i]).length)));
  return rows.map((r) => r.map((c, i) => String(c).padEnd(widths[i])).join('  ').trimEnd()).join('\n');
}

async function main() {
  for (const f of ['bench.html', 'bench.js', 'mapgen.wasm', 'wasm_exec.js']) {
    if (!existsSync(join(distDir, f))) throw new Error(`web/dist/${f} is missing: run make web (or node build.mjs after building mapgen.wasm)`);
  }
  const { hex, base, entities: want } = vector();
  const server = await serveDir(distDir);
  const browser = await launch();
  const problems = [];
  try {
    const page = await browser.newPage({ viewport: { width: 1280, height: 720 } });
    page.setDefaultTimeout(TIMEOUT_MS);
    watchPage(page, 'bench', problems);
    await page.goto(server.url + 'bench.html');
    await page.waitForFunction(() => document.body.dataset.state === 'ready', null, { timeout: 20_000 });
    const decode = await page.evaluate(([h, b, n, k]) => window.__bench.decode(h, b, n, k),
      [hex, base, DECODE_ITERATIONS, DECODE_BATCHES]);
    const frames = await page.evaluate(([s, n]) => window.__bench.frames(s, n), [FRAME_SECONDS, FRAME_ENTITIES]);
    const heapMiB = await jsHeapMiB(page);
    if (process.env.ROOMKEEPER_ARTIFACTS) {
      await page.screenshot({ path: join(process.env.ROOMKEEPER_ARTIFACTS, 'bench-frame.png') });
    }
    console.log(`Chromium ${browser.version()}, ${cpus().length} x ${cpus()[0]?.model ?? 'unknown CPU'}\n`);
    console.log(table([
      ['measure', 'value', 'detail'],
      ['decode delta (200 entities)', `${decode.usPerDecode.toFixed(2)} us`,
        `median of ${decode.batchesUs.length} batches x ${decode.iterations}; batches ${decode.batchesUs.map((v) => v.toFixed(1)).join('/')} us; budget ${DECODE_BUDGET_US} us`],
      ['frame time p50', `${frames.frameP50.toFixed(2)} ms`, `${frames.frames} frames, ${frames.entities} entities`],
      ['frame time p99', `${frames.frameP99.toFixed(2)} ms`, 'between requestAnimationFrame callbacks'],
      ['draw p50', `${frames.drawP50.toFixed(3)} ms`, 'inside Renderer.draw'],
      ['draw p99', `${frames.drawP99.toFixed(3)} ms`, ''],
      ['draw mean', `${frames.drawMean.toFixed(3)} ms`, ''],
      ['JS heap used', `${heapMiB.toFixed(1)} MiB`, "after the frames (the map generator's WebAssembly memory is apart)"],
    ]));
    if (decode.entities !== want.length) problems.push(`the page decoded ${decode.entities} entities, the vector has ${want.length}`);
    if (decode.usPerDecode > DECODE_BUDGET_US) {
      problems.push(`decoding takes ${decode.usPerDecode.toFixed(1)} us, over the budget of ${DECODE_BUDGET_US} us`);
    }
  } finally {
    await browser.close();
    await server.close();
  }
  if (problems.length > 0) throw new Error(problems.join('\n'));
}

/** The page's JavaScript heap in use, from the DevTools protocol (the page's own view is rounded). */
async function jsHeapMiB(page) {
  const cdp = await page.context().newCDPSession(page);
  await cdp.send('Performance.enable');
  const { metrics } = await cdp.send('Performance.getMetrics');
  const used = metrics.find((m) => m.name === 'JSHeapUsedSize');
  return (used?.value ?? 0) / (1 << 20);
}

main().catch((err) => {
  console.error(`bench: FAIL\n${err instanceof Error ? err.message : err}`);
  process.exit(1);
});
