package attack

import (
	"context"
	"database/sql"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/roomkeeper/roomkeeper/internal/playtest"
	"github.com/roomkeeper/roomkeeper/internal/protocol"
	"github.com/roomkeeper/roomkeeper/pkg/client"
)

// lootRounds is how many items two players race for.
const lootRounds = 12

// racer is one of the two players of the loot race.
type racer struct {
	c         *client.Client
	character string
	items     []string // what its acks say it carries
	wins      int
}

// TestLootRace: two players standing on the same loot send loot.pickup at
// the same moment, for item after item. Each time exactly one is acked ok
// and the other gets already_taken, and the database agrees: the item
// has one owner, the winner, and one pickup event.
func TestLootRace(t *testing.T) {
	ctx := caseContext(t)
	dsn := newDatabase(t)
	r := startServer(t, dsn, lootMap)
	db := openDB(t, dsn)
	racers := [2]*racer{{character: newCharacter("racer-a")}, {character: newCharacter("racer-b")}}
	for _, rc := range racers {
		rc.c = join(t, ctx, r, rc.character)
	}
	for round := range lootRounds {
		loot, err := playtest.NearestLoot(ctx, racers[0].c)
		if err != nil {
			t.Fatal(err)
		}
		walked := make(chan error, 2)
		for _, rc := range racers {
			go func() { walked <- playtest.WalkTo(ctx, rc.c, loot) }()
		}
		for range racers {
			if err := <-walked; err != nil {
				t.Fatalf("round %d: walking to the loot: %v", round, err)
			}
		}
		acks := race(t, ctx, racers, loot)
		var winner, loser int
		switch {
		case acks[0].OK && !acks[1].OK:
			winner, loser = 0, 1
		case acks[1].OK && !acks[0].OK:
			winner, loser = 1, 0
		default:
			t.Fatalf("round %d: acks %+v and %+v, want exactly one ok", round, acks[0], acks[1])
		}
		if acks[loser].Code != protocol.CodeAlreadyTaken {
			t.Fatalf("round %d: the loser's ack %+v, want already_taken", round, acks[loser])
		}
		w := racers[winner]
		item := newItem(w.items, acks[winner].Inventory)
		if item == "" {
			t.Fatalf("round %d: the winner's inventory %+v holds nothing new", round, acks[winner].Inventory)
		}
		w.items = append(w.items, item)
		w.wins++
		owners, events := ownersOf(t, ctx, db, item)
		if len(owners) != 1 || owners[0] != "character/"+w.character || events != 1 {
			t.Fatalf("round %d: item %s: owners %v, %d pickup events in the database, want exactly character/%s and 1",
				round, item, owners, events, w.character)
		}
		for _, rc := range racers { // the next round's nearest loot is another one
			if _, err := rc.c.WaitFor(ctx, func(s client.State) bool { return !s.Sees(loot.ID) }); err != nil {
				t.Fatalf("round %d: the taken loot stays in sight: %v", round, err)
			}
		}
	}
	var owned int
	if err := db.QueryRowContext(ctx, "SELECT count(*) FROM item_ownership WHERE owner_kind = 'character'").Scan(&owned); err != nil {
		t.Fatal(err)
	}
	if owned != lootRounds {
		t.Fatalf("%d items owned by characters in the database, want %d (one per round)", owned, lootRounds)
	}
	record(t, "loot race", "%d rounds: %d won by one player, %d by the other; every loser already_taken",
		lootRounds, racers[0].wins, racers[1].wins)
	logResources(t, r, "after the loot race")
}

// race sends both racers' pickups of loot at once and returns their acks.
func race(t *testing.T, ctx context.Context, racers [2]*racer, loot protocol.EntityState) [2]protocol.Ack {
	t.Helper()
	start := make(chan struct{})
	type result struct {
		i   int
		ack protocol.Ack
		err error
	}
	results := make(chan result, len(racers))
	for i, rc := range racers {
		go func() {
			<-start
			ack, err := rc.c.Do(ctx, protocol.FeatureLoot, protocol.ActionPickup, protocol.LootPickup{Entity: loot.ID})
			results <- result{i, ack, err}
		}()
	}
	close(start)
	var acks [2]protocol.Ack
	for range racers {
		res := <-results
		if res.err != nil {
			t.Fatalf("pickup: %v", res.err)
		}
		acks[res.i] = res.ack
	}
	return acks
}

// newItem is the item of inventory not in had, or "".
func newItem(had []string, inventory []protocol.ItemView) string {
	for _, it := range inventory {
		if !slices.Contains(had, it.ID) {
			return it.ID
		}
	}
	return ""
}

