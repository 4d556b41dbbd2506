package mapgen

import (
	"fmt"
	"math"
	"reflect"
	"strings"
	"testing"
)

func mustGenerate(t testing.TB, cfg Config) *World {
	t.Helper()
	w, err := Generate(cfg)
	if err != nil {
		t.Fatalf("Generate(%+v): %v", cfg, err)
	}
	return w
}

// goldenConfigs pin the generator's output. A changed hash means every
// client built against the old version now sees a different world: bump
// hashFormat and update the hashes together, on purpose.
var goldenConfigs = []struct {
	name string
	cfg  Config
	hash string
}{
	{
		name: "meadow 512 seed 42 with a portal",
		cfg: Config{Seed: 42, Width: 512, Height: 512, Biome: "meadow", NPCDensity: 0.1, LootDensity: 0.2,
			Portals: []Portal{{To: "town", X: 500, Y: 256}}},
		hash: "247b471f11e37865c753b60abf04fa75cb0ca698fdfe4d56ac91fd327124e37e",
	},
	{
		name: "dungeon 256 seed 7",
		cfg:  Config{Seed: 7, Width: 256, Height: 256, Biome: "dungeon", NPCDensity: 0.4},
		hash: "8e0d0430320261707460f4bdbf7cdaa9e3661c349eb0c4cd1ecccd00a9cc2eea",
	},
	{
		name: "forest 300x200 negative seed",
		cfg: Config{Seed: -3, Width: 300, Height: 200, Biome: "forest", NPCDensity: 0.05, LootDensity: 1,
			Portals: []Portal{{To: "a", X: 0, Y: 0}, {To: "b", X: 299, Y: 199}}},
		hash: "e850e4fe840af0e5e8146dc528580560c380a3aa6f8da7444b1ab48c4cc59432",
	},
	{
		name: "desert 1000 default densities",
		cfg:  Config{Seed: 2026, Width: 1000, Height: 1000, Biome: "desert"},
		hash: "2a3f6bf838e631bed5641fcc1dee35f3a7748d2791833fb1d15750868e16aa85",
	},
}

func TestGoldenHashes(t *testing.T) {
	for _, tt := range goldenConfigs {
		t.Run(tt.name, func(t *testing.T) {
			if got := mustGenerate(t, tt.cfg).Hash; got != tt.hash {
				t.Errorf("Hash = %s, want %s", got, tt.hash)
			}
		})
	}
}

func TestSameConfigSameWorld(t *testing.T) {
	for _, tt := range goldenConfigs {
		a, b := mustGenerate(t, tt.cfg), mustGenerate(t, tt.cfg)
		if a.Hash != b.Hash {
			t.Errorf("%s: hashes differ: %s and %s", tt.name, a.Hash, b.Hash)
		}
		if !reflect.DeepEqual(a, b) {
			t.Errorf("%s: two worlds from one config differ", tt.name)
		}
	}
}

func TestDifferentSeedDifferentWorld(t *testing.T) {
	for _, tt := range goldenConfigs {
		other := tt.cfg
		other.Seed++
		a, b := mustGenerate(t, tt.cfg), mustGenerate(t, other)
		if a.Hash == b.Hash {
			t.Errorf("%s: seeds %d and %d give the same hash", tt.name, tt.cfg.Seed, other.Seed)
		}
		if reflect.DeepEqual(a.Colliders, b.Colliders) {
			t.Errorf("%s: seeds %d and %d give the same colliders", tt.name, tt.cfg.Seed, other.Seed)
		}
	}
}

func TestEmptyBiomeIsMeadow(t *testing.T) {
	cfg := goldenConfigs[0].cfg
	cfg.Biome = ""
	if got, want := mustGenerate(t, cfg).Hash, goldenConfigs[0].hash; got != want {
		t.Fatalf("biome \"\" gives hash %s, meadow gives %s", got, want)
	}
}

func TestWorldDoesNotAliasConfig(t *testing.T) {
	cfg := goldenConfigs[0].cfg
	cfg.Portals = []Portal{{To: "town", X: 500, Y: 256}}
	w := mustGenerate(t, cfg)
	cfg.Portals[0].To = "elsewhere"
	if w.Config.Portals[0].To != "town" {
		t.Fatal("changing the caller's portals changed the world's config")
	}
}

