package mapgen

// CellSize is the side of one walkability cell in world units. Every
// collider covers whole cells (clipped at the map's right and bottom edges),
// so the cell grid answers Blocked exactly, not approximately.
const CellSize = 8

// Rect is an axis-aligned rectangle in integer world units covering
// [X, X+W) x [Y, Y+H).
type Rect struct{ X, Y, W, H int32 }

// Collider is a static obstacle entities cannot enter.
type Collider struct {
	// ID is unique within the world and stable for a given config.
	ID uint32
	// Kind is what the obstacle looks like: "rock", "tree", "cactus" or "wall".
	Kind string
	// Rect is the blocked area.
	Rect Rect
}

// Prop is decoration that does not block movement.
type Prop struct {
	// ID is unique within the world and stable for a given config.
	ID uint32
	// Kind is what the prop looks like, for example "flower" or "torch".
	Kind string
	// X and Y are its position in world units, always on a walkable cell.
	X, Y int32
}

// PortalAnchor is where a configured portal sits in the world. No collider
// comes closer than Radius to (X, Y), and the anchor is reachable on foot
// from the player spawn.
type PortalAnchor struct {
	// ID is unique within the world and stable for a given config.
	ID uint32
	// To names the destination map.
	To string
	// X and Y are the portal's position in world units, as configured.
	X, Y int32
	// Radius is the clear distance around the anchor in world units.
	Radius int32
}

// Point is a position in integer world units.
type Point struct{ X, Y int32 }

// World is the static, generated part of a map. Treat it as read-only: the
// simulation and every client share one World per config.
type World struct {
	// Config is the validated input, with the biome defaulted to meadow.
	Config Config
	// Width and Height are the map size in world units.
	Width, Height int32
	// Colliders are the obstacles, non-overlapping and inside the map.
	Colliders []Collider
	// Props are decorations on walkable cells.
	Props []Prop
	// Portals are the anchors of Config.Portals, in the same order.
	Portals []PortalAnchor
	// PlayerSpawn is walkable, in a collider-free area near the map centre.
	PlayerSpawn Point
	// PlayerSpawns are the Config.SpawnPoints places new players start
	// at: PlayerSpawn first, then walkable cell centres spread over the
	// map, each as far from the others as the candidates allow.
	PlayerSpawns []Point
	// NPCSpawns holds round(NPCDensity*WalkableCells()) distinct walkable
	// cell centres, outside the player spawn area while there is room.
	NPCSpawns []Point
	// LootSpawns holds round(LootDensity*WalkableCells()/4) distinct
	// walkable cell centres.
	LootSpawns []Point
	// Rooms are a dungeon's chambers, in generation order; other biomes
	// have none. NPC, loot and player spawns never lie on a door.
	Rooms []Room
	// Doors are the rooms' doors, by room.
	Doors []Door
	// Hash is the hex SHA-256 of a little-endian encoding of the fields
	// above. The float densities enter only through the spawn lists they
	// produce, so the hash never depends on float formatting.
	Hash string

	grid     bitgrid // set bits are blocked cells, row-major
	maxX     float64 // Width, kept unexported so Blocked can trust it
	maxY     float64 // Height, likewise
	walkable int
}

// Blocked reports whether world position (x, y) is outside the map or
// inside a collider. It is a bounds check and one bit test, without
// allocation, because the simulation asks it for every moving entity on
// every tick. NaN is blocked.
func (w *World) Blocked(x, y float64) bool {
	if !(x >= 0 && y >= 0 && x < w.maxX && y < w.maxY) {
		return true
	}
	return w.grid.get(int(x)/CellSize, int(y)/CellSize)
}

// Cells returns the size of the walkability grid: the map is cols x rows
// cells of CellSize, the last column and row possibly cut short by the map
// edge.
func (w *World) Cells() (cols, rows int) {
	return w.grid.cols, w.grid.rows
}

// WalkableCells returns how many cells hold no collider and are no door:
// the cells spawns may take, whose number the spawn counts are fractions of.
func (w *World) WalkableCells() int {
	return w.walkable
}

// bitgrid is a cols x rows bitmap, 64 cells to a word, small enough that a
// 4096x4096 map's grid (32 KiB) stays in cache during a tick.
type bitgrid struct {
	cols, rows int
	bits       []uint64
}

