package attack

import (
	"context"
	"database/sql"
	"slices"
	"testing"

	"github.com/gorilla/websocket"

	"github.com/roomkeeper/roomkeeper/internal/playtest"
	"github.com/roomkeeper/roomkeeper/internal/protocol"
	"github.com/roomkeeper/roomkeeper/internal/token"
	"github.com/roomkeeper/roomkeeper/pkg/client"
)

// rejoinRounds is how many pickups and drops race a rejoin.
const rejoinRounds = 8

// TestCriticalActionsRacingARejoinEndOnce: a pickup or drop sent at the
// moment the same character joins again on a new connection ends exactly
// once: the new connection's welcome lists what the database says the
// character carries, round after round, whichever won the race.
func TestCriticalActionsRacingARejoinEndOnce(t *testing.T) {
	ctx := caseContext(t)
	dsn := newDatabase(t)
	r := startServer(t, dsn, lootMap)
	db := openDB(t, dsn)
	who := newCharacter("rejoiner")
	c := join(t, ctx, r, who)
	for round := range rejoinRounds {
		carried := c.Welcome().Inventory // c is a new connection each round: its welcome is up to date
		if len(carried) > 0 && round%2 == 1 {
			if _, err := c.Command(protocol.FeatureInventory, protocol.ActionDrop, protocol.InventoryDrop{Item: carried[0].ID}); err != nil {
				t.Fatal(err)
			}
		} else {
			loot, err := playtest.NearestLoot(ctx, c)
			if err != nil {
				t.Fatal(err)
			}
			if err := playtest.WalkTo(ctx, c, loot); err != nil {
				t.Fatal(err)
			}
			if _, err := c.Command(protocol.FeatureLoot, protocol.ActionPickup, protocol.LootPickup{Entity: loot.ID}); err != nil {
				t.Fatal(err)
			}
		}
		next := join(t, ctx, r, who) // races the action just sent
		stored := itemsOf(t, ctx, db, who)
		welcomed := make([]string, 0, len(next.Welcome().Inventory))
		for _, it := range next.Welcome().Inventory {
			welcomed = append(welcomed, it.ID)
		}
		slices.Sort(welcomed)
		if !slices.Equal(stored, welcomed) {
			t.Fatalf("round %d: the database says %s carries %v, the new connection's welcome %v", round, who, stored, welcomed)
		}
		c = next
	}
	logResources(t, r, "after the rejoin races")
}

// itemsOf is what the database says character carries, sorted.
func itemsOf(t *testing.T, ctx context.Context, db *sql.DB, character string) []string {
	t.Helper()
	rows, err := db.QueryContext(ctx, "SELECT item_id FROM item_ownership WHERE owner_kind = 'character' AND owner_id = $1 ORDER BY item_id", character)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	items := []string{}
	for rows.Next() {
		var id string
		if err := rows.Scan(&id); err != nil {
			t.Fatal(err)
		}
		items = append(items, id)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return items
}

// TestDroppedGuestsDoNotFillTheMap: guests that join and drop their
// connection, as many as the map has seats, do not lock a player out for
// their resume grace (docs/protocol.md, Joining and resuming).
func TestDroppedGuestsDoNotFillTheMap(t *testing.T) {
	ctx := caseContext(t)
	const seats = 3
	r := startServer(t, newDatabase(t), townMap, "--max-players=3")
	for range seats {
		g := newCharacter("guest")
		raw := ticket(t, "guest-"+g, func(c *token.Claims) { c.Subject = "guest-" + g })
		c, err := client.Dial(ctx, r.url, protocol.Hello{Ticket: raw}, client.Options{})
		if err != nil {
			t.Fatalf("a guest's join: %v", err)
		}
		if err := c.Drop(); err != nil {
			t.Fatal(err)
		}
	}
	player := join(t, ctx, r, newCharacter("seated"))
	expectPlaying(t, ctx, player, "the player who took a dropped guest's seat")
}

// TestResumeTokensAreSingleUse: a resume token works once (each resume's
// welcome carries a new one), and the connection a resume displaces is
// told why before its close.
func TestResumeTokensAreSingleUse(t *testing.T) {
	ctx := caseContext(t)
	r := startServer(t, newDatabase(t), townMap)
	first := rawJoin(t, ctx, r, newCharacter("resumer"))
	token1 := first.snapshot().welcome.ResumeToken

	second := newResumer(t, ctx, r, token1)
	s, err := first.waitClosed(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if s.count(protocol.CodeUnauthorized) != 1 {
		t.Fatalf("the displaced connection got %+v, want an unauthorized error before its close", s.errors)
	}
	if code, _ := closeCode(s.closed); code != websocket.ClosePolicyViolation {
		t.Fatalf("the displaced connection closed with %v, want 1008", s.closed)
	}
	token2 := second.snapshot().welcome.ResumeToken
	if token2 == "" || token2 == token1 {
		t.Fatalf("the resume's welcome carries token %q, want a new one", token2)
	}
	expectRefusedHello(t, ctx, r, protocol.Hello{Resume: token1}, protocol.CodeTokenReplayed)
	third := newResumer(t, ctx, r, token2)
	if third.snapshot().welcome.PlayerID != second.snapshot().welcome.PlayerID {
		t.Fatal("the new token resumed another player")
	}
}

// newResumer resumes the seat of resumeToken on a new raw connection.
func newResumer(t *testing.T, ctx context.Context, r *roomServer, resumeToken string) *peer {
	t.Helper()
	conn, status, err := dialRaw(ctx, r, dialOptions{})
	if err != nil {
		t.Fatalf("dialing (HTTP %d): %v", status, err)
	}
	p := newPeer(t, conn)
	if err := p.sendMessage(protocol.KindHello, 1, protocol.Hello{Resume: resumeToken}); err != nil {
		t.Fatal(err)
	}
	s, err := p.waitFor(ctx, "welcome", func(s peerState) bool { return s.welcome != nil || len(s.errors) > 0 })
	if err != nil || s.welcome == nil || !s.welcome.Resumed {
		t.Fatalf("resume: %v %+v", err, s.errors)
	}
	return p
}