// ownersOf reads what the database says of item: its owners (kind/id)
// and how many pickup events name it.
func ownersOf(t *testing.T, ctx context.Context, db *sql.DB, item string) ([]string, int) {
	t.Helper()
	rows, err := db.QueryContext(ctx, "SELECT owner_kind, owner_id FROM item_ownership WHERE item_id = $1", item)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var owners []string
	for rows.Next() {
		var kind, id string
		if err := rows.Scan(&kind, &id); err != nil {
			t.Fatal(err)
		}
		owners = append(owners, kind+"/"+id)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	var events int
	if err := db.QueryRowContext(ctx, "SELECT count(*) FROM critical_events WHERE item_id = $1 AND kind = 'loot.pickup'", item).Scan(&events); err != nil {
		t.Fatal(err)
	}
	return owners, events
}

// TestDatabaseOutage: with Postgres killed, a pickup is refused with
// persistence_unavailable and nothing changes, while movement goes on;
// once Postgres is back the pickup is acked and in the database
// (docs/protocol.md, Commands; docs/design.md section 6).
func TestDatabaseOutage(t *testing.T) {
	ctx := caseContext(t)
	dsn := newDatabase(t)
	r := startServer(t, dsn, lootMap)
	character := newCharacter("outage")
	c := join(t, ctx, r, character)
	loot, err := playtest.NearestLoot(ctx, c)
	if err != nil {
		t.Fatal(err)
	}
	if err := playtest.WalkTo(ctx, c, loot); err != nil {
		t.Fatal(err)
	}

	if err := suite.pg.Kill(); err != nil {
		t.Fatalf("killing Postgres: %v", err)
	}
	t.Cleanup(func() { _ = suite.pg.Restart() }) // the next cases need it, whatever happens here
	asked := time.Now()
	ack, err := c.Do(ctx, protocol.FeatureLoot, protocol.ActionPickup, protocol.LootPickup{Entity: loot.ID})
	if err != nil {
		t.Fatal(err)
	}
	record(t, "pickup answer with the database down", "%s (%s)", time.Since(asked).Round(time.Millisecond), ack.Code)
	if ack.OK || ack.Code != protocol.CodePersistenceUnavailable {
		t.Fatalf("pickup with the database down: %+v, want persistence_unavailable", ack)
	}
	before := c.Snapshot()
	seq, err := c.MoveSteps(0, -1, 6)
	if err != nil {
		t.Fatal(err)
	}
	during, err := c.WaitFor(ctx, func(s client.State) bool { return s.AckSeq >= seq })
	if err != nil {
		t.Fatalf("movement stopped with the database down: %v", err)
	}
	if during.Self.Y >= before.Self.Y {
		t.Errorf("movement stopped with the database down: y %v -> %v", before.Self.Y, during.Self.Y)
	}
	if !during.Sees(loot.ID) {
		t.Error("the loot of a refused pickup is gone")
	}
	outage := logResources(t, r, "during the outage")

	restarting := time.Now()
	if err := suite.pg.Restart(); err != nil {
		t.Fatalf("restarting Postgres: %v", err)
	}
	record(t, "Postgres restart (crash recovery)", "%s", time.Since(restarting).Round(time.Millisecond))
	if err := playtest.WalkTo(ctx, c, loot); err != nil {
		t.Fatal(err)
	}
	// The documented answer to persistence_unavailable is "retry later":
	// retry, a bounded number of times, until the pickup is acked.
	attempts := 0
	eventually(t, 30*time.Second, func() error {
		attempts++
		ack, err = c.Do(ctx, protocol.FeatureLoot, protocol.ActionPickup, protocol.LootPickup{Entity: loot.ID})
		switch {
		case err != nil:
			t.Fatal(err)
		case !ack.OK && ack.Code != protocol.CodePersistenceUnavailable:
			t.Fatalf("pickup after the database came back: %+v", ack)
		case !ack.OK:
			return fmt.Errorf("pickup %d after the database came back: %+v", attempts, ack)
		}
		return nil
	})
	record(t, "pickups until one is acked after the restart", "%d", attempts)
	if len(ack.Inventory) != 1 {
		t.Fatalf("inventory after the pickup: %+v, want the one item", ack.Inventory)
	}
	owners, events := ownersOf(t, ctx, openDB(t, dsn), ack.Inventory[0].ID)
	if len(owners) != 1 || owners[0] != "character/"+character || events != 1 {
		t.Fatalf("item %s: owners %v, %d pickup events in the database, want exactly character/%s and 1",
			ack.Inventory[0].ID, owners, events, character)
	}
	expectPlaying(t, ctx, c, "the player")
	record(t, "RSS growth over the outage", "%+.1f MiB", float64(r.resources().rssKiB-outage.rssKiB)/1024)
	logResources(t, r, "after the outage")
}
