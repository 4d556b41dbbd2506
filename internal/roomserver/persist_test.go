package roomserver

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/roomkeeper/roomkeeper/internal/playtest"
	"github.com/roomkeeper/roomkeeper/internal/protocol"
	"github.com/roomkeeper/roomkeeper/internal/sim"
	"github.com/roomkeeper/roomkeeper/internal/store"
	"github.com/roomkeeper/roomkeeper/internal/testenv"
	"github.com/roomkeeper/roomkeeper/internal/token"
	"github.com/roomkeeper/roomkeeper/pkg/client"
)

// The package's Postgres, started once; database tests fail (never skip)
// when it cannot start.
var (
	pg    *testenv.Postgres
	pgErr error
	dbSeq atomic.Int64
)

func TestMain(m *testing.M) {
	pg, pgErr = testenv.StartPostgres()
	code := m.Run()
	if pg != nil {
		_ = pg.Stop()
	}
	os.Exit(code)
}

// lootMap has loot everywhere, so some lies within reach of the spawn.
const lootMap = `{"seed":5,"width":256,"height":256,"lootDensity":1}`

// newDB opens a migrated store on a fresh database.
func newDB(t testing.TB) (*store.Postgres, string) {
	t.Helper()
	if pgErr != nil {
		t.Fatalf("no test Postgres: %v", pgErr)
	}
	dsn, err := pg.NewDatabase(fmt.Sprintf("rs%d", dbSeq.Add(1)))
	if err != nil {
		t.Fatal(err)
	}
	db, err := store.Open(context.Background(), dsn)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = db.Close() })
	return db, dsn
}

// persistentHarness runs a server on db with fast checkpoints.
func persistentHarness(t testing.TB, db store.Store, keys *token.StaticKeys, tune func(*Config)) *harness {
	return newHarnessWith(t, func(c *Config) {
		c.MapConfig = []byte(lootMap)
		c.CheckpointInterval = 100 * time.Millisecond
		if tune != nil {
			tune(c)
		}
	}, db, keys)
}

func character(id string) func(*token.Claims) {
	return func(c *token.Claims) { c.Character, c.Subject = id, "user-"+id }
}

// nearestLoot returns the nearest loot entity c sees.
func nearestLoot(t testing.TB, c *client.Client) protocol.EntityState {
	t.Helper()
	loot, err := playtest.NearestLoot(waitCtx(t), c)
	if err != nil {
		t.Fatal(err)
	}
	return loot
}

var dist = playtest.Dist

// walkTo steers c to within reach of target.
func walkTo(t testing.TB, c *client.Client, target protocol.EntityState) {
	t.Helper()
	if err := playtest.WalkTo(waitCtx(t), c, target); err != nil {
		t.Fatal(err)
	}
}

// command sends a command and waits for its ack.
func command(t testing.TB, c *client.Client, feature, action string, payload any) protocol.Ack {
	t.Helper()
	ack, err := c.Do(waitCtx(t), feature, action, payload)
	if err != nil {
		t.Fatalf("%s.%s: %v", feature, action, err)
	}
	return ack
}

// atLoot starts a map on a fresh database, seats character who and walks
// it to the nearest loot.
func atLoot(t testing.TB, who string, tune func(*Config)) (*store.Postgres, *harness, *client.Client, protocol.EntityState) {
	t.Helper()
	db, _ := newDB(t)
	h := persistentHarness(t, db, nil, tune)
	waitReady(t, h)
	c := h.join(character(who))
	loot := nearestLoot(t, c)
	walkTo(t, c, loot)
	return db, h, c, loot
}

func pickup(t testing.TB, c *client.Client, loot protocol.EntityState) protocol.Ack {
	return command(t, c, protocol.FeatureLoot, protocol.ActionPickup, protocol.LootPickup{Entity: loot.ID})
}

