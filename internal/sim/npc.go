package sim

// indexPlayers rebuilds the grid of player positions NPCs search for prey.
func (w *World) indexPlayers() {
	w.px, w.py, w.pids = w.px[:0], w.py[:0], w.pids[:0]
	for i := range w.entities {
		if e := &w.entities[i]; e.Kind == KindPlayer {
			w.px, w.py, w.pids = append(w.px, e.X), append(w.py, e.Y), append(w.pids, e.ID)
		}
	}
	w.prey.Build(w.px, w.py)
}

// stepNPC moves an NPC: towards its target when it has one, else along its
// wandering heading. Each NPC rethinks only every RetargetEvery ticks,
// staggered by index, so the cost per tick stays flat.
func (w *World) stepNPC(e *Entity, index uint64) {
	if (w.tick+index)%w.tun.RetargetEvery == 0 {
		w.retarget(e)
	}
	dx, dy := e.dirX, e.dirY
	if e.target != 0 {
		if t := w.find(e.target); t != nil {
			dx, dy = towards(e.X, e.Y, t.X, t.Y)
		} else {
			e.target = 0
		}
	}
	if dx == 0 && dy == 0 {
		return // idling
	}
	bx, by := e.X, e.Y
	w.move(e, dx, dy, w.tun.NPCSpeed)
	if e.X == bx && e.Y == by && e.target == 0 { // walked into a wall: turn
		e.dirX, e.dirY = w.rng.direction()
	}
}

// retarget picks the nearest player within ChaseRadius. Without one the
// NPC wanders: now and then it turns, or stops for a while, as idle
// creatures do (and a standing NPC costs no bandwidth).
func (w *World) retarget(e *Entity) {
	e.target = 0
	best := w.tun.ChaseRadius * w.tun.ChaseRadius
	w.scratch = w.prey.AppendNeighbourhood(w.scratch[:0], w.prey.CellOf(e.X, e.Y))
	for _, i := range w.scratch {
		dx, dy := w.px[i]-e.X, w.py[i]-e.Y
		if d := dx*dx + dy*dy; d <= best {
			best, e.target = d, w.pids[i]
		}
	}
	if e.target != 0 {
		return
	}
	switch w.rng.next() % 8 {
	case 0, 1: // turn
		e.dirX, e.dirY = w.rng.direction()
	case 2, 3: // stop
		e.dirX, e.dirY = 0, 0
	}
}

// towards is the unit vector from (x, y) to (tx, ty), or zero when there.
func towards(x, y, tx, ty float32) (float32, float32) {
	dx, dy := tx-x, ty-y
	l := dx*dx + dy*dy
	if l < 1 {
		return 0, 0
	}
	inv := 1 / sqrt32(l)
	return dx * inv, dy * inv
}