func newBitgrid(cols, rows int) bitgrid {
	return bitgrid{cols: cols, rows: rows, bits: make([]uint64, (cols*rows+63)/64)}
}

func (g *bitgrid) get(cx, cy int) bool {
	i := uint(cy*g.cols + cx)
	return g.bits[i/64]&(1<<(i%64)) != 0
}

func (g *bitgrid) set(cx, cy int) {
	i := uint(cy*g.cols + cx)
	g.bits[i/64] |= 1 << (i % 64)
}

// setRect sets every cell of r, which must lie inside the grid.
func (g *bitgrid) setRect(r cellRect) {
	for cy := r.y0; cy <= r.y1; cy++ {
		for cx := r.x0; cx <= r.x1; cx++ {
			g.set(cx, cy)
		}
	}
}

// anyInRect reports whether any cell of r is set; r must lie inside the grid.
func (g *bitgrid) anyInRect(r cellRect) bool {
	for cy := r.y0; cy <= r.y1; cy++ {
		for cx := r.x0; cx <= r.x1; cx++ {
			if g.get(cx, cy) {
				return true
			}
		}
	}
	return false
}

// cellRect is an inclusive range of cells, [x0, x1] x [y0, y1].
type cellRect struct{ x0, y0, x1, y1 int }

// grow returns r extended by n cells on every side and clipped to the grid.
func (r cellRect) grow(n, cols, rows int) cellRect {
	return cellRect{
		x0: max(r.x0-n, 0), y0: max(r.y0-n, 0),
		x1: min(r.x1+n, cols-1), y1: min(r.y1+n, rows-1),
	}
}

// clip returns r limited to o; the result may be empty (x0 > x1).
func (r cellRect) clip(o cellRect) cellRect {
	return cellRect{
		x0: max(r.x0, o.x0), y0: max(r.y0, o.y0),
		x1: min(r.x1, o.x1), y1: min(r.y1, o.y1),
	}
}

func (r cellRect) contains(cx, cy int) bool {
	return cx >= r.x0 && cx <= r.x1 && cy >= r.y0 && cy <= r.y1
}

func (r cellRect) centre() (cx, cy int) {
	return (r.x0 + r.x1) / 2, (r.y0 + r.y1) / 2
}

// Arrival is where a player coming from map from appears: on the anchor of
// this map's portal back to from, so walking back is one step away, else
// at the player spawn. Both are walkable by construction.
func (w *World) Arrival(from string) Point {
	for _, p := range w.Portals {
		if p.To == from {
			return Point{X: p.X, Y: p.Y}
		}
	}
	return w.PlayerSpawn
}

// Reach is the set of cells a walker starting at the player spawn can
// reach through walkable cells (doors count as walkable: they open).
type Reach struct{ cells bitgrid }

// Reach floods the map from its player spawn.
func (w *World) Reach() *Reach {
	seen := newBitgrid(w.grid.cols, w.grid.rows)
	sx, sy := int(w.PlayerSpawn.X)/CellSize, int(w.PlayerSpawn.Y)/CellSize
	if w.Blocked(float64(w.PlayerSpawn.X), float64(w.PlayerSpawn.Y)) {
		return &Reach{cells: seen}
	}
	seen.set(sx, sy)
	queue := []int{sy*w.grid.cols + sx}
	for len(queue) > 0 {
		cx, cy := queue[0]%w.grid.cols, queue[0]/w.grid.cols
		queue = queue[1:]
		for _, n := range [4][2]int{{cx - 1, cy}, {cx + 1, cy}, {cx, cy - 1}, {cx, cy + 1}} {
			if n[0] < 0 || n[1] < 0 || n[0] >= w.grid.cols || n[1] >= w.grid.rows || seen.get(n[0], n[1]) || w.grid.get(n[0], n[1]) {
				continue
			}
			seen.set(n[0], n[1])
			queue = append(queue, n[1]*w.grid.cols+n[0])
		}
	}
	return &Reach{cells: seen}
}

// Has reports whether world position (x, y) lies in a reached cell.
func (r *Reach) Has(x, y float32) bool {
	if !(x >= 0 && y >= 0) {
		return false
	}
	cx, cy := int(x)/CellSize, int(y)/CellSize
	return cx < r.cells.cols && cy < r.cells.rows && r.cells.get(cx, cy)
}
