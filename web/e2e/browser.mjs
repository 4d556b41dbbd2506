// Shared by the browser scripts: launching Debian's Chromium through
// playwright-core (never a downloaded browser), and a static server for
// web/dist that sends the manager's own Content-Security-Policy, so a page
// that breaks the policy fails here too.
import { createReadStream, readFileSync, statSync } from 'node:fs';
import { createServer } from 'node:http';
import { dirname, extname, join, normalize, sep } from 'node:path';
import { fileURLToPath } from 'node:url';
import { chromium } from 'playwright-core';

export const webDir = join(dirname(fileURLToPath(import.meta.url)), '..');
export const distDir = join(webDir, 'dist');

export const chromiumPath = process.env.ROOMKEEPER_CHROMIUM || '/usr/bin/chromium';

/** Chromium without the background traffic it would otherwise send into a closed network. */
export function launch() {
  return chromium.launch({
    executablePath: chromiumPath,
    args: ['--headless=new', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
      '--disable-background-networking', '--disable-component-update', '--disable-sync'],
  });
}

/** The Content-Security-Policy web/embed.go sends, read from it so the two cannot drift. */
export function managerCSP() {
  const src = readFileSync(join(webDir, 'embed.go'), 'utf8');
  const decl = src.match(/const contentSecurityPolicy = ((?:"[^"]*"\s*\+?\s*)+)/);
  if (!decl) throw new Error('web/embed.go has no contentSecurityPolicy constant');
  return [...decl[1].matchAll(/"([^"]*)"/g)].map((m) => m[1]).join('');
}

const TYPES = {
  '.html': 'text/html; charset=utf-8', '.js': 'text/javascript; charset=utf-8', '.css': 'text/css; charset=utf-8',
  '.wasm': 'application/wasm', '.map': 'application/json', '.json': 'application/json',
};

/** Serves dir on 127.0.0.1 at a free port; resolves to { url, close }. */
export function serveDir(dir) {
  const csp = managerCSP();
  const server = createServer((req, res) => {
    const path = decodeURIComponent(new URL(req.url ?? '/', 'http://x').pathname);
    const file = normalize(join(dir, path.endsWith('/') ? path + 'index.html' : path));
    let ok = file.startsWith(dir + sep);
    try { ok = ok && statSync(file).isFile(); } catch { ok = false; }
    res.setHeader('Content-Security-Policy', csp);
    if (!ok) {
      res.writeHead(404).end('not found');
      return;
    }
    res.writeHead(200, { 'Content-Type': TYPES[extname(file)] ?? 'application/octet-stream' });
    createReadStream(file).pipe(res);
  });
  return new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address();
      resolve({ url: `http://127.0.0.1:${port}/`, close: () => new Promise((done) => server.close(() => done())) });
    });
  });
}

/**
 * Collects what the page reports that a test should see: uncaught errors,
 * console errors (a CSP violation is one) and failed requests.
 */
export function watchPage(page, label, problems) {
  page.on('pageerror', (err) => problems.push(`${label}: uncaught ${err.message}`));
  page.on('console', (msg) => { if (msg.type() === 'error') problems.push(`${label}: console error: ${msg.text()}`); });
  page.on('requestfailed', (req) => {
    // A socket the test dropped on purpose (the resume step) is not a fault.
    if (req.resourceType() !== 'websocket') problems.push(`${label}: request failed: ${req.url()} ${req.failure()?.errorText ?? ''}`);
  });
}
