// The real map generator for tests: web/dist/mapgen.wasm with Go's runtime
// glue (wasm_exec.js), as the page loads them. Node 20 has everything the
// glue needs (crypto, performance, TextEncoder); it fakes fs itself.

import { existsSync, readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { loadMapgen, type Mapgen } from '../../src/index.js';

const dist = new URL('../../dist/', import.meta.url);
const BUILD = 'cd .. && GOOS=js GOARCH=wasm go build -trimpath -ldflags="-s -w" -o web/dist/mapgen.wasm ./web/mapgen && ' +
  'cp "$(go env GOROOT)/lib/wasm/wasm_exec.js" web/dist/';

let loading: Promise<Mapgen> | undefined;

/** The generator, instantiated once per test file. */
export function testMapgen(): Promise<Mapgen> {
  loading ??= load();
  return loading;
}

async function load(): Promise<Mapgen> {
  const glue = new URL('wasm_exec.js', dist);
  const wasm = new URL('mapgen.wasm', dist);
  for (const file of [glue, wasm]) {
    if (!existsSync(file)) throw new Error(`${fileURLToPath(file)} is missing: build it with (from web/) ${BUILD}`);
  }
  await import(glue.href); // defines globalThis.Go
  return loadMapgen(readFileSync(wasm));
}
