package roomserver

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/roomkeeper/roomkeeper/internal/playtest"
	"github.com/roomkeeper/roomkeeper/internal/protocol"
	"github.com/roomkeeper/roomkeeper/pkg/client"
)

// TestHandOverMovesPlayersToTheNewPod: the pod being replaced hands its
// connected player over to the pod replacing it (same map, database and
// keys): the client follows the transfer by itself and plays on there,
// where it stood, with what it carried, without joining again. The loot
// picked up and dropped on the old pod while the new one was already up
// is where the database says on the new pod too.
//
// The new pod either knows it takes the map over (it waits for the old
// pod's world) or, when it could not ask its MapInstance, took the world
// at start: the ground is the database's at the first arrival either way.
func TestHandOverMovesPlayersToTheNewPod(t *testing.T) {
	for _, takesOver := range []bool{true, false} {
		t.Run(fmt.Sprintf("takes over %v", takesOver), func(t *testing.T) { handOverMovesPlayers(t, takesOver) })
	}
}

func handOverMovesPlayers(t *testing.T, takesOver bool) {
	db, _ := newDB(t)
	keys := newKeys(t)
	old := persistentHarness(t, db, keys, nil)
	next := persistentHarness(t, db, keys, func(c *Config) { c.TakesOver = takesOver })
	waitReady(t, old)
	waitReady(t, next) // Ready to take the map over (or restored as it was before the pickups below)
	c := old.join(character("hana"))
	loot := nearestLoot(t, c)
	walkTo(t, c, loot)
	ack := pickup(t, c, loot)
	if !ack.OK {
		t.Fatalf("pickup: %+v", ack)
	}
	waitFor(t, c, "the loot gone", func(s client.State) bool { return !s.Sees(loot.ID) })
	dropped := nearestLoot(t, c)
	walkTo(t, c, dropped)
	second := pickup(t, c, dropped)
	if !second.OK || len(second.Inventory) != 2 {
		t.Fatalf("second pickup: %+v", second)
	}
	stood := walk(t, c, 1, 0, 4).Self
	other := second.Inventory[0].ID
	if other == ack.Inventory[0].ID {
		other = second.Inventory[1].ID
	}
	drop := command(t, c, protocol.FeatureInventory, protocol.ActionDrop, protocol.InventoryDrop{Item: other})
	if !drop.OK {
		t.Fatalf("drop on the old pod: %+v", drop)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if n := old.srv.HandOver(ctx, next.url); n != 1 {
		t.Fatalf("handed over %d players, want 1", n)
	}
	s := waitFor(t, c, "hana on the new pod", func(s client.State) bool {
		return s.Transfers == 1 && c.Endpoint() == next.url && s.Sees(c.Welcome().PlayerID)
	})
	if w := c.Welcome(); w.Instance != old.cfg.Instance || !playtest.SameItems(w.Inventory, drop.Inventory) {
		t.Fatalf("welcome on the new pod: instance %s, inventory %+v; want %s and %+v", w.Instance, w.Inventory, old.cfg.Instance, drop.Inventory)
	}
	if dist(s.Self, stood) > 0.01 || s.Closed != nil {
		t.Fatalf("hana is at (%v,%v), stood at (%v,%v); closed %v", s.Self.X, s.Self.Y, stood.X, stood.Y, s.Closed)
	}
	waitFor(t, c, "the ground as the database has it", func(s client.State) bool {
		return !seesLootAt(s, loot) && seesLootAt(s, stood)
	})
	again := command(t, c, protocol.FeatureInventory, protocol.ActionDrop, protocol.InventoryDrop{Item: ack.Inventory[0].ID})
	if !again.OK {
		t.Fatalf("a drop on the new pod: %+v", again)
	}
	if err := old.srv.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
	if got := next.srv.Stats().Players; got != 1 {
		t.Fatalf("the new pod has %d players, want 1", got)
	}
}

// seesLootAt reports whether s shows loot within a unit of at.
func seesLootAt(s client.State, at protocol.EntityState) bool {
	for _, e := range s.Entities {
		if e.Kind == protocol.EntityLoot && dist(e, at) < 1 {
			return true
		}
	}
	return false
}

// TestAHandoverWhoseCommitWentUnansweredHandsThePlayersOverOneByOne: the
// batch of a handover commits but its answer is lost. The old pod takes
// those transfers back before it tries each player on its own; left in
// transfer, each player's lease would refuse its own transfer and the
// player would be signed out as active in another map.
func TestAHandoverWhoseCommitWentUnansweredHandsThePlayersOverOneByOne(t *testing.T) {
	db, dsn := newDB(t)
	oldDB, cutter := storeCutting(t, dsn)
	keys := newKeys(t)
	old := persistentHarness(t, oldDB, keys, nil)
	next := persistentHarness(t, db, keys, func(c *Config) { c.TakesOver = true })
	waitReady(t, old)
	waitReady(t, next)
	players := []*client.Client{old.join(character("ines")), old.join(character("otto"))}

	cutter.CutNextCommitOf("INSERT INTO transfers")
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if n := old.srv.HandOver(ctx, next.url); n != len(players) {
		t.Fatalf("handed over %d players, want %d", n, len(players))
	}
	select {
	case <-cutter.Cuts():
	default:
		t.Fatal("the handover's commit was not cut")
	}
	for _, c := range players {
		waitFor(t, c, "the player on the new pod", func(s client.State) bool {
			return s.Closed == nil && s.Transfers == 1 && c.Endpoint() == next.url && s.Sees(c.Welcome().PlayerID)
		})
	}
	// Taken back on the same map instance, the batch's transfers were
	// accepted there (a row left accepted is harmless: the lease decides);
	// none is left pending, and the players' own transfers completed.
	var pending, completed int
	if err := db.DB().QueryRow(`SELECT count(*) FILTER (WHERE state IN ('requested', 'token_issued')),
	       count(*) FILTER (WHERE state = 'completed') FROM transfers`).Scan(&pending, &completed); err != nil {
		t.Fatal(err)
	}
	if pending != 0 || completed != len(players) {
		t.Fatalf("transfers: %d pending, %d completed; want none pending and %d completed", pending, completed, len(players))
	}
	if err := old.srv.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
}