func TestAckedPickupIsDurableAndFirstPickupWins(t *testing.T) {
	db, _ := newDB(t)
	h := persistentHarness(t, db, nil, nil)
	waitReady(t, h)
	a, b := h.join(character("alice")), h.join(character("bob"))
	loot := nearestLoot(t, a)
	walkTo(t, a, loot)
	walkTo(t, b, loot)

	ack := pickup(t, a, loot)
	if !ack.OK || len(ack.Inventory) != 1 {
		t.Fatalf("alice's pickup: %+v", ack)
	}
	if again := pickup(t, b, loot); again.OK || again.Code != protocol.CodeAlreadyTaken {
		t.Fatalf("bob's pickup of the same loot: %+v, want already_taken", again)
	}
	items, err := db.ItemsOf(context.Background(), "alice")
	if err != nil || len(items) != 1 || items[0].ItemID != ack.Inventory[0].ID {
		t.Fatalf("alice's items in the database: %+v %v", items, err)
	}
	events, err := db.EventsOf(context.Background(), "alice")
	if err != nil || len(events) != 1 || events[0].Kind != "loot.pickup" {
		t.Fatalf("alice's events: %+v %v", events, err)
	}
	waitFor(t, b, "the loot gone from bob's view", func(s client.State) bool { return !s.Sees(loot.ID) })

	drop := command(t, a, protocol.FeatureInventory, protocol.ActionDrop, protocol.InventoryDrop{Item: items[0].ItemID})
	if !drop.OK || len(drop.Inventory) != 0 {
		t.Fatalf("drop: %+v", drop)
	}
	onMap, err := db.ItemsOn(context.Background(), "demo-town")
	if err != nil || len(onMap) != 1 || onMap[0].ItemID != items[0].ItemID {
		t.Fatalf("items on the map: %+v %v", onMap, err)
	}
}

func TestCrashKeepsAcknowledgedPickupsAndCheckpoints(t *testing.T) {
	db, _ := newDB(t)
	keys := newKeys(t)
	h := persistentHarness(t, db, keys, nil)
	waitReady(t, h)
	a := h.join(character("carol"))
	loot := nearestLoot(t, a)
	walkTo(t, a, loot)
	ack := pickup(t, a, loot)
	if !ack.OK {
		t.Fatalf("pickup: %+v", ack)
	}
	moved := walk(t, a, 0, 1, 6)
	waitSaved(t, db, "carol", moved.Self)
	h.crash() // no final checkpoint, no goodbye

	h2 := persistentHarness(t, db, keys, nil)
	waitReady(t, h2)
	back := h2.join(character("carol"))
	w := back.Welcome()
	if len(w.Inventory) != 1 || w.Inventory[0].ID != ack.Inventory[0].ID {
		t.Fatalf("inventory after the crash: %+v, want %+v", w.Inventory, ack.Inventory)
	}
	s := waitFor(t, back, "carol in sight", func(s client.State) bool { return s.Sees(w.PlayerID) })
	if dist(s.Self, moved.Self) > 0.01 {
		t.Errorf("carol came back at (%v,%v), saved at (%v,%v)", s.Self.X, s.Self.Y, moved.Self.X, moved.Self.Y)
	}
	for _, e := range s.Entities {
		if e.Kind == protocol.EntityLoot && dist(e, loot) < 0.01 {
			t.Fatalf("the picked-up loot is back on the ground at (%v,%v)", e.X, e.Y)
		}
	}
}

// killPostgres stops the package's Postgres as a crash would and returns
// what starts it again; a test that fails first has it restarted at its
// end, for the tests after.
func killPostgres(t *testing.T) (restart func()) {
	t.Helper()
	if err := pg.Kill(); err != nil {
		t.Fatal(err)
	}
	restarted := false
	t.Cleanup(func() {
		if !restarted {
			_ = pg.Restart()
		}
	})
	return func() {
		t.Helper()
		if err := pg.Restart(); err != nil {
			t.Fatal(err)
		}
		restarted = true
	}
}

func TestDatabaseOutage(t *testing.T) {
	db, _, a, loot := atLoot(t, "dave", nil)

	restart := killPostgres(t)
	if ack := pickup(t, a, loot); ack.OK || ack.Code != protocol.CodePersistenceUnavailable {
		t.Fatalf("pickup with the database down: %+v, want persistence_unavailable", ack)
	}
	before := a.Snapshot().Self
	during := walk(t, a, 0, -1, 6) // the simulation goes on
	if during.Self.Y >= before.Y {
		t.Errorf("movement stopped during the outage: y %v -> %v", before.Y, during.Self.Y)
	}
	if !a.Snapshot().Sees(loot.ID) {
		t.Error("the loot of a refused pickup is gone")
	}

	restart()
	walkTo(t, a, loot)
	ack := pickup(t, a, loot)
	if !ack.OK {
		t.Fatalf("pickup after the database came back: %+v", ack)
	}
	if items, err := db.ItemsOf(context.Background(), "dave"); err != nil || len(items) != 1 || items[0].ItemID != ack.Inventory[0].ID {
		t.Fatalf("the acknowledged pickup is not in the database: %+v %v", items, err)
	}
	waitSaved(t, db, "dave", a.Snapshot().Self) // queued checkpoints get through
}

