package sim

import (
	"math/rand/v2"
	"testing"
)

// After any sequence of spawns and removals every entity's slot names its
// own row in its kind's table, and every row belongs to a live entity.
func TestSideTablesFollowTheEntities(t *testing.T) {
	w := NewWorld(meadow(t), 30, Defaults())
	rng := rand.New(rand.NewPCG(1, 2))
	for range 2000 {
		switch rng.IntN(4) {
		case 0:
			w.AddPlayer()
		case 1:
			w.SpawnLoot([]Loot{{Item: Item{ID: "x", Kind: "gem"}, X: 10, Y: 10}})
		case 2:
			if ids := idsOf(w, KindPlayer); len(ids) > 0 {
				w.RemovePlayer(ids[rng.IntN(len(ids))])
			}
		case 3:
			if ids := idsOf(w, KindLoot); len(ids) > 0 {
				w.CompletePickup(0, ids[rng.IntN(len(ids))])
			}
		}
		checkSlots(t, w)
	}
}

func idsOf(w *World, kind Kind) []uint32 {
	var ids []uint32
	for _, e := range w.entities {
		if e.Kind == kind {
			ids = append(ids, e.ID)
		}
	}
	return ids
}

func checkSlots(t *testing.T, w *World) {
	t.Helper()
	counts := map[Kind]int{}
	for _, e := range w.entities {
		counts[e.Kind]++
		var owner uint32
		switch e.Kind {
		case KindPlayer:
			owner = w.players.ids[e.slot]
		case KindNPC:
			owner = w.npcs.ids[e.slot]
		case KindLoot:
			owner = w.loot.ids[e.slot]
		default:
			continue
		}
		if owner != e.ID {
			t.Fatalf("entity %d (kind %d) has slot %d, which belongs to %d", e.ID, e.Kind, e.slot, owner)
		}
	}
	if counts[KindPlayer] != w.players.len() || counts[KindNPC] != w.npcs.len() || counts[KindLoot] != w.loot.len() {
		t.Fatalf("entities %v, table rows players %d npcs %d loot %d", counts, w.players.len(), w.npcs.len(), w.loot.len())
	}
}