// TestInvariants checks every promise of World on many shapes of map,
// including cut-short last cells and portals on edges and corners.
func TestInvariants(t *testing.T) {
	sizes := [][2]int32{{32, 32}, {33, 47}, {64, 64}, {256, 256}, {517, 300}, {1000, 123}, {4096, 40}}
	densities := [][2]float64{{0, 0}, {0.3, 0.5}, {1, 1}}
	for _, biome := range []string{"meadow", "forest", "desert", "dungeon"} {
		for i, size := range sizes {
			for seed := int64(-1); seed <= 1; seed++ {
				d := densities[(i+int(seed)+3)%len(densities)]
				cfg := Config{Seed: seed, Width: size[0], Height: size[1], Biome: biome, NPCDensity: d[0], LootDensity: d[1],
					Portals: edgePortals(size[0], size[1])}
				t.Run(fmt.Sprintf("%s/%dx%d/seed%d", biome, size[0], size[1], seed), func(t *testing.T) {
					checkWorld(t, mustGenerate(t, cfg))
				})
			}
		}
	}
}

func TestInvariantsLargest(t *testing.T) {
	for _, biome := range []string{"forest", "dungeon"} {
		cfg := Config{Seed: 99, Width: 4096, Height: 4096, Biome: biome, NPCDensity: 0.05, LootDensity: 0.1,
			Portals: edgePortals(4096, 4096)}
		checkWorld(t, mustGenerate(t, cfg))
	}
}

// edgePortals puts portals in two corners, on an edge and in the middle.
func edgePortals(w, h int32) []Portal {
	return []Portal{{To: "nw", X: 0, Y: 0}, {To: "se", X: w - 1, Y: h - 1}, {To: "e", X: w - 1, Y: h / 3}, {To: "mid", X: w / 3, Y: h / 2}}
}

func checkWorld(t *testing.T, w *World) {
	t.Helper()
	blocked := rasterize(t, w)
	checkGrid(t, w, blocked)
	checkDungeon(t, w, blocked)
	checkOutside(t, w)
	checkIDs(t, w)
	checkClearAround(t, w, "player spawn", w.PlayerSpawn, spawnClearRadius)
	checkSpawnCentred(t, w)
	for _, p := range w.Portals {
		checkClearAround(t, w, "portal to "+p.To, Point{X: p.X, Y: p.Y}, p.Radius)
	}
	checkPortalsMatchConfig(t, w)
	checkSpawnList(t, w, "NPC", w.NPCSpawns, spawnCount(w.Config.NPCDensity, w.WalkableCells(), 1))
	checkSpawnList(t, w, "loot", w.LootSpawns, spawnCount(w.Config.LootDensity, w.WalkableCells(), 4))
	for _, p := range w.Props {
		if w.Blocked(float64(p.X), float64(p.Y)) {
			t.Errorf("prop %d (%s) at (%d,%d) is on a blocked cell", p.ID, p.Kind, p.X, p.Y)
		}
	}
	checkReachable(t, w, blocked)
	checkBorder(t, w, blocked)
}

// rasterize marks the cells each collider covers, checking that colliders
// are cell-aligned, inside the map and do not overlap.
func rasterize(t *testing.T, w *World) [][]bool {
	t.Helper()
	cols, rows := w.Cells()
	if cols != int(w.Width+CellSize-1)/CellSize || rows != int(w.Height+CellSize-1)/CellSize {
		t.Fatalf("Cells() = %d x %d for a %d x %d map", cols, rows, w.Width, w.Height)
	}
	blocked := make([][]bool, rows)
	for y := range blocked {
		blocked[y] = make([]bool, cols)
	}
	for _, c := range w.Colliders {
		r := c.Rect
		if r.X < 0 || r.Y < 0 || r.W <= 0 || r.H <= 0 || r.X+r.W > w.Width || r.Y+r.H > w.Height {
			t.Fatalf("collider %d %+v is not inside the %dx%d map", c.ID, r, w.Width, w.Height)
		}
		if r.X%CellSize != 0 || r.Y%CellSize != 0 || (r.W%CellSize != 0 && r.X+r.W != w.Width) || (r.H%CellSize != 0 && r.Y+r.H != w.Height) {
			t.Fatalf("collider %d %+v is not cell-aligned", c.ID, r)
		}
		for cy := r.Y / CellSize; cy < (r.Y+r.H+CellSize-1)/CellSize; cy++ {
			for cx := r.X / CellSize; cx < (r.X+r.W+CellSize-1)/CellSize; cx++ {
				if blocked[cy][cx] {
					t.Fatalf("collider %d %+v overlaps another at cell (%d,%d)", c.ID, r, cx, cy)
				}
				blocked[cy][cx] = true
			}
		}
	}
	return blocked
}

