package roomserver

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/roomkeeper/roomkeeper/internal/protocol"
	"github.com/roomkeeper/roomkeeper/internal/sim"
	"github.com/roomkeeper/roomkeeper/internal/store"
	"github.com/roomkeeper/roomkeeper/internal/token"
)

// loggedBy reads the event log of the last hour for one character.
func loggedBy(t *testing.T, db *store.Postgres, character string) []store.LoggedEvent {
	t.Helper()
	events, err := db.Events(context.Background(), store.EventFilter{From: time.Now().Add(-time.Hour),
		To: time.Now().Add(time.Hour), Character: character, Limit: 10000})
	if err != nil {
		t.Fatal(err)
	}
	return events
}

// TestTheEventLogHasEveryKillAndDropOnceInOrder: a scripted fight (three
// kills, each drop picked up, then one dropped again) is in the event log
// once each, in the order it happened, with the player named; a death the
// client was told of carries the same number in the log.
func TestTheEventLogHasEveryKillAndDropOnceInOrder(t *testing.T) {
	db, _ := newDB(t)
	h := persistentHarness(t, db, nil, trophyMap)
	waitReady(t, h)
	c := h.join(character("erin"))
	var deaths []protocol.Event
	for range 3 {
		death := killNearestNPC(t, c)
		deaths = append(deaths, death)
		drop := dropOf(t, c, death)
		walkTo(t, c, drop)
		if ack := pickup(t, c, drop); !ack.OK {
			t.Fatalf("picking the drop up: %+v", ack)
		}
	}
	held, err := db.ItemsOf(context.Background(), "erin")
	if err != nil || len(held) != 3 {
		t.Fatalf("erin holds %+v, %v; want the three trophies", held, err)
	}
	if ack := command(t, c, protocol.FeatureInventory, protocol.ActionDrop, protocol.InventoryDrop{Item: held[0].ItemID}); !ack.OK {
		t.Fatalf("dropping: %+v", ack)
	}

	var log []store.LoggedEvent
	poll(t, func() error {
		log = loggedBy(t, db, "erin")
		if !slices.ContainsFunc(log, func(e store.LoggedEvent) bool { return e.Type == sim.EventItemDropped }) {
			return errors.New("the drop is not in the log yet")
		}
		return nil
	})
	var story []string // erin's doings, in the log's order
	hits := 0
	for i, e := range log {
		if i > 0 && (e.Tick < log[i-1].Tick || e.Seq <= log[i-1].Seq) {
			t.Errorf("out of order: tick %d seq %d after tick %d seq %d", e.Tick, e.Seq, log[i-1].Tick, log[i-1].Seq)
		}
		if e.ByCharacter != "erin" {
			continue
		}
		switch e.Type {
		case sim.EventHit:
			hits++
		case protocol.EventDeath, sim.EventLootRemoved, sim.EventItemDropped:
			story = append(story, e.Type)
		}
	}
	want := []string{"death", "loot_removed", "death", "loot_removed", "death", "loot_removed", "item_dropped"}
	if !slices.Equal(story, want) || hits != 3 {
		t.Errorf("erin's story %v with %d hits, want %v with 3", story, hits, want)
	}
	for _, d := range deaths {
		n := 0
		for _, e := range log {
			if e.Type == protocol.EventDeath && e.EventID == int64(d.ID) && e.Entity == int64(d.Entity) && e.ByCharacter == "erin" {
				n++
			}
		}
		if n != 1 {
			t.Errorf("death %d (event %d) is in the log %d times, want once", d.Entity, d.ID, n)
		}
	}
	var taken []string
	for _, e := range log {
		if e.Type == sim.EventLootRemoved {
			taken = append(taken, e.ItemID)
		}
	}
	slices.Sort(taken)
	if ids := []string{held[0].ItemID, held[1].ItemID, held[2].ItemID}; !slices.Equal(taken, ids) {
		t.Errorf("items taken in the log %v, want %v", taken, ids)
	}
	if !slices.ContainsFunc(log, func(e store.LoggedEvent) bool { return e.Type == sim.EventJoin && e.Character == "erin" }) {
		t.Error("erin's join is not in the log")
	}
}

// TestADatabaseOutageNeverStallsTheEventLogsMap: with the database down,
// the map plays on (the player walks, guests join, the tick goes on)
// while the events pile up; past the buffer they are dropped and counted. Once the
// database is back, what was kept is written.
func TestADatabaseOutageNeverStallsTheEventLogsMap(t *testing.T) {
	db, _ := newDB(t)
	h := persistentHarness(t, db, nil, func(c *Config) { c.EventLogBuffer = 8 })
	waitReady(t, h)
	a := h.join(character("fay"))
	poll(t, func() error {
		if len(loggedBy(t, db, "fay")) == 0 {
			return errors.New("fay's join is not in the log yet")
		}
		return nil
	})
	written := testutil.ToFloat64(h.srv.metrics.eventLogWritten)

	restart := killPostgres(t)
	before := a.Snapshot().Self
	guest := func(c *token.Claims) { c.Subject, c.Character = guestPrefix+randomID(), guestPrefix+randomID() }
	for range 12 { // guests play on without the database: 12 joins, more than the buffer holds
		h.join(guest)
	}
	during := walk(t, a, 0, -1, 6)
	if during.Self.Y >= before.Y {
		t.Errorf("the map stalled during the outage: y %v -> %v", before.Y, during.Self.Y)
	}
	poll(t, func() error {
		if n := testutil.ToFloat64(h.srv.metrics.eventLogDropped); n == 0 {
			return errors.New("nothing dropped yet")
		}
		return nil
	})

	restart()
	poll(t, func() error {
		if n := testutil.ToFloat64(h.srv.metrics.eventLogWritten); n < written+8 {
			return fmt.Errorf("%v events written since the outage began, want the 8 kept", n-written)
		}
		return nil
	})
}
