package sim

import (
	"github.com/roomkeeper/roomkeeper/internal/content"
	"github.com/roomkeeper/roomkeeper/internal/mapgen"
)

// The boss: the content's boss spawns in the middle of a dungeon's boss
// room (mapgen.RoleBoss) and guards it like any enemy. As its hit points
// fall through the thresholds of its phases it enters each phase once, in
// order (a boss_phase event), and hits harder and faster.

// EventBossPhase is sent when a boss enters a phase; Phase counts from 1.
const EventBossPhase = "boss_phase"

// spawnBoss places the content's boss in the boss room, when the map has
// one and the content a boss.
func (w *World) spawnBoss() {
	room := w.static.RoomWith(mapgen.RoleBoss)
	if room < 0 || len(w.combat.types) == len(w.combat.pack.Enemies) {
		return
	}
	w.spawnNPC(len(w.combat.types)-1, w.static.Rooms[room].Rect.Centre())
}

// enterPhase moves a hurt enemy into the phase its hit points call for,
// one event per phase entered (a hit may cross two thresholds).
func (w *World) enterPhase(e *Entity, n *npcState) {
	kind := &w.combat.types[n.enemy]
	for int(n.phase) <= kind.PhaseAt(e.HP) {
		n.phase++
		w.emit(Event{Type: EventBossPhase, Tick: w.tick, Entity: e.ID, X: e.X, Y: e.Y, Phase: n.phase})
	}
}

// enemyCooldown is the ticks between an enemy's attacks in its phase.
func (w *World) enemyCooldown(n *npcState, kind *content.EnemyType) uint64 {
	if n.phase > 0 {
		return ticks(kind.Phases[n.phase-1].Cooldown, w.combat.tickRate)
	}
	return w.combat.enemyCooldown[n.enemy]
}
