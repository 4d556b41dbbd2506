package mapgen

import "math"

// Clear radii in world units. Nothing blocking comes closer than these to
// the player spawn and to a portal anchor, so arrivals never land in a wall
// and a portal is never walled in.
const (
	spawnClearRadius = 20
	portalRadius     = 24
)

// Generate builds the static world of cfg. It fails only on an invalid
// config, with an error naming each bad field; for a valid config the result
// is fully determined by cfg.
func Generate(cfg Config) (*World, error) {
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	g := newGenerator(cfg.normalized())
	g.layTerrain()
	g.scatterProps()
	g.anchorPortals()
	g.placeSpawns()
	g.placePlayerSpawns()
	return g.world(), nil
}

// generator holds the state of one Generate call.
type generator struct {
	cfg        Config
	spec       *biomeSpec
	cols, rows int
	blocked    bitgrid
	spawnCell  [2]int
	spawnClear cellRect   // cells within spawnClearRadius of the spawn point
	portalArea []cellRect // cells within portalRadius of each portal
	ids        *idSet

	colliders []Collider
	props     []Prop
	portals   []PortalAnchor
	npcs      []Point
	loot      []Point
	spawns    []Point // player spawn points after the first
	rooms     []Room
	roomCells []cellRect // the rooms' floors, as rooms
	doors     []Door
	doorCells bitgrid // a dungeon's door cells; nothing spawns on them
}

func newGenerator(cfg Config) *generator {
	cols := int((cfg.Width + CellSize - 1) / CellSize)
	rows := int((cfg.Height + CellSize - 1) / CellSize)
	g := &generator{
		cfg:     cfg,
		spec:    biomeSpecFor(cfg.Biome),
		cols:    cols,
		rows:    rows,
		blocked: newBitgrid(cols, rows),
		// Colliders plus props rarely exceed a fifth of the cells.
		ids: newIDSet(cfg.Seed, cols*rows/5),
	}
	// The centre cell is never in the outer ring (cols, rows >= 4), so the
	// spawn stays off a dungeon's border wall.
	g.spawnCell = [2]int{cols / 2, rows / 2}
	sx, sy := g.cellCentre(g.spawnCell[0], g.spawnCell[1])
	g.spawnClear = g.clearArea(sx, sy, spawnClearRadius)
	for _, p := range cfg.Portals {
		g.portalArea = append(g.portalArea, g.clearArea(p.X, p.Y, portalRadius))
	}
	return g
}

// clearArea returns the cells that overlap the open square of half-side r
// around (x, y). A collider outside those cells is at least r away.
func (g *generator) clearArea(x, y, r int32) cellRect {
	lo := func(v int32) int { return int(max(v-r, 0) / CellSize) }
	hi := func(v int32) int { return int((v+r+CellSize-1)/CellSize) - 1 }
	return cellRect{
		x0: lo(x), y0: lo(y),
		x1: min(hi(x), g.cols-1), y1: min(hi(y), g.rows-1),
	}
}

// interior is the grid without its outer ring of cells.
func (g *generator) interior() cellRect {
	return cellRect{x0: 1, y0: 1, x1: g.cols - 2, y1: g.rows - 2}
}

// cellSpan returns where cell c starts along an axis of the given length and
// how wide it is; only the last cell can be narrower than CellSize.
func cellSpan(c int, length int32) (start, width int32) {
	start = int32(c) * CellSize
	return start, min(CellSize, length-start)
}

// cellCentre returns the integer centre of a cell, inside the map even for
// a cut-short last cell.
func (g *generator) cellCentre(cx, cy int) (x, y int32) {
	x0, w := cellSpan(cx, g.cfg.Width)
	y0, h := cellSpan(cy, g.cfg.Height)
	return x0 + w/2, y0 + h/2
}

// worldRect converts cells to world units, clipped at the map edge.
func (g *generator) worldRect(r cellRect) Rect {
	x0, _ := cellSpan(r.x0, g.cfg.Width)
	y0, _ := cellSpan(r.y0, g.cfg.Height)
	x1, w := cellSpan(r.x1, g.cfg.Width)
	y1, h := cellSpan(r.y1, g.cfg.Height)
	return Rect{X: x0, Y: y0, W: x1 + w - x0, H: y1 + h - y0}
}

func (g *generator) addCollider(kind string, r cellRect) {
	id := g.ids.next(idCollider, len(g.colliders))
	g.colliders = append(g.colliders, Collider{ID: id, Kind: kind, Rect: g.worldRect(r)})
}

func (g *generator) layTerrain() {
	r := newRNG(g.cfg.Seed, g.spec.stream)
	if g.spec.dungeon {
		g.carveDungeon(r)
		return
	}
	g.scatterObstacles(r)
}

// scatterProps drops decorations on random walkable cells.
func (g *generator) scatterProps() {
	r := newRNG(g.cfg.Seed, streamProps)
	attempts := g.cols * g.rows * g.spec.propAttempts / 1000
	for range attempts {
		d := pickWeighted(r, g.spec.props)
		cx, cy := r.intn(g.cols), r.intn(g.rows)
		if g.blocked.get(cx, cy) {
			continue
		}
		x0, w := cellSpan(cx, g.cfg.Width)
		y0, h := cellSpan(cy, g.cfg.Height)
		id := g.ids.next(idProp, len(g.props))
		g.props = append(g.props, Prop{ID: id, Kind: d.kind, X: x0 + int32(r.intn(int(w))), Y: y0 + int32(r.intn(int(h)))})
	}
}

func (g *generator) anchorPortals() {
	for i, p := range g.cfg.Portals {
		g.portals = append(g.portals, PortalAnchor{
			ID: g.ids.next(idPortal, i), To: p.To, X: p.X, Y: p.Y, Radius: portalRadius,
		})
	}
}

// world assembles the result and stamps its hash.
func (g *generator) world() *World {
	sx, sy := g.cellCentre(g.spawnCell[0], g.spawnCell[1])
	w := &World{
		PlayerSpawns: append([]Point{{X: sx, Y: sy}}, g.spawns...),
		Config:       g.cfg,
		Width:        g.cfg.Width,
		Height:       g.cfg.Height,
		Colliders:    g.colliders,
		Props:        g.props,
		Portals:      g.portals,
		PlayerSpawn:  Point{X: sx, Y: sy},
		NPCSpawns:    g.npcs,
		LootSpawns:   g.loot,
		Rooms:        g.rooms,
		Doors:        g.doors,
		grid:         g.blocked,
		maxX:         float64(g.cfg.Width),
		maxY:         float64(g.cfg.Height),
		walkable:     g.walkableCount(),
	}
	w.Hash = canonicalHash(w)
	return w
}

func (g *generator) walkableCount() int {
	n := 0
	for cy := range g.rows {
		for cx := range g.cols {
			if !g.blocked.get(cx, cy) && !g.isDoor(cx, cy) {
				n++
			}
		}
	}
	return n
}

// spawnCount is round(density*n/divisor). The explicit float64 conversion
// forbids the compiler from fusing the operations, so every platform rounds
// the same product.
func spawnCount(density float64, n, divisor int) int {
	return int(math.Round(float64(density*float64(n)) / float64(divisor)))
}
