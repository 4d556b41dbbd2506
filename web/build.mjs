// Builds the browser client into dist/, which web/embed.go embeds into the
// manager: the demo page (demo/main.ts -> dist/app.js), the benchmark page
// (demo/bench.ts -> dist/bench.js), their HTML and CSS, and the SDK's own
// ES modules and typings (tsconfig.sdk.json) for other projects. The
// Makefile puts mapgen.wasm and Go's wasm_exec.js next to them first.
//
// Usage: node build.mjs   (npm run build)
import { build } from 'esbuild';
import { execFileSync } from 'node:child_process';
import { copyFileSync, existsSync, mkdirSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const web = dirname(fileURLToPath(import.meta.url));
const dist = join(web, 'dist');

// The page's files. The Content-Security-Policy the manager sends allows
// scripts and styles only from files like these, never inline.
const bundles = { app: 'demo/main.ts', bench: 'demo/bench.ts' };
const statics = ['demo/index.html', 'demo/bench.html', 'demo/style.css'];

async function main() {
  mkdirSync(dist, { recursive: true });
  await build({
    entryPoints: Object.fromEntries(Object.entries(bundles).map(([out, src]) => [out, join(web, src)])),
    outdir: dist,
    bundle: true,
    format: 'esm',
    target: 'es2022',
    platform: 'browser',
    minify: true,
    sourcemap: true,
    logLevel: 'warning',
  });
  for (const file of statics) {
    copyFileSync(join(web, file), join(dist, file.slice(file.lastIndexOf('/') + 1)));
  }
  const sdk = join(web, 'tsconfig.sdk.json');
  if (existsSync(sdk)) {
    execFileSync(process.execPath, [join(web, 'node_modules/typescript/bin/tsc'), '-p', sdk], { cwd: web, stdio: 'inherit' });
  }
  for (const needed of ['mapgen.wasm', 'wasm_exec.js']) {
    if (!existsSync(join(dist, needed))) {
      console.warn(`build.mjs: dist/${needed} is missing; the page needs it (make web builds it)`);
    }
  }
}

main().catch((err) => {
  console.error(err instanceof Error ? err.message : err);
  process.exit(1);
});