func TestShutdownWritesAFinalCheckpoint(t *testing.T) {
	db, _ := newDB(t)
	h := persistentHarness(t, db, nil, func(c *Config) { c.CheckpointInterval = time.Hour })
	waitReady(t, h)
	a := h.join(character("heidi"))
	moved := walk(t, a, 1, 0, 6)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := h.srv.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
	waitSaved(t, db, "heidi", moved.Self)
	if _, err := db.ClaimLease(ctx, "heidi", "demo-forest", "other-pod", time.Minute, time.Now()); err != nil {
		t.Errorf("the lease was not released at shutdown: %v", err)
	}
}

func TestAnExpiredLeaseIsTakenOver(t *testing.T) {
	db, _ := newDB(t)
	keys := newKeys(t)
	town := persistentHarness(t, db, keys, func(c *Config) { c.LeaseTTL = 300 * time.Millisecond })
	waitReady(t, town)
	town.join(character("ivan"))
	town.crash() // nobody renews ivan's lease any more

	forest := persistentHarness(t, db, keys, func(c *Config) { c.Map, c.Instance = "forest", "demo-forest" })
	waitReady(t, forest)
	deadline := time.Now().Add(20 * time.Second)
	for {
		c, err := client.Dial(context.Background(), forest.url, protocol.Hello{Ticket: forest.ticket(character("ivan"))}, client.Options{})
		if err == nil {
			_ = c.Close()
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("ivan's expired lease was never taken over: %v", err)
		}
	}
}

func TestTwoServersShareTicketsAndLeases(t *testing.T) {
	db, _ := newDB(t)
	keys := newKeys(t)
	one := persistentHarness(t, db, keys, nil)
	two := persistentHarness(t, db, keys, nil) // a second process serving the same map instance
	waitReady(t, one)
	waitReady(t, two)

	ticket := one.ticket(character("erin"))
	one.dial(protocol.Hello{Ticket: ticket}, client.Options{})
	two.refused(protocol.Hello{Ticket: ticket}, protocol.CodeTokenReplayed)

	forest := persistentHarness(t, db, keys, func(c *Config) { c.Map, c.Instance = "forest", "demo-forest" })
	waitReady(t, forest)
	forest.refused(protocol.Hello{Ticket: forest.ticket(character("erin"))}, protocol.CodeAlreadyTaken)
	forest.refused(protocol.Hello{Ticket: forest.ticket(func(c *token.Claims) { c.Character, c.Subject = "erin", "mallory" })},
		protocol.CodeNotOwner)
}

func TestCorruptOrUnknownStateRefusesTheJoin(t *testing.T) {
	db, _ := newDB(t)
	h := persistentHarness(t, db, nil, nil)
	waitReady(t, h)
	ctx := context.Background()
	for name, row := range map[string]store.CharacterState{
		"frank": encodeState("town", sim.PlayerRecord{Tag: "frank", X: 1, Y: 1, HP: 1, Revision: 1}),
		"grace": {CharacterID: "grace", SchemaVersion: 42, SimCoreVersion: simCoreVersion, Revision: 1, Payload: []byte(`{}`), StateHash: store.HashPayload([]byte(`{}`))},
		"heidi": {CharacterID: "heidi", SchemaVersion: stateSchema, SimCoreVersion: "roomkeeper-sim/9", Revision: 1, Payload: []byte(`{}`), StateHash: store.HashPayload([]byte(`{}`))},
	} {
		if err := db.EnsureCharacter(ctx, name, "user-"+name); err != nil {
			t.Fatal(err)
		}
		lease, err := db.ClaimLease(ctx, name, "demo-town", "test", time.Minute, time.Now())
		if err != nil {
			t.Fatal(err)
		}
		row.Epoch = lease.Epoch
		if _, err := db.SaveStates(ctx, "demo-town", []store.CharacterState{row}); err != nil {
			t.Fatal(err)
		}
	}
	// A disk or a hand edit changes frank's payload behind the hash's back.
	if _, err := db.DB().ExecContext(ctx, `UPDATE character_state SET payload = $1 WHERE character_id = 'frank'`,
		[]byte(`{"x":999,"y":999,"hp":255}`)); err != nil {
		t.Fatal(err)
	}
	var se *client.ServerError
	_, err := client.Dial(ctx, h.url, protocol.Hello{Ticket: h.ticket(character("frank"))}, client.Options{})
	if !errors.As(err, &se) || se.Code != protocol.CodeInternal || !strings.Contains(err.Error(), "corrupt") {
		t.Errorf("corrupt state: %v, want the join refused as internal: corrupt", err)
	}
	_, err = client.Dial(ctx, h.url, protocol.Hello{Ticket: h.ticket(character("grace"))}, client.Options{})
	if !errors.As(err, &se) || se.Code != protocol.CodeInternal || !strings.Contains(err.Error(), "unknown schema") {
		t.Errorf("schema 42: %v, want the join refused as internal: unknown schema", err)
	}
	_, err = client.Dial(ctx, h.url, protocol.Hello{Ticket: h.ticket(character("heidi"))}, client.Options{})
	if !errors.As(err, &se) || se.Code != protocol.CodeInternal || !strings.Contains(err.Error(), "roomkeeper-sim/9") ||
		!strings.Contains(err.Error(), "unknown simulation core") {
		t.Errorf("sim core 9: %v, want the join refused as internal, naming the version", err)
	}
}