// checkGrid compares Blocked with the rasterized colliders at each cell's
// corners and centre, and WalkableCells with the count.
func checkGrid(t *testing.T, w *World, blocked [][]bool) {
	t.Helper()
	walkable := 0
	doors := doorCells(w)
	for cy, row := range blocked {
		for cx, want := range row {
			if !want && !doors[[2]int{cx, cy}] {
				walkable++
			}
			x0, y0 := float64(cx*CellSize), float64(cy*CellSize)
			x1 := math.Min(x0+CellSize, float64(w.Width)) - 0.001
			y1 := math.Min(y0+CellSize, float64(w.Height)) - 0.001
			for _, p := range [][2]float64{{x0, y0}, {x1, y0}, {x0, y1}, {x1, y1}, {(x0 + x1) / 2, (y0 + y1) / 2}} {
				if got := w.Blocked(p[0], p[1]); got != want {
					t.Fatalf("Blocked(%v, %v) = %v, colliders say %v", p[0], p[1], got, want)
				}
			}
		}
	}
	if w.WalkableCells() != walkable {
		t.Errorf("WalkableCells() = %d, colliders leave %d", w.WalkableCells(), walkable)
	}
}

func checkOutside(t *testing.T, w *World) {
	t.Helper()
	W, H := float64(w.Width), float64(w.Height)
	inf := math.Inf(1)
	for _, p := range [][2]float64{
		{-0.001, H / 2}, {W / 2, -0.001}, {W, H / 2}, {W / 2, H}, {W, H}, {-1e9, -1e9}, {1e12, 5},
		{math.NaN(), 5}, {5, math.NaN()}, {inf, 5}, {5, -inf},
	} {
		if !w.Blocked(p[0], p[1]) {
			t.Errorf("Blocked(%v, %v) = false outside the %vx%v map", p[0], p[1], W, H)
		}
	}
}

func checkIDs(t *testing.T, w *World) {
	t.Helper()
	seen := map[uint32]string{}
	use := func(id uint32, what string) {
		if id == 0 {
			t.Errorf("%s has id 0", what)
		}
		if prev, dup := seen[id]; dup {
			t.Errorf("id %d used by %s and %s", id, prev, what)
		}
		seen[id] = what
	}
	for i, c := range w.Colliders {
		use(c.ID, fmt.Sprintf("collider %d", i))
	}
	for i, p := range w.Props {
		use(p.ID, fmt.Sprintf("prop %d", i))
	}
	for i, p := range w.Portals {
		use(p.ID, fmt.Sprintf("portal %d", i))
	}
	for i, r := range w.Rooms {
		use(r.ID, fmt.Sprintf("room %d", i))
	}
	for i, d := range w.Doors {
		use(d.ID, fmt.Sprintf("door %d", i))
	}
}

// checkClearAround checks that p is walkable and no collider comes closer
// than r.
func checkClearAround(t *testing.T, w *World, what string, p Point, r int32) {
	t.Helper()
	if w.Blocked(float64(p.X), float64(p.Y)) {
		t.Errorf("%s at (%d,%d) is blocked", what, p.X, p.Y)
	}
	for _, c := range w.Colliders {
		dx := max(c.Rect.X-p.X, 0, p.X-(c.Rect.X+c.Rect.W))
		dy := max(c.Rect.Y-p.Y, 0, p.Y-(c.Rect.Y+c.Rect.H))
		if int64(dx)*int64(dx)+int64(dy)*int64(dy) < int64(r)*int64(r) {
			t.Errorf("%s at (%d,%d): collider %d %+v is closer than %d", what, p.X, p.Y, c.ID, c.Rect, r)
		}
	}
}

