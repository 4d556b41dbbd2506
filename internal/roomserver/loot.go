package roomserver

import (
	"context"
	"fmt"

	"github.com/roomkeeper/roomkeeper/internal/content"
	"github.com/roomkeeper/roomkeeper/internal/mapgen"
	"github.com/roomkeeper/roomkeeper/internal/protocol"
	"github.com/roomkeeper/roomkeeper/internal/sim"
	"github.com/roomkeeper/roomkeeper/internal/store"
)

// spawnLoot is the map's generated loot: one item per loot spawn, and the
// content's key in the middle of a dungeon's key room, each with an id
// stable across restarts of this instance.
func spawnLoot(instance string, static *mapgen.World, pack content.Pack) []sim.Loot {
	loot := make([]sim.Loot, len(static.LootSpawns), len(static.LootSpawns)+1)
	if key, ok := keyLoot(instance, static, pack); ok {
		loot = append(loot, key)
	}
	for i, p := range static.LootSpawns {
		id := GroundLootID(instance, i)
		loot[i] = sim.Loot{Item: sim.Item{ID: id, Kind: pack.GroundLootKind(id)}, X: float32(p.X), Y: float32(p.Y)}
	}
	return loot
}

// keyLoot is the content's key where the map generator puts it, in the
// middle of a dungeon's key room; false when the map or pack has none.
func keyLoot(instance string, static *mapgen.World, pack content.Pack) (sim.Loot, bool) {
	room := static.RoomWith(mapgen.RoleKey)
	if room < 0 || pack.Key == "" {
		return sim.Loot{}, false
	}
	c := static.Rooms[room].Rect.Centre()
	return sim.Loot{Item: sim.Item{ID: instance + "/key", Kind: pack.Key}, X: float32(c.X), Y: float32(c.Y)}, true
}

// GroundLootID is the id of the map instance's generated loot at
// static.LootSpawns[i].
func GroundLootID(instance string, i int) string { return fmt.Sprintf("%s/loot/%d", instance, i) }

// itemLookup finds items by id wherever they are.
type itemLookup interface {
	Items(ctx context.Context, ids []string) ([]store.Item, error)
}

// groundLoot is what lies on the map after a restart: the generated loot
// nobody has taken, and the items players dropped here. The database has
// the last word: an item that a committed pickup gave to a character is
// not on the ground, whatever happened to this process.
func groundLoot(ctx context.Context, st store.Store, instance string, generated []sim.Loot) ([]sim.Loot, error) {
	lookup, ok := st.(itemLookup)
	if !ok {
		return nil, fmt.Errorf("the store cannot look items up by id")
	}
	loot, err := notStored(ctx, lookup, generated, nil)
	if err != nil {
		return nil, err
	}
	here, err := st.ItemsOn(ctx, instance)
	if err != nil {
		return nil, err
	}
	for _, it := range here {
		loot = append(loot, sim.Loot{Item: sim.Item{ID: it.ItemID, Kind: it.Kind}, X: it.X, Y: it.Y})
	}
	return loot, nil
}

// notStored is the loot of list that the database has no row for, and
// that skip does not list either: loot nothing moved since it was laid.
func notStored(ctx context.Context, lookup itemLookup, list, skip []sim.Loot) ([]sim.Loot, error) {
	ids := make([]string, len(list))
	for i, l := range list {
		ids[i] = l.ID
	}
	stored, err := lookup.Items(ctx, ids)
	if err != nil {
		return nil, err
	}
	seen := make(map[string]bool, len(stored)+len(skip))
	for _, it := range stored {
		seen[it.ItemID] = true
	}
	for _, l := range skip {
		seen[l.ID] = true
	}
	var out []sim.Loot
	for _, l := range list {
		if !seen[l.ID] {
			out = append(out, l)
		}
	}
	return out, nil
}

// handlePickup takes a loot entity into the player's inventory: a critical
// action (critical.go), acked once the new owner is committed.
func (sess *session) handlePickup(env protocol.Envelope) {
	var p protocol.LootPickup
	if err := protocol.DecodePayload(env, &p); err != nil {
		sess.refuse(env.Seq, err)
		return
	}
	player, instance, character := sess.seat.player, sess.srv.cfg.Instance, sess.seat.character
	reach := sess.srv.cfg.Reach
	sess.runCritical(env.Seq, criticalAction{
		kind:    "loot.pickup",
		reserve: func(w *sim.World) (sim.Item, error) { return w.ReserveLoot(player, p.Entity, reach) },
		moves: func(item sim.Item) []store.Move {
			return []store.Move{{FromKind: store.OwnerMap, FromID: instance,
				To: store.Item{ItemID: item.ID, Kind: item.Kind, OwnerKind: store.OwnerCharacter, OwnerID: character}}}
		},
		complete: func(w *sim.World) { w.CompletePickup(player, p.Entity) },
		cancel:   func(w *sim.World) { w.CancelPickup(p.Entity) },
	})
}
