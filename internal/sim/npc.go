package sim

import (
	"github.com/roomkeeper/roomkeeper/internal/content"
	"github.com/roomkeeper/roomkeeper/internal/mapgen"
)

// npcState is what an NPC has beyond its entity: what it is, where it is
// heading and whom it fights.
type npcState struct {
	enemy      int     // its type, an index into the pack's enemies
	homeX      float32 // where it spawned; it leashes to it
	homeY      float32
	dirX, dirY float32 // the wandering heading; zero: standing
	target     uint32  // the player chased, 0 for none
	provokedBy uint32  // the player it fights back (a neutral enemy attacks no one else)
	goingHome  bool    // it gave up a chase past its leash
	nextAttack uint64  // the tick its cooldown ends
	room       int32   // the room it guards, -1 for none
	phase      uint8   // the boss phases it entered
	// debuff is the ability's debuff on it, while debuff.until is ahead
	// (abilities.go).
	debuff activeBuff
}

// spawnNPC places an enemy of type enemy at p.
func (w *World) spawnNPC(enemy int, p mapgen.Point) {
	e := w.spawn(KindNPC, float32(p.X), float32(p.Y))
	e.HP = w.combat.types[enemy].HP
	n := w.npc(e)
	n.enemy, n.homeX, n.homeY = enemy, e.X, e.Y
	n.dirX, n.dirY = w.rng.direction()
	w.guard(n)
}

// npc is e's NPC state; e must be an NPC.
func (w *World) npc(e *Entity) *npcState { return &w.npcs.rows[e.slot] }

// moveNPCs is the NPC system: each NPC near a player chases or wanders,
// one step; the others sleep (dormancy.go).
func (w *World) moveNPCs() {
	if w.wake.enabled() && w.players.len() == 0 {
		return
	}
	for i := range w.entities {
		if e := &w.entities[i]; e.Kind == KindNPC && w.wake.wakes(e.X, e.Y) {
			w.stepNPC(e, w.npc(e), uint64(i))
		}
	}
}

// indexPlayers rebuilds the grid of living players' positions NPCs
// search for prey, and the cells where NPCs are awake.
func (w *World) indexPlayers() {
	w.wake.clear()
	w.px, w.py, w.pids = w.px[:0], w.py[:0], w.pids[:0]
	for i := range w.entities {
		e := &w.entities[i]
		if e.Kind != KindPlayer {
			continue
		}
		w.wake.mark(e.X, e.Y) // the dead wake NPCs too
		if e.HP > 0 {
			w.px, w.py, w.pids = append(w.px, e.X), append(w.py, e.Y), append(w.pids, e.ID)
		}
	}
	w.prey.Build(w.px, w.py)
}

// stepNPC moves an NPC: home when it gave up a chase, towards its target
// when it has one (and attacks it when it may), else along its wandering
// heading. Each NPC rethinks only every RetargetEvery ticks, staggered by
// index, so the cost per tick stays flat.
func (w *World) stepNPC(e *Entity, n *npcState, index uint64) {
	kind := &w.combat.types[n.enemy]
	if n.goingHome {
		w.walkHome(e, n, kind)
		return
	}
	if (w.tick+index)%w.tun.RetargetEvery == 0 {
		w.retarget(e, n, kind)
	}
	dx, dy := n.dirX, n.dirY
	if n.target != 0 {
		t := w.find(n.target)
		switch {
		case t == nil || t.HP == 0:
			n.target, n.provokedBy = 0, 0
		case w.pastLeash(e, n, kind):
			n.target, n.provokedBy, n.goingHome = 0, 0, true
			return
		default:
			dx, dy = towards(e.X, e.Y, t.X, t.Y)
			w.npcAttack(e, n, kind, t)
		}
	}
	if dx == 0 && dy == 0 {
		return // idling
	}
	bx, by := e.X, e.Y
	w.move(e, dx, dy, kind.Speed)
	if e.X == bx && e.Y == by && n.target == 0 { // walked into a wall: turn
		n.dirX, n.dirY = w.rng.direction()
	}
}

// pastLeash reports whether the NPC strayed further from home than its
// type follows a target.
func (w *World) pastLeash(e *Entity, n *npcState, kind *content.EnemyType) bool {
	dx, dy := e.X-n.homeX, e.Y-n.homeY
	return dx*dx+dy*dy > kind.LeashRadius*kind.LeashRadius
}

// walkHome takes an NPC that gave up a chase back to where it spawned; it
// takes up no fight on the way.
func (w *World) walkHome(e *Entity, n *npcState, kind *content.EnemyType) {
	dx, dy := towards(e.X, e.Y, n.homeX, n.homeY)
	bx, by := e.X, e.Y
	w.move(e, dx, dy, kind.Speed)
	if (dx == 0 && dy == 0) || (e.X == bx && e.Y == by) { // home, or stuck on a wall: wander from here
		n.goingHome = false
	}
}

// retarget picks the nearest player within the NPC's aggro radius, unless
// it is fighting back someone who attacked it. Without one the NPC
// wanders: now and then it turns, or stops for a while, as idle creatures
// do (and a standing NPC costs no bandwidth).
func (w *World) retarget(e *Entity, n *npcState, kind *content.EnemyType) {
	if n.provokedBy != 0 {
		return // it fights back until the attacker dies, leaves or outruns its leash
	}
	n.target = 0
	best := kind.AggroRadius * kind.AggroRadius
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
