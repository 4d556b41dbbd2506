// The benchmark page (bench.html), driven by web/e2e/bench.mjs in Chromium:
// what the SDK's snapshot decoder and the demo's renderer cost in a real
// browser, not in node.

import { decodeBinarySnapshot, loadMapgen } from '../src/index.js';
import type { Entity, StaticWorld } from '../src/index.js';
import { Renderer, type Scene } from './render.js';

export interface DecodeResult {
  /** Median over the batches, microseconds per decode. */
  usPerDecode: number;
  batchesUs: number[];
  iterations: number;
  entities: number;
}

export interface FrameResult {
  frames: number;
  entities: number;
  /** Time between requestAnimationFrame callbacks, ms. */
  frameP50: number;
  frameP99: number;
  /** Time inside Renderer.draw, ms. */
  drawP50: number;
  drawP99: number;
  drawMean: number;
}

function hexBytes(hex: string): Uint8Array {
  const out = new Uint8Array(hex.length / 2);
  for (let i = 0; i < out.length; i++) out[i] = parseInt(hex.slice(2 * i, 2 * i + 2), 16);
  return out;
}

function percentile(values: readonly number[], p: number): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.floor(p * sorted.length))] ?? NaN;
}

/**
 * Decodes one delta against its base `iterations` times per batch. The
 * median batch is the figure: a batch that a garbage collection or a tier-up
 * of the JIT fell into says little about the steady state.
 */
function decode(hex: string, vectorBase: Entity[], iterations: number, batches: number): DecodeResult {
  const frame = hexBytes(hex);
  // The vectors leave state and target out when 0 (Go's JSON); the client's bases have them.
  const base = vectorBase.map((e) => ({ ...e, state: e.state ?? 0, target: e.target ?? 0 }));
  const entities = decodeBinarySnapshot(frame, base).entities.length;
  for (let i = 0; i < Math.min(iterations, 2000); i++) decodeBinarySnapshot(frame, base); // let the JIT settle
  const batchesUs: number[] = [];
  for (let b = 0; b < batches; b++) {
    const t0 = performance.now();
    for (let i = 0; i < iterations; i++) decodeBinarySnapshot(frame, base);
    batchesUs.push(((performance.now() - t0) * 1000) / iterations);
  }
  return { usPerDecode: percentile(batchesUs, 0.5), batchesUs, iterations, entities };
}

/** A forest with a portal: colliders and props like a real map's, from the real generator. */
async function benchWorld(): Promise<StaticWorld> {
  const mapgen = await loadMapgen('mapgen.wasm');
  return mapgen.build({ seed: 1, width: 1024, height: 1024, biome: 'forest', portals: [{ to: 'crypt', x: 600, y: 512 }] });
}

/**
 * Entities that all stay on screen (a 1280x720 window shows about 570x320
 * units): 60 players, the first of them "you" in the middle, 120 NPCs and
 * 20 loot around it, each circling on its own orbit.
 */
function crowd(n: number, centre: { x: number; y: number }): (t: number) => Entity[] {
  const seeds = Array.from({ length: n }, (_, i) => ({
    id: i + 1,
    kind: i < n * 0.3 ? 1 : i < n * 0.9 ? 2 : 3,
    x: i === 0 ? centre.x : centre.x + ((i * 97) % 440) - 220,
    y: i === 0 ? centre.y : centre.y + ((i * 61) % 240) - 120,
    r: 4 + (i % 13),
    w: 0.5 + (i % 7) / 5,
  }));
  return (t) => seeds.map((s) => ({
    id: s.id, kind: s.kind, hp: 30 + (s.id % 70), state: 0, target: 0,
    x: s.kind === 3 ? s.x : s.x + s.r * Math.cos(t * s.w + s.id),
    y: s.kind === 3 ? s.y : s.y + s.r * Math.sin(t * s.w + s.id),
  }));
}

/** Renders n moving entities through the demo's renderer for `seconds` of animation frames. */
async function frames(seconds: number, n: number): Promise<FrameResult> {
  const world = await benchWorld();
  const canvas = document.getElementById('view');
  if (!(canvas instanceof HTMLCanvasElement)) throw new Error('bench.html has no canvas#view');
  const renderer = new Renderer(canvas);
  const centre = { x: 512, y: 512 };
  const at = crowd(n, centre);
  const portals = world.portals.map((p) => ({ entity: 10_000 + p.id, to: p.to, x: p.x, y: p.y, radius: p.radius }));
  const deltas: number[] = [], draws: number[] = [];
  return new Promise((resolve) => {
    let last = 0;
    const end = performance.now() + seconds * 1000;
    const step = (now: number) => {
      const entities = at(now / 1000);
      const scene: Scene = { world, entities, selfId: 1, focus: { x: entities[0]!.x, y: entities[0]!.y }, portals, path: [] };
      const t0 = performance.now();
      renderer.draw(scene);
      draws.push(performance.now() - t0);
      if (last) deltas.push(now - last);
      last = now;
      if (now < end) {
        requestAnimationFrame(step);
        return;
      }
      resolve({
        frames: deltas.length, entities: n,
        frameP50: percentile(deltas, 0.5), frameP99: percentile(deltas, 0.99),
        drawP50: percentile(draws, 0.5), drawP99: percentile(draws, 0.99),
        drawMean: draws.reduce((a, b) => a + b, 0) / draws.length,
      });
    };
    requestAnimationFrame(step);
  });
}

declare global {
  interface Window {
    __bench?: { decode: typeof decode; frames: typeof frames };
  }
}

window.__bench = { decode, frames };
document.body.dataset.state = 'ready';
