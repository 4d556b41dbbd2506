package roomserver

import (
	"context"
	"testing"
	"time"

	"github.com/roomkeeper/roomkeeper/internal/protocol"
	"github.com/roomkeeper/roomkeeper/pkg/client"
)

// TestHandOverMovesPlayersToTheNewPod: the pod being replaced hands its
// connected player over to the pod replacing it (same map, database and
// keys): the client follows the transfer by itself and plays on there,
// where it stood, with what it carried, without joining again.
func TestHandOverMovesPlayersToTheNewPod(t *testing.T) {
	db, _ := newDB(t)
	keys := newKeys(t)
	old := persistentHarness(t, db, keys, nil)
	waitReady(t, old)
	c := old.join(character("hana"))
	loot := nearestLoot(t, c)
	walkTo(t, c, loot)
	ack := pickup(t, c, loot)
	if !ack.OK {
		t.Fatalf("pickup: %+v", ack)
	}
	stood := walk(t, c, 1, 0, 4).Self

	next := persistentHarness(t, db, keys, nil)
	waitReady(t, next)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if n := old.srv.HandOver(ctx, next.url); n != 1 {
		t.Fatalf("handed over %d players, want 1", n)
	}
	s := waitFor(t, c, "hana on the new pod", func(s client.State) bool {
		return s.Transfers == 1 && c.Endpoint() == next.url && s.Sees(c.Welcome().PlayerID)
	})
	if w := c.Welcome(); w.Instance != old.cfg.Instance || !sameItemIDs(w.Inventory, ack.Inventory) {
		t.Fatalf("welcome on the new pod: instance %s, inventory %+v; want %s and %+v", w.Instance, w.Inventory, old.cfg.Instance, ack.Inventory)
	}
	if dist(s.Self, stood) > 0.01 || s.Closed != nil {
		t.Fatalf("hana is at (%v,%v), stood at (%v,%v); closed %v", s.Self.X, s.Self.Y, stood.X, stood.Y, s.Closed)
	}
	drop := command(t, c, protocol.FeatureInventory, protocol.ActionDrop, protocol.InventoryDrop{Item: ack.Inventory[0].ID})
	if !drop.OK {
		t.Fatalf("a drop on the new pod: %+v", drop)
	}
	if err := old.srv.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
	if got := next.srv.Stats().Players; got != 1 {
		t.Fatalf("the new pod has %d players, want 1", got)
	}
}
