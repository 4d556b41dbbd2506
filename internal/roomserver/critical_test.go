package roomserver

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/gorilla/websocket"

	"github.com/roomkeeper/roomkeeper/internal/protocol"
	"github.com/roomkeeper/roomkeeper/internal/sim"
	"github.com/roomkeeper/roomkeeper/internal/store"
	"github.com/roomkeeper/roomkeeper/pkg/client"
)

// Where a slowed commit waits: at its first statement (appending the
// event, before the lease fence) or at its last (moving the item).
const (
	stallBeforeFence = `LOCK TABLE critical_events IN SHARE MODE`
	stallAtTheMove   = `SELECT 1 FROM item_ownership WHERE item_id = $1 FOR UPDATE`
)

// stallCommits holds a lock in another transaction, so a critical action
// on the item waits in its commit until release.
func stallCommits(t *testing.T, db *store.Postgres, lock, itemID string) (release func()) {
	t.Helper()
	tx, err := db.DB().BeginTx(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	args := []any{itemID}
	if lock == stallBeforeFence {
		args = nil
	}
	if _, err := tx.Exec(lock, args...); err != nil {
		_ = tx.Rollback()
		t.Fatalf("%s: %v", lock, err)
	}
	t.Cleanup(func() { _ = tx.Rollback() })
	return func() { _ = tx.Rollback() }
}

// waitInFlight waits until the character's seat has n critical actions in flight.
func waitInFlight(t *testing.T, h *harness, character string, n int32) {
	t.Helper()
	poll(t, func() error {
		if st := h.srv.seats.of(character); st == nil || st.inFlight.Load() != n {
			return fmt.Errorf("%s has no seat with %d actions in flight", character, n)
		}
		return nil
	})
}

// inWorld says where the world has the item: carried by the character's
// player, or on the ground.
func inWorld(t *testing.T, h *harness, character, itemID string) (carried, onGround bool) {
	t.Helper()
	st := h.srv.seats.of(character)
	if st == nil {
		t.Fatalf("%s is not seated", character)
	}
	err := h.srv.loop.Do(waitCtx(t), func(w *sim.World) {
		carried = slices.ContainsFunc(w.Inventory(st.player), func(it sim.Item) bool { return it.ID == itemID })
		onGround = w.OnGround(itemID)
	})
	if err != nil {
		t.Fatal(err)
	}
	return carried, onGround
}

// TestCriticalActionsRacingAReconnectAgreeWithTheDatabase: whatever the
// interleaving of a pickup or drop whose commit is slow (before or after
// the lease fence) and the same character joining again, the item ends up
// in memory exactly where the database has it, and the new connection's
// welcome lists it when carried.
func TestCriticalActionsRacingAReconnectAgreeWithTheDatabase(t *testing.T) {
	const who = "rhea"
	db, h, c, loot := atLoot(t, who, func(c *Config) { c.CriticalTimeout = 20 * time.Second })
	first := pickup(t, c, loot) // the row exists from now on, so it can be locked
	if !first.OK {
		t.Fatalf("first pickup: %+v", first)
	}
	item := first.Inventory[0].ID
	ctx := context.Background()
	for i, delay := range []time.Duration{0, 2 * time.Millisecond, 10 * time.Millisecond, 40 * time.Millisecond, 0, 5 * time.Millisecond, 25 * time.Millisecond, 80 * time.Millisecond} {
		carried, _ := inWorld(t, h, who, item)
		release := stallCommits(t, db, []string{stallAtTheMove, stallBeforeFence}[i/2%2], item)
		if carried {
			_, err := c.Command(protocol.FeatureInventory, protocol.ActionDrop, protocol.InventoryDrop{Item: item})
			if err != nil {
				t.Fatal(err)
			}
		} else {
			_, err := c.Command(protocol.FeatureLoot, protocol.ActionPickup, protocol.LootPickup{Entity: nearestLoot(t, c).ID})
			if err != nil {
				t.Fatal(err)
			}
		}
		waitInFlight(t, h, who, 1)
		time.AfterFunc(delay, release) // the commit ends somewhere in the new join
		next := h.join(character(who))

		owned, err := db.ItemsOf(ctx, who)
		if err != nil {
			t.Fatal(err)
		}
		inDB := slices.ContainsFunc(owned, func(it store.Item) bool { return it.ItemID == item })
		welcomed := slices.ContainsFunc(next.Welcome().Inventory, func(it protocol.ItemView) bool { return it.ID == item })
		carried, onGround := inWorld(t, h, who, item)
		if inDB != carried || inDB != welcomed || onGround == inDB {
			t.Fatalf("round %d (delay %s): database carried=%v; world carried=%v on the ground=%v; welcome lists it=%v",
				i, delay, inDB, carried, onGround, welcomed)
		}
		c = next
	}
}

// TestARetriedActionCommitsOnceAndAnswersTheSame: a command sent again with
// the seq of one already handled (a client that lost the ack) is not run
// again; the client gets the first result again, and the database holds
// one event.
func TestARetriedActionCommitsOnceAndAnswersTheSame(t *testing.T) {
	db, _, c, loot := atLoot(t, "remy", nil)
	seq, err := c.Command(protocol.FeatureLoot, protocol.ActionPickup, protocol.LootPickup{Entity: loot.ID})
	if err != nil {
		t.Fatal(err)
	}
	payload, _ := json.Marshal(protocol.LootPickup{Entity: loot.ID})
	again, _ := json.Marshal(protocol.Envelope{V: protocol.Version, Kind: protocol.KindCommand, Seq: seq,
		Feature: protocol.FeatureLoot, Action: protocol.ActionPickup, Payload: payload})
	if err := c.SendRaw(websocket.TextMessage, again); err != nil {
		t.Fatal(err)
	}
	s := waitFor(t, c, "both acks", func(s client.State) bool { return len(acksOf(s, seq)) == 2 })
	acks := acksOf(s, seq)
	if !acks[0].OK || fmt.Sprint(acks[0]) != fmt.Sprint(acks[1]) {
		t.Fatalf("acks of the same seq differ: %+v", acks)
	}
	events, err := db.EventsOf(context.Background(), "remy")
	if err != nil || len(events) != 1 {
		t.Fatalf("events: %+v %v, want the one pickup", events, err)
	}
}

func acksOf(s client.State, seq uint32) []protocol.Ack {
	var out []protocol.Ack
	for _, a := range s.Acks {
		if a.Seq == seq {
			out = append(out, a)
		}
	}
	return out
}

// TestCriticalActionsWaitingForTheDatabaseAreBounded: with MaxInFlight
// actions waiting for their commit, the next is refused at once with
// rate_limited and changes nothing; the slot is free again by the time the
// client has the first one's ack.
func TestCriticalActionsWaitingForTheDatabaseAreBounded(t *testing.T) {
	db, h, c, loot := atLoot(t, "ines", func(c *Config) { c.MaxInFlight, c.CriticalTimeout = 1, 20*time.Second })
	item := pickup(t, c, loot).Inventory[0].ID
	release := stallCommits(t, db, stallAtTheMove, item)
	drop, err := c.Command(protocol.FeatureInventory, protocol.ActionDrop, protocol.InventoryDrop{Item: item})
	if err != nil {
		t.Fatal(err)
	}
	waitInFlight(t, h, "ines", 1)
	if again := command(t, c, protocol.FeatureInventory, protocol.ActionDrop, protocol.InventoryDrop{Item: item}); again.Code != protocol.CodeRateLimited {
		t.Fatalf("a second action while one waits for the database: %+v, want rate_limited", again)
	}
	release()
	if ack, err := c.AwaitAck(waitCtx(t), drop); err != nil || !ack.OK {
		t.Fatalf("the stalled drop: %+v %v", ack, err)
	}
	if next := pickup(t, c, loot); next.Code == protocol.CodeRateLimited {
		t.Fatalf("the action sent on the drop's ack: %+v, want it run", next)
	}
}

// TestShutdownWaitsForCriticalActionsInFlight: Shutdown returns only once
// the actions in flight have committed (or failed), so the store may be
// closed after it and an acknowledged action is never cut off.
func TestShutdownWaitsForCriticalActionsInFlight(t *testing.T) {
	db, dsn := newDB(t)
	h := persistentHarness(t, db, nil, func(c *Config) { c.CriticalTimeout = 20 * time.Second })
	waitReady(t, h)
	c := h.join(character("sol"))
	loot := nearestLoot(t, c)
	walkTo(t, c, loot)
	item := pickup(t, c, loot).Inventory[0].ID
	release := stallCommits(t, db, stallAtTheMove, item)
	if _, err := c.Command(protocol.FeatureInventory, protocol.ActionDrop, protocol.InventoryDrop{Item: item}); err != nil {
		t.Fatal(err)
	}
	waitInFlight(t, h, "sol", 1)
	shutdown := make(chan error, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		shutdown <- h.srv.Shutdown(ctx)
	}()
	waitFor(t, c, "the shutdown event", func(s client.State) bool {
		return slices.ContainsFunc(s.Events, func(e protocol.Event) bool { return e.Type == protocol.EventServerShutdown })
	})
	release()
	if err := <-shutdown; err != nil {
		t.Fatal(err)
	}
	if err := db.Close(); err != nil { // nothing of the server may use it now
		t.Fatal(err)
	}
	reopened, err := sql.Open("postgres", dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = reopened.Close() }()
	var owner string
	if err := reopened.QueryRow(`SELECT owner_kind FROM item_ownership WHERE item_id = $1`, item).Scan(&owner); err != nil || owner != string(store.OwnerMap) {
		t.Fatalf("after shutdown the drop is %q %v, want committed to the map", owner, err)
	}
}
