package sim

// Dormancy (docs/design.md, "Density"): the world spends its work where
// players are. An NPC acts (thinks, walks, attacks) only while a player,
// living or dead, stands within Tunables.WakeCells cells of it on a grid
// of Tunables.WakeCell units (Chebyshev distance, counted in cells); the
// others stand where they are, their timers kept in ticks, until a player
// comes near. The room server sets the cell to its area-of-interest cell
// and a client sees the 3x3 cells around it, so with WakeCells >= 2 no
// client ever sees a dormant NPC, and with 3 every NPC that could walk
// into view before its next thought is awake.
//
// A world with no player therefore does nothing on its own but count
// ticks and bring back its dead enemies at their time: SkipTo takes it
// to any later tick in one call, exactly as stepping there would, which is
// what lets an empty map stop ticking (Loop hibernates) and still be, on
// the tick a player arrives, the world it would have been.

// wakeGrid marks the cells near a player, marked anew every step (the
// players' index, npc.go, marks them as it walks the entities).
type wakeGrid struct {
	cell       float32
	reach      int32 // cells either side of a player's cell
	cols, rows int32
	awake      []bool // row-major, cols*rows
	marked     []int32
}

func newWakeGrid(width, height int32, cell float32, reach int) wakeGrid {
	if cell <= 0 || reach < 0 {
		return wakeGrid{} // no dormancy: every NPC always acts
	}
	cols, rows := int32(float32(width)/cell)+1, int32(float32(height)/cell)+1
	return wakeGrid{cell: cell, reach: int32(reach), cols: cols, rows: rows, awake: make([]bool, cols*rows)}
}

// enabled says whether NPCs far from players sleep at all.
func (g *wakeGrid) enabled() bool { return g.cell > 0 }

// at is the cell of (x, y), clamped to the grid.
func (g *wakeGrid) at(x, y float32) (int32, int32) {
	cx, cy := int32(x/g.cell), int32(y/g.cell)
	return min(max(cx, 0), g.cols-1), min(max(cy, 0), g.rows-1)
}

// clear puts every cell back to sleep, before the step marks them anew.
func (g *wakeGrid) clear() {
	for _, i := range g.marked {
		g.awake[i] = false
	}
	g.marked = g.marked[:0]
}

// mark wakes the cells within reach of (x, y).
func (g *wakeGrid) mark(x, y float32) {
	if !g.enabled() {
		return
	}
	cx, cy := g.at(x, y)
	for row := max(cy-g.reach, 0); row <= min(cy+g.reach, g.rows-1); row++ {
		for col := max(cx-g.reach, 0); col <= min(cx+g.reach, g.cols-1); col++ {
			if i := row*g.cols + col; !g.awake[i] {
				g.awake[i] = true
				g.marked = append(g.marked, i)
			}
		}
	}
}

// wakes says whether an NPC at (x, y) acts this step.
func (g *wakeGrid) wakes(x, y float32) bool {
	if !g.enabled() {
		return true
	}
	cx, cy := g.at(x, y)
	return g.awake[cy*g.cols+cx]
}

// NextWake is the tick of the next thing a world without players does by
// itself (an enemy's respawn); false when it has none coming, or when it
// has players (it then changes every step).
func (w *World) NextWake() (uint64, bool) {
	if w.players.len() > 0 || !w.wake.enabled() {
		return 0, false
	}
	next, ok := uint64(0), false
	for _, r := range w.combat.respawns {
		if at := max(r.at, w.tick+1); !ok || at < next {
			next, ok = at, true
		}
	}
	return next, ok
}

// Quiet says whether the world may be taken forward by SkipTo: it has no
// player, its NPCs sleep when none is near, and no event waits to be
// published.
func (w *World) Quiet() bool {
	return w.players.len() == 0 && w.wake.enabled() && len(w.events) == 0
}

// SkipTo takes a quiet world to tick as stepping there one tick at a
// time would: every step where nothing happens is counted, and the steps
// where something is due (NextWake) are taken. A world that is not quiet
// is stepped.
func (w *World) SkipTo(tick uint64) {
	for w.tick < tick {
		if w.players.len() > 0 || !w.wake.enabled() {
			w.Step()
			continue
		}
		next, ok := w.NextWake()
		if !ok || next > tick {
			w.tick = tick
			return
		}
		w.tick = next - 1
		w.Step()
	}
}
