// The static world of a map, built by the server's own map generator
// (internal/mapgen) compiled to WebAssembly (web/mapgen, dist/mapgen.wasm).
// Building it here from welcome.mapConfig and comparing hashes proves the
// client predicts movement on the very colliders the server simulates.

export interface Point {
  x: number;
  y: number;
}

/** A dungeon's chamber (mapgen.Room): its floor, and its role, 'boss', 'key' or ''. */
export interface Room {
  /** The map's id for it, as room_cleared events name it. */
  id: number;
  x: number;
  y: number;
  w: number;
  h: number;
  role: string;
}

/**
 * A gap in a room's wall (mapgen.Door): the cells [x, x+w) x [y, y+h). Its
 * entity (kind 4) stands at doorCentre(door) and says whether it is open.
 */
export interface Door {
  id: number;
  /** The index in StaticWorld.rooms of the room it leads into. */
  room: number;
  x: number;
  y: number;
  w: number;
  h: number;
  /** The boss room's: it opens only for a player with the key, or when the room is cleared. */
  locked: boolean;
}

export interface StaticWorld {
  hash: string;
  width: number;
  height: number;
  biome: string;
  cellSize: number;
  cols: number;
  rows: number;
  colliders: { id: number; kind: string; x: number; y: number; w: number; h: number }[];
  props: { id: number; kind: string; x: number; y: number }[];
  portals: { id: number; to: string; x: number; y: number; radius: number }[];
  playerSpawn: Point;
  playerSpawns: Point[];
  npcSpawns: Point[];
  lootSpawns: Point[];
  /** A dungeon's rooms (none on other biomes). */
  rooms: Room[];
  /** The rooms' doors. A closed one blocks movement like a wall: see withClosedDoors. */
  doors: Door[];
  /** Whether (x, y) is outside the map or in a collider: mapgen.World.Blocked. */
  blocked(x: number, y: number): boolean;
}

export interface Mapgen {
  /** Builds the world of a MapConfig; throws Error(the generator's message) on a bad one. */
  build(config: unknown): StaticWorld;
}

/** What web/mapgen registers as globalThis.roomkeeperMapgen. */
interface MapgenModule {
  build(configJSON: string): { world?: string; blocked?: Uint8Array; error?: string };
}

/** The part of wasm_exec.js's Go class this module uses. */
interface GoRuntime {
  importObject: WebAssembly.Imports;
  run(instance: WebAssembly.Instance): Promise<void>;
}

type Globals = typeof globalThis & {
  Go?: new () => GoRuntime;
  roomkeeperMapgen?: MapgenModule;
};

/**
 * Instantiates the map generator. wasm is the module's URL (fetched) or
 * its bytes. The Go runtime glue (wasm_exec.js, which defines globalThis.Go)
 * must be loaded first.
 */
export async function loadMapgen(wasm: string | URL | ArrayBuffer | Uint8Array): Promise<Mapgen> {
  const g = globalThis as Globals;
  if (g.Go === undefined) {
    throw new Error('globalThis.Go is not defined: load wasm_exec.js (the Go runtime glue) before loadMapgen');
  }
  const go = new g.Go();
  const bytes = typeof wasm === 'string' || wasm instanceof URL ? await fetchBytes(wasm) : wasm;
  const { instance } = await WebAssembly.instantiate(bytes as BufferSource, go.importObject);
  delete g.roomkeeperMapgen; // an earlier instance's must not pass for this one's
  // run resolves only when the Go program exits, and mapgen's main never
  // does (its functions live as long as the page). It registers them
  // before it first blocks, which is before run returns its promise.
  void go.run(instance);
  const module = g.roomkeeperMapgen;
  if (module === undefined) throw new Error('mapgen.wasm did not register globalThis.roomkeeperMapgen');
  return { build: (config) => buildWorld(module, config) };
}

async function fetchBytes(url: string | URL): Promise<ArrayBuffer> {
  const resp = await fetch(url);
  if (!resp.ok) throw new Error(`fetching ${String(url)}: HTTP ${resp.status}`);
  return resp.arrayBuffer();
}

/** The shape of the world JSON web/mapgen returns; Go writes empty lists as null. */
interface WorldJSON extends Omit<StaticWorld, 'blocked' | 'colliders' | 'props' | 'portals' | 'playerSpawns' | 'npcSpawns' | 'lootSpawns' | 'rooms' | 'doors'> {
  colliders: StaticWorld['colliders'] | null;
  props: StaticWorld['props'] | null;
  portals: StaticWorld['portals'] | null;
  playerSpawns: Point[] | null;
  npcSpawns: Point[] | null;
  lootSpawns: Point[] | null;
  /** Absent from a generator built before rooms and doors (its hash would not match anyway). */
  rooms?: Room[] | null;
  doors?: Door[] | null;
}

function buildWorld(module: MapgenModule, config: unknown): StaticWorld {
  const result = module.build(typeof config === 'string' ? config : JSON.stringify(config));
  if (result.error !== undefined) throw new Error(result.error);
  if (result.world === undefined || result.blocked === undefined) throw new Error('mapgen returned neither a world nor an error');
  const w = JSON.parse(result.world) as WorldJSON;
  const grid = result.blocked;
  if (grid.length !== w.cols * w.rows) throw new Error(`mapgen's grid has ${grid.length} cells, want ${w.cols}x${w.rows}`);
  return {
    ...w,
    colliders: w.colliders ?? [],
    props: w.props ?? [],
    portals: w.portals ?? [],
    playerSpawns: w.playerSpawns ?? [],
    npcSpawns: w.npcSpawns ?? [],
    lootSpawns: w.lootSpawns ?? [],
    rooms: w.rooms ?? [],
    doors: w.doors ?? [],
    blocked: blockedFn(w.width, w.height, w.cellSize, w.cols, grid),
  };
}

/**
 * mapgen.World.Blocked on the byte grid: outside [0, width) x [0, height)
 * (NaN included) is blocked, else the cell's byte says. Go's
 * int(x)/CellSize equals floor(x / cellSize) for the x >= 0 that get here.
 */
function blockedFn(
  width: number,
  height: number,
  cellSize: number,
  cols: number,
  grid: Uint8Array,
): (x: number, y: number) => boolean {
  return (x, y) => {
    if (!(x >= 0 && y >= 0 && x < width && y < height)) return true;
    return grid[Math.floor(x / cellSize) + Math.floor(y / cellSize) * cols] === 1;
  };
}