func TestGuestsAreNeverPersisted(t *testing.T) {
	db, _ := newDB(t)
	h := persistentHarness(t, db, nil, nil)
	waitReady(t, h)
	g := h.join(func(c *token.Claims) { c.Character, c.Subject = "guest-char", guestPrefix+"1" })
	loot := nearestLoot(t, g)
	walkTo(t, g, loot)
	if ack := pickup(t, g, loot); !ack.OK {
		t.Fatalf("guest pickup: %+v", ack)
	}
	if items, err := db.ItemsOf(context.Background(), "guest-char"); err != nil || len(items) != 0 {
		t.Errorf("a guest's items reached the database: %+v %v", items, err)
	}
}

func newKeys(t testing.TB) *token.StaticKeys {
	key, err := token.NewKey()
	if err != nil {
		t.Fatal(err)
	}
	return &token.StaticKeys{Current: key}
}

// waitReady waits for the map to have restored its loot.
func waitReady(t testing.TB, h *harness) {
	t.Helper()
	poll(t, func() error {
		if !h.srv.restored.Load() {
			return errors.New("the map never became ready")
		}
		return nil
	})
}

// waitSaved waits until the character's checkpoint holds position at.
func waitSaved(t testing.TB, db store.Store, characterID string, at protocol.EntityState) {
	t.Helper()
	poll(t, func() error {
		s, err := db.LoadState(context.Background(), characterID)
		if err == nil {
			spec, derr := decodeState(s, 100, time.Now())
			// at is what the client was sent: on the wire's 1/16 grid.
			if derr == nil && protocol.Quantize(spec.X) == protocol.Quantize(at.X) && protocol.Quantize(spec.Y) == protocol.Quantize(at.Y) {
				return nil
			}
		}
		return fmt.Errorf("no checkpoint of %s at (%v,%v): last %+v %w", characterID, at.X, at.Y, s, err)
	})
}

// TestSlowDatabaseIsPersistenceUnavailable: a commit that runs past its
// deadline (Postgres cancels it: query_canceled) is persistence_unavailable,
// not internal, and nothing changes.
func TestSlowDatabaseIsPersistenceUnavailable(t *testing.T) {
	db, _, c, loot := atLoot(t, "slowpoke", func(c *Config) { c.CriticalTimeout = 300 * time.Millisecond })
	// Another transaction holds the character's lease row: the commit's
	// fence waits on it until the deadline.
	tx, err := db.DB().BeginTx(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = tx.Rollback() }()
	if _, err := tx.Exec(`SELECT 1 FROM character_authority WHERE character_id = 'slowpoke' FOR UPDATE`); err != nil {
		t.Fatal(err)
	}
	if ack := pickup(t, c, loot); ack.OK || ack.Code != protocol.CodePersistenceUnavailable {
		t.Fatalf("pickup under a stalled database: %+v, want persistence_unavailable", ack)
	}
	_ = tx.Rollback()
	if ack := pickup(t, c, loot); !ack.OK {
		t.Fatalf("pickup once the database answers: %+v", ack)
	}
}