func checkSpawnCentred(t *testing.T, w *World) {
	t.Helper()
	dx, dy := w.PlayerSpawn.X-w.Width/2, w.PlayerSpawn.Y-w.Height/2
	if dx < -CellSize || dx > CellSize || dy < -CellSize || dy > CellSize {
		t.Errorf("player spawn %+v is not near the centre of the %dx%d map", w.PlayerSpawn, w.Width, w.Height)
	}
}

func checkPortalsMatchConfig(t *testing.T, w *World) {
	t.Helper()
	if len(w.Portals) != len(w.Config.Portals) {
		t.Fatalf("%d portal anchors for %d portals", len(w.Portals), len(w.Config.Portals))
	}
	for i, p := range w.Config.Portals {
		a := w.Portals[i]
		if a.To != p.To || a.X != p.X || a.Y != p.Y || a.Radius != portalRadius {
			t.Errorf("portal anchor %d = %+v for portal %+v", i, a, p)
		}
	}
}

// checkSpawnList checks the count and that each spawn is a distinct,
// walkable cell centre.
func checkSpawnList(t *testing.T, w *World, what string, pts []Point, want int) {
	t.Helper()
	if len(pts) != want {
		t.Errorf("%d %s spawns, want %d", len(pts), what, want)
	}
	seen := map[Point]bool{}
	for _, p := range pts {
		if seen[p] {
			t.Errorf("%s spawn %+v appears twice", what, p)
		}
		seen[p] = true
		if w.Blocked(float64(p.X), float64(p.Y)) {
			t.Errorf("%s spawn %+v is blocked", what, p)
		}
		cx, cy := int(p.X/CellSize), int(p.Y/CellSize)
		x0, cw := cellSpan(cx, w.Width)
		y0, ch := cellSpan(cy, w.Height)
		if p.X != x0+cw/2 || p.Y != y0+ch/2 {
			t.Errorf("%s spawn %+v is not a cell centre", what, p)
		}
	}
}

// checkReachable walks the grid from the player spawn and expects to reach
// every walkable cell, so every spawn, prop and portal can be reached.
func checkReachable(t *testing.T, w *World, blocked [][]bool) {
	t.Helper()
	cols, rows := w.Cells()
	seen := make([][]bool, rows)
	for y := range seen {
		seen[y] = make([]bool, cols)
	}
	start := [2]int{int(w.PlayerSpawn.X / CellSize), int(w.PlayerSpawn.Y / CellSize)}
	queue := [][2]int{start}
	seen[start[1]][start[0]] = true
	reached := 0
	doors := doorCells(w)
	for len(queue) > 0 {
		c := queue[0]
		queue = queue[1:]
		if !doors[c] {
			reached++
		}
		for _, d := range [][2]int{{1, 0}, {-1, 0}, {0, 1}, {0, -1}} {
			x, y := c[0]+d[0], c[1]+d[1]
			if x >= 0 && y >= 0 && x < cols && y < rows && !blocked[y][x] && !seen[y][x] {
				seen[y][x] = true
				queue = append(queue, [2]int{x, y})
			}
		}
	}
	if reached != w.WalkableCells() {
		t.Errorf("only %d of %d walkable cells are reachable from the player spawn", reached, w.WalkableCells())
	}
}

// checkBorder: the open biomes keep the outer ring of cells walkable; the
// dungeon keeps it walled except where the spawn's or a portal's clear area
// needs it open.
func checkBorder(t *testing.T, w *World, blocked [][]bool) {
	t.Helper()
	cols, rows := w.Cells()
	for cy := range rows {
		for cx := range cols {
			if cx != 0 && cy != 0 && cx != cols-1 && cy != rows-1 {
				continue
			}
			if w.Config.Biome != "dungeon" {
				if blocked[cy][cx] {
					t.Fatalf("border cell (%d,%d) of a %s map is blocked", cx, cy, w.Config.Biome)
				}
				continue
			}
			if !blocked[cy][cx] && !nearClearArea(w, cx, cy) {
				t.Fatalf("border cell (%d,%d) of a dungeon is open", cx, cy)
			}
		}
	}
}

