package sim

// npcState is what an NPC has beyond its entity: where it is heading and
// whom it chases.
type npcState struct {
	dirX, dirY float32 // the wandering heading; zero: standing
	target     uint32  // the player chased, 0 for none
}

// npc is e's NPC state; e must be an NPC.
func (w *World) npc(e *Entity) *npcState { return &w.npcs.rows[e.slot] }

// moveNPCs is the NPC system: each NPC chases or wanders, one step.
func (w *World) moveNPCs() {
	for i := range w.entities {
		if e := &w.entities[i]; e.Kind == KindNPC {
			w.stepNPC(e, w.npc(e), uint64(i))
		}
	}
}

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
func (w *World) stepNPC(e *Entity, n *npcState, index uint64) {
	if (w.tick+index)%w.tun.RetargetEvery == 0 {
		w.retarget(e, n)
	}
	dx, dy := n.dirX, n.dirY
	if n.target != 0 {
		if t := w.find(n.target); t != nil {
			dx, dy = towards(e.X, e.Y, t.X, t.Y)
		} else {
			n.target = 0
		}
	}
	if dx == 0 && dy == 0 {
		return // idling
	}
	bx, by := e.X, e.Y
	w.move(e, dx, dy, w.tun.NPCSpeed)
	if e.X == bx && e.Y == by && n.target == 0 { // walked into a wall: turn
		n.dirX, n.dirY = w.rng.direction()
	}
}

// retarget picks the nearest player within ChaseRadius. Without one the
// NPC wanders: now and then it turns, or stops for a while, as idle
// creatures do (and a standing NPC costs no bandwidth).
func (w *World) retarget(e *Entity, n *npcState) {
	n.target = 0
	best := w.tun.ChaseRadius * w.tun.ChaseRadius
	w.scratch = w.prey.AppendNeighbourhood(w.scratch[:0], w.prey.CellOf(e.X, e.Y))
	for _, i := range w.scratch {
		dx, dy := w.px[i]-e.X, w.py[i]-e.Y
		if d := dx*dx + dy*dy; d <= best {
			best, n.target = d, w.pids[i]
		}
	}
	if n.target != 0 {
		return
	}
	switch w.rng.next() % 8 {
	case 0, 1: // turn
		n.dirX, n.dirY = w.rng.direction()
	case 2, 3: // stop
		n.dirX, n.dirY = 0, 0
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