// TestAPickupWhoseCommitWentUnansweredIsSettledNotUndone: the database
// commits a pickup and its answer is lost on the way back. The map cannot
// tell that from a pickup that failed, so it neither undoes it nor acks it
// yet: it commits it again under its event id and acks ok. The ack, the
// world and the database agree: the player holds the item, once.
func TestAPickupWhoseCommitWentUnansweredIsSettledNotUndone(t *testing.T) {
	direct, dsn := newDB(t)
	db, cutter := storeCutting(t, dsn)
	h := persistentHarness(t, db, nil, nil)
	waitReady(t, h)
	c := h.join(character("unanswered"))
	loot := nearestLoot(t, c)
	walkTo(t, c, loot)

	cutter.CutNextCommitOf("critical_events")
	ack := pickup(t, c, loot)
	select {
	case <-cutter.Cuts():
	default:
		t.Fatal("the pickup's commit was not cut")
	}
	if !ack.OK || len(ack.Inventory) != 1 {
		t.Fatalf("pickup whose commit went unanswered: %+v, want ok with the item", ack)
	}
	items, err := direct.ItemsOf(context.Background(), "unanswered")
	if err != nil {
		t.Fatal(err)
	}
	if len(items) != 1 || items[0].ItemID != ack.Inventory[0].ID {
		t.Fatalf("stored items %+v, want the one acked (%s)", items, ack.Inventory[0].ID)
	}
	var events int
	if err := direct.DB().QueryRow(`SELECT count(*) FROM critical_events WHERE character_id = 'unanswered'`).Scan(&events); err != nil || events != 1 {
		t.Fatalf("%d pickup events stored (%v), want 1", events, err)
	}
}

// storeCutting opens the database at dsn through a proxy that can lose a
// COMMIT's answer after the server committed.
func storeCutting(t testing.TB, dsn string) (*store.Postgres, *testenv.CommitCutter) {
	t.Helper()
	cutter, viaCutter, err := testenv.NewCommitCutter(dsn)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cutter.Close() })
	db, err := store.Open(context.Background(), viaCutter)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = db.Close() })
	return db, cutter
}

// TestGuestTicketsCannotNameAPlayersCharacter: a guest ticket for a real
// character is refused and its owner keeps playing; a player's ticket for
// a guest character likewise.
func TestGuestTicketsCannotNameAPlayersCharacter(t *testing.T) {
	db, _ := newDB(t)
	h := persistentHarness(t, db, nil, nil)
	waitReady(t, h)
	owner := h.join(character("hilda"))
	h.refused(protocol.Hello{Ticket: h.ticket(func(c *token.Claims) { c.Subject, c.Character = guestPrefix+"x", "hilda" })}, protocol.CodeUnauthorized)
	h.refused(protocol.Hello{Ticket: h.ticket(func(c *token.Claims) { c.Subject, c.Character = "user-ivo", guestPrefix+"c" })}, protocol.CodeUnauthorized)
	if seq, err := owner.MoveSteps(1, 0, 2); err != nil {
		t.Fatal(err)
	} else {
		waitFor(t, owner, "the owner still plays", func(s client.State) bool { return s.AckSeq >= seq })
	}
}

// Guests join while the database is down, their ticket spent in the pod's
// memory: a second use is refused then and after the database is back.
// Players are refused with persistence_unavailable until it is back.
func TestGuestsJoinWhileTheDatabaseIsDown(t *testing.T) {
	db, _ := newDB(t)
	h := persistentHarness(t, db, nil, nil)
	waitReady(t, h)
	guest := func(c *token.Claims) { c.Subject, c.Character = guestPrefix+randomID(), guestPrefix+randomID() }
	restart := killPostgres(t)
	ticket := h.ticket(guest)
	g := h.dial(protocol.Hello{Ticket: ticket}, client.Options{})
	waitFor(t, g, "the guest in the world", func(s client.State) bool { return s.Sees(g.Welcome().PlayerID) })
	h.refused(protocol.Hello{Ticket: ticket}, protocol.CodeTokenReplayed)
	h.refused(protocol.Hello{Ticket: h.ticket(character("pat"))}, protocol.CodePersistenceUnavailable)
	if n := testutil.ToFloat64(h.srv.metrics.guestsWithoutDatabase); n != 1 {
		t.Errorf("guests admitted without the database: %v, want 1", n)
	}

	restart()
	h.refused(protocol.Hello{Ticket: ticket}, protocol.CodeTokenReplayed)
	poll(t, func() error { // the database is back: players join again
		_, err := client.Dial(waitCtx(t), h.url, protocol.Hello{Ticket: h.ticket(character("pat"))}, client.Options{})
		return err
	})
	again := h.ticket(guest)
	h.dial(protocol.Hello{Ticket: again}, client.Options{})
	h.refused(protocol.Hello{Ticket: again}, protocol.CodeTokenReplayed)
}