// nearClearArea reports whether a cell overlaps the open square of the
// spawn's or a portal's clear radius.
func nearClearArea(w *World, cx, cy int) bool {
	overlaps := func(p Point, r int32) bool {
		x0, y0 := int32(cx*CellSize), int32(cy*CellSize)
		return x0 < p.X+r && x0+CellSize > p.X-r && y0 < p.Y+r && y0+CellSize > p.Y-r
	}
	if overlaps(w.PlayerSpawn, spawnClearRadius) {
		return true
	}
	for _, p := range w.Portals {
		if overlaps(Point{X: p.X, Y: p.Y}, p.Radius) {
			return true
		}
	}
	return false
}

func TestBiomesDiffer(t *testing.T) {
	blockedShare := map[string]float64{}
	kinds := map[string]map[string]bool{}
	for _, biome := range []string{"meadow", "forest", "desert", "dungeon"} {
		w := mustGenerate(t, Config{Seed: 5, Width: 1024, Height: 1024, Biome: biome})
		cols, rows := w.Cells()
		blockedShare[biome] = 1 - float64(w.WalkableCells())/float64(cols*rows)
		kinds[biome] = map[string]bool{}
		for _, c := range w.Colliders {
			kinds[biome][c.Kind] = true
		}
	}
	if !(blockedShare["meadow"] < blockedShare["desert"] && blockedShare["desert"] < blockedShare["forest"] && blockedShare["forest"] < blockedShare["dungeon"]) {
		t.Errorf("blocked share should grow meadow < desert < forest < dungeon, got %v", blockedShare)
	}
	for biome, want := range map[string]string{"meadow": "rock", "forest": "tree", "desert": "cactus", "dungeon": "wall"} {
		if !kinds[biome][want] {
			t.Errorf("%s has no %s colliders; kinds %v", biome, want, kinds[biome])
		}
	}
}

func TestZeroWorldIsAllBlocked(t *testing.T) {
	var w World
	if !w.Blocked(0, 0) || !w.Blocked(1, 1) {
		t.Fatal("a zero World must block everything rather than panic")
	}
}

// TestSpawnPointsAreSpreadAndDeterministic: a map asks for n spawn
// points and gets n distinct walkable ones, the first at the centre's
// spawn, the same for the same seed; one spawn point changes nothing of a
// map's world or hash.
func TestSpawnPointsAreSpreadAndDeterministic(t *testing.T) {
	base := Config{Seed: 11, Width: 1024, Height: 1024, Biome: "forest"}
	one, err := Generate(base)
	if err != nil {
		t.Fatal(err)
	}
	explicit := base
	explicit.SpawnPoints = 1
	if w, _ := Generate(explicit); w.Hash != one.Hash || len(w.PlayerSpawns) != 1 || w.PlayerSpawns[0] != one.PlayerSpawn {
		t.Fatalf("spawnPoints 1: hash %s spawns %v, want the map of spawnPoints 0 (%s)", w.Hash, w.PlayerSpawns, one.Hash)
	}
	spread := base
	spread.SpawnPoints = 16
	a, err := Generate(spread)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := Generate(spread)
	if len(a.PlayerSpawns) != 16 || a.PlayerSpawns[0] != one.PlayerSpawn || a.Hash == one.Hash || a.Hash != b.Hash {
		t.Fatalf("16 spawn points: %d of them, first %v, hash %s (one point: %s, again: %s)", len(a.PlayerSpawns), a.PlayerSpawns[0], a.Hash, one.Hash, b.Hash)
	}
	seen := map[Point]bool{}
	for i, p := range a.PlayerSpawns {
		if a.Blocked(float64(p.X), float64(p.Y)) || seen[p] {
			t.Fatalf("spawn point %d %v is blocked or repeated", i, p)
		}
		seen[p] = true
		if i > 0 && math.Hypot(float64(p.X-a.PlayerSpawns[0].X), float64(p.Y-a.PlayerSpawns[0].Y)) < 100 {
			t.Errorf("spawn point %d %v is within 100 units of the centre's: not spread", i, p)
		}
	}
	if _, err := ParseConfig([]byte(`{"width":64,"height":64,"spawnPoints":65}`)); err == nil || !strings.Contains(err.Error(), "spawnPoints") {
		t.Errorf("65 spawn points: %v, want refused naming spawnPoints", err)
	}
}
