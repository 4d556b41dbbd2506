import { beforeAll, describe, expect, it } from 'vitest';
import { encumberedStepDistance, move, speedFactor, stepDistance, type Mapgen, type StaticWorld } from '../src/index.js';
import { testMapgen } from './helpers/mapgen.js';
import { moveVectors } from './helpers/vectors.js';

const vectors = moveVectors();
let mapgen: Mapgen;

beforeAll(async () => {
  mapgen = await testMapgen();
});

describe('the WebAssembly map generator', () => {
  it.each(vectors.maps.map((m) => [m.config['seed'], m] as const))('builds map %s with the server hash', (_, m) => {
    const world = mapgen.build(m.config);
    expect(world.hash).toBe(m.hash);
    expect(world.cols).toBe(Math.ceil(world.width / world.cellSize));
    expect(world.rows).toBe(Math.ceil(world.height / world.cellSize));
    expect(Array.isArray(world.colliders) && Array.isArray(world.props) && Array.isArray(world.portals)).toBe(true);
  });

  it('accepts the config as JSON text too', () => {
    const m = vectors.maps[0]!;
    expect(mapgen.build(JSON.stringify(m.config)).hash).toBe(m.hash);
  });

  it('names the field of a bad config', () => {
    expect(() => mapgen.build({ seed: 1, width: 10, height: 256 })).toThrow(/width/);
  });
});

describe('blocked', () => {
  let world: StaticWorld;
  beforeAll(() => {
    world = mapgen.build(vectors.maps[0]!.config);
  });

  it('blocks outside the map and NaN', () => {
    for (const [x, y] of [[-0.001, 10], [10, -0.001], [world.width, 10], [10, world.height], [NaN, 10], [10, NaN]] as const) {
      expect(world.blocked(x, y)).toBe(true);
    }
  });

  it('answers each collider cell as blocked and the spawn as free', () => {
    for (const c of world.colliders) {
      expect(world.blocked(c.x, c.y)).toBe(true);
      expect(world.blocked(c.x + c.w - 0.01, c.y + c.h - 0.01)).toBe(true);
    }
    expect(world.blocked(world.playerSpawn.x, world.playerSpawn.y)).toBe(false);
  });
});

describe('move', () => {
  it('computes the step as the server does, in float32', () => {
    // float32(48) * float32(1/30) in Go: not the float32 nearest 1.6.
    expect(stepDistance(48, 30)).toBe(1.6000001430511475);
    expect(stepDistance(200, 20)).toBe(10);
  });

  it.each(vectors.maps.map((m) => [m.config['seed'], m] as const))('replays every walk of map %s exactly', (_, m) => {
    const world = mapgen.build(m.config);
    const dist = stepDistance(m.playerSpeed, m.tickRate);
    for (const walk of m.walks) {
      let pos = { x: walk.x, y: walk.y };
      const path = walk.inputs.map(([dx, dy]) => {
        pos = move(world, pos.x, pos.y, dx, dy, dist);
        return [pos.x, pos.y];
      });
      expect(path).toStrictEqual(walk.path.map(([x, y]) => [Math.fround(x), Math.fround(y)]));
    }
  });
});

describe('speedFactor', () => {
  // The built-in packs' bag (internal/content): above 25 a player walks at 0.6 of its speed.
  const bag = { encumberedAt: 25, encumberedSpeed: 0.6 };

  it('slows only above encumberedAt, as content.Bag.SpeedFactor', () => {
    expect(speedFactor(bag, 0)).toBe(1);
    expect(speedFactor(bag, 24.9)).toBe(1);
    expect(speedFactor(bag, 25)).toBe(1); // at the threshold: not above it
    expect(speedFactor(bag, 25.1)).toBe(Math.fround(0.6));
    expect(speedFactor(bag, 40)).toBe(Math.fround(0.6));
  });

  it('compares in float32 like the server: a weight that is 25 as a float32 is not above 25', () => {
    expect(speedFactor(bag, 25.0000001)).toBe(1);
    expect(speedFactor(bag, 25.000002)).toBe(Math.fround(0.6)); // the next float32 above 25 is 25.000001907...
  });

  it('never slows when encumberedSpeed is 0 (no rule)', () => {
    expect(speedFactor({ encumberedAt: 0, encumberedSpeed: 0 }, 1000)).toBe(1);
    expect(speedFactor({ encumberedAt: 25, encumberedSpeed: -1 }, 30)).toBe(1);
  });

  it('gives the step the server moves a loaded player, in float32', () => {
    // Go: float32(48) * float32(0.6) * (1 / float32(30)), and 200 * 0.6 / 20.
    expect(encumberedStepDistance(48, 30, bag, 26)).toBe(0.9600000977516174);
    expect(encumberedStepDistance(200, 20, bag, 26)).toBe(6.000000476837158);
    expect(encumberedStepDistance(48, 30, bag, 25)).toBe(stepDistance(48, 30));
  });
});
