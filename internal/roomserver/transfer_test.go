package roomserver

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/gorilla/websocket"

	"github.com/roomkeeper/roomkeeper/internal/playtest"
	"github.com/roomkeeper/roomkeeper/internal/protocol"
	"github.com/roomkeeper/roomkeeper/internal/sim"
	"github.com/roomkeeper/roomkeeper/internal/store"
	"github.com/roomkeeper/roomkeeper/internal/token"
	"github.com/roomkeeper/roomkeeper/pkg/client"
)

// Two maps of room demo, each with a portal to the other a few steps from
// where players stand; the town is full of loot.
const (
	townWithPortal  = `{"seed":5,"width":256,"height":256,"lootDensity":1,"portals":[{"to":"crypt","x":200,"y":128}]}`
	cryptWithPortal = `{"seed":7,"width":256,"height":256,"portals":[{"to":"town","x":40,"y":40}]}`
)

// world is a town and a crypt sharing a database and keys, each portal
// leading to the other's server.
type world struct {
	db          *store.Postgres
	town, crypt *harness
	dir         StaticDirectory
}

func newWorld(t testing.TB, tune func(*Config)) *world {
	t.Helper()
	db, _ := newDB(t)
	return newWorldOn(t, tune, db, db)
}

// newWorldOn is newWorld on db, the town reaching it through townStore
// (a fault injector in front of the same database).
func newWorldOn(t testing.TB, tune func(*Config), db *store.Postgres, townStore store.Store) *world {
	t.Helper()
	keys := newKeys(t)
	w := &world{db: db, dir: StaticDirectory{}}
	on := func(mapName, instance, cfg string) func(*Config) {
		return func(c *Config) {
			c.Map, c.Instance, c.MapConfig = mapName, instance, []byte(cfg)
			c.CheckpointInterval = 100 * time.Millisecond
			if tune != nil {
				tune(c)
			}
		}
	}
	w.town = newHarnessOn(t, on("town", "demo-town", townWithPortal), townStore, keys, w.dir)
	w.crypt = newHarnessOn(t, on("crypt", "demo-crypt", cryptWithPortal), db, keys, w.dir)
	w.dir["town"] = Destination{Map: "town", Instance: "demo-town", Endpoint: w.town.url}
	w.dir["crypt"] = Destination{Map: "crypt", Instance: "demo-crypt", Endpoint: w.crypt.url}
	waitReady(t, w.town)
	waitReady(t, w.crypt)
	return w
}

func enterPortal(t *testing.T, c *client.Client, to string) protocol.Ack {
	t.Helper()
	ack, err := playtest.EnterPortal(waitCtx(t), c, to)
	if err != nil {
		t.Fatalf("entering the portal to %s: %v", to, err)
	}
	return ack
}

// TestTransferKeepsTheCharacter walks a player from the town into the
// crypt and back: what it picked up travels, what it dropped stays, it
// arrives at the portal back, and no observer ever sees it in two maps.
func TestTransferKeepsTheCharacter(t *testing.T) {
	w := newWorld(t, nil)
	ctx := context.Background()
	alice := w.town.join(character("alice"), func(c *token.Claims) { c.Party = "p-alice" })
	watcher := w.town.join(character("watcher"))
	if alice.Welcome().Party != "p-alice" || watcher.Welcome().Party != "" {
		t.Fatalf("welcomes say parties %q and %q, want the tickets' p-alice and none", alice.Welcome().Party, watcher.Welcome().Party)
	}
	loot := nearestLoot(t, alice)
	walkTo(t, alice, loot)
	kept := pickup(t, alice, loot)
	waitFor(t, alice, "the loot gone", func(s client.State) bool { return !s.Sees(loot.ID) })
	second := nearestLoot(t, alice)
	walkTo(t, alice, second)
	if ack := pickup(t, alice, second); !ack.OK || len(ack.Inventory) != 2 {
		t.Fatalf("second pickup: %+v", ack)
	}
	left := command(t, alice, protocol.FeatureInventory, protocol.ActionDrop, protocol.InventoryDrop{Item: kept.Inventory[0].ID})
	if !left.OK || len(left.Inventory) != 1 {
		t.Fatalf("drop: %+v", left)
	}
	carried := left.Inventory
	hp := alice.Snapshot().Self.HP
	before := alice.Welcome().PlayerID
	waitFor(t, watcher, "alice in sight", func(s client.State) bool { return s.Sees(before) })

	if ack := enterPortal(t, alice, "crypt"); !ack.OK {
		t.Fatalf("portal.enter: %+v", ack)
	}
	welcome := alice.Welcome()
	if welcome.Map != "crypt" || welcome.Instance != "demo-crypt" || welcome.Transfer == "" || welcome.Party != "p-alice" {
		t.Fatalf("welcome after the transfer: %+v", welcome)
	}
	if len(welcome.Inventory) != 1 || welcome.Inventory[0] != carried[0] {
		t.Fatalf("inventory in the crypt = %+v, want %+v", welcome.Inventory, carried)
	}
	if w.town.srv.Stats().Players != 1 {
		t.Fatalf("town players = %d once alice is welcomed in the crypt, want 1 (the watcher)", w.town.srv.Stats().Players)
	}
	waitFor(t, watcher, "alice gone from the town", func(s client.State) bool { return !s.Sees(before) })
	arrival := alice.Static().Arrival("town")
	self := waitFor(t, alice, "a snapshot in the crypt", func(s client.State) bool { return s.Snapshots > 0 }).Self
	if self.X != float32(arrival.X) || self.Y != float32(arrival.Y) || self.HP != hp {
		t.Fatalf("arrived at (%v,%v) with %d hp, want the portal back (%d,%d) with %d", self.X, self.Y, self.HP, arrival.X, arrival.Y, hp)
	}
	tr, err := w.db.GetTransfer(ctx, welcome.Transfer)
	if err != nil {
		t.Fatal(err)
	}
	waitTransferState(t, w.db, welcome.Transfer, store.TransferCompleted)
	if tr.FromInstance != "demo-town" || tr.ToInstance != "demo-crypt" {
		t.Fatalf("transfer row: %+v", tr)
	}
	held, _ := w.db.ItemsOf(ctx, "alice")
	onTown, _ := w.db.ItemsOn(ctx, "demo-town")
	if len(held) != 1 || held[0].ItemID != carried[0].ID || len(onTown) != 1 || onTown[0].ItemID != kept.Inventory[0].ID {
		t.Fatalf("items: alice holds %+v, the town floor has %+v", held, onTown)
	}

	// And back: the crypt's portal leads to the town's portal to the crypt.
	if ack := enterPortal(t, alice, "town"); !ack.OK {
		t.Fatalf("portal.enter back: %+v", ack)
	}
	back := alice.Welcome()
	townPortal := alice.Static().Arrival("crypt")
	self = waitFor(t, alice, "a snapshot in the town", func(s client.State) bool { return s.Snapshots > 0 }).Self
	if back.Map != "town" || len(back.Inventory) != 1 || self.X != float32(townPortal.X) || self.Y != float32(townPortal.Y) {
		t.Fatalf("back in the town: %+v at (%v,%v)", back, self.X, self.Y)
	}
	if w.crypt.srv.Stats().Players != 0 {
		t.Fatal("alice is still in the crypt")
	}
	// The character keeps playing: a pickup in the town after two transfers.
	loot = nearestLoot(t, alice)
	walkTo(t, alice, loot)
	if ack := pickup(t, alice, loot); !ack.OK || len(ack.Inventory) != 2 {
		t.Fatalf("pickup after the round trip: %+v", ack)
	}
}

func waitTransferState(t *testing.T, db *store.Postgres, id string, want store.TransferState) {
	t.Helper()
	poll(t, func() error {
		tr, err := db.GetTransfer(context.Background(), id)
		if err == nil && tr.State == want {
			return nil
		}
		return fmt.Errorf("transfer %s is %+v (%w), want %s", id, tr, err, want)
	})
}

// transferOf walks a NoFollow client of character id into the portal to
// crypt and returns the transfer message it got.
func transferOf(t *testing.T, w *world, id string) (*client.Client, protocol.Transfer) {
	t.Helper()
	c := w.town.dial(protocol.Hello{Ticket: w.town.ticket(character(id))}, client.Options{NoFollow: true})
	portal, _ := playtest.PortalTo(c, "crypt")
	walkTo(t, c, protocol.EntityState{X: portal.X, Y: portal.Y})
	if ack := command(t, c, protocol.FeaturePortal, protocol.ActionEnter, protocol.PortalEnter{Portal: portal.Entity}); !ack.OK {
		t.Fatalf("portal.enter: %+v", ack)
	}
	s := waitFor(t, c, "the transfer message", func(s client.State) bool { return s.Transfer != nil })
	return c, *s.Transfer
}

// TestTransferTokensAreOneUseAndBound tries the tokens of a transfer the
// ways an attacker would: on the wrong map, twice, after the other side
// won, and a plain join racing the transfer.
func TestTransferTokensAreOneUseAndBound(t *testing.T) {
	w := newWorld(t, nil)
	_, tr := transferOf(t, w, "bob")
	if tr.Map != "crypt" || tr.Instance != "demo-crypt" || tr.Endpoint != w.crypt.url || tr.ReturnTicket == "" {
		t.Fatalf("transfer message: %+v", tr)
	}
	w.town.refused(protocol.Hello{Ticket: tr.Ticket}, protocol.CodeWrongMap)
	w.crypt.refused(protocol.Hello{Ticket: tr.ReturnTicket}, protocol.CodeWrongMap)
	// A join through the join API while the character is in transfer.
	w.crypt.refused(protocol.Hello{Ticket: w.crypt.ticket(character("bob"))}, protocol.CodeAlreadyTaken)
	w.town.refused(protocol.Hello{Ticket: w.town.ticket(character("bob"))}, protocol.CodeAlreadyTaken)

	bob := w.crypt.dial(protocol.Hello{Ticket: tr.Ticket}, client.Options{})
	if bob.Welcome().Map != "crypt" {
		t.Fatalf("welcome: %+v", bob.Welcome())
	}
	w.crypt.refused(protocol.Hello{Ticket: tr.Ticket}, protocol.CodeTokenReplayed)
	// The destination won: the way back is closed.
	w.town.refused(protocol.Hello{Ticket: tr.ReturnTicket}, protocol.CodeTokenExpired)
	waitTransferState(t, w.db, tr.ID, store.TransferCompleted)
}

func TestForgedAndMistypedTransferTokensAreRefused(t *testing.T) {
	w := newWorld(t, nil)
	_, tr := transferOf(t, w, "carol")
	claims := token.Claims{Type: token.TypeTransfer, Subject: "user-carol", Character: "carol", Room: "demo",
		Map: "demo-crypt", From: "demo-town", Transfer: tr.ID}
	other := token.NewSigner(*newKeys(t), nil)
	forged, _, _ := other.Sign(claims, 10*time.Second)
	w.crypt.refused(protocol.Hello{Ticket: forged}, protocol.CodeUnauthorized)
	for name, edit := range map[string]func(*token.Claims){
		"another room":          func(c *token.Claims) { c.Room = "other" },
		"a destination request": func(c *token.Claims) { c.Type, c.Transfer = token.TypeDestination, "" },
	} {
		c := claims
		edit(&c)
		raw, _, err := w.crypt.signer.Sign(c, 10*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		t.Run(name, func(t *testing.T) { w.crypt.refused(protocol.Hello{Ticket: raw}, protocol.CodeUnauthorized) })
	}
	// Another transfer id, correctly signed: no such transfer.
	c := claims
	c.Transfer = "made-up"
	raw, _, _ := w.crypt.signer.Sign(c, 10*time.Second)
	w.crypt.refused(protocol.Hello{Ticket: raw}, protocol.CodeUnauthorized)
	// A join ticket cannot arrive by transfer, nor a transfer token of another character.
	c = claims
	c.Character, c.Subject = "mallory", "user-mallory"
	raw, _, _ = w.crypt.signer.Sign(c, 10*time.Second)
	w.crypt.refused(protocol.Hello{Ticket: raw}, protocol.CodeUnauthorized)
	// The real token still works after all that.
	if carol := w.crypt.dial(protocol.Hello{Ticket: tr.Ticket}, client.Options{}); carol.Welcome().Map != "crypt" {
		t.Fatal("the real token was refused")
	}
}

// TestExpiredTransferTokenIsRefusedAndSwept: a token used too late is
// refused, and the source aborts the transfer so the character plays on.
func TestExpiredTransferTokenIsRefusedAndSwept(t *testing.T) {
	w := newWorld(t, func(c *Config) { c.LeaseTTL = 300 * time.Millisecond })
	dave, tr := transferOf(t, w, "dave")
	at := dave.Snapshot().Self
	w.crypt.now.Store(int64(time.Minute))
	w.crypt.refused(protocol.Hello{Ticket: tr.Ticket}, protocol.CodeTokenExpired)
	w.town.now.Store(int64(time.Minute)) // the town's sweep sees the tokens expired
	waitTransferState(t, w.db, tr.ID, store.TransferAborted)
	w.town.now.Store(0)
	again := w.town.join(character("dave"))
	self := waitFor(t, again, "a snapshot", func(s client.State) bool { return s.Snapshots > 0 }).Self
	if dist(self, at) > 1 {
		t.Fatalf("dave came back at (%v,%v), want where he entered the portal (%v,%v)", self.X, self.Y, at.X, at.Y)
	}
}

// TestDeadDestinationSendsThePlayerBack: the destination is gone between
// the transfer message and the hello; the client returns to the source
// with the return ticket and keeps its things and place.
func TestDeadDestinationSendsThePlayerBack(t *testing.T) {
	w := newWorld(t, nil)
	erin := w.town.join(character("erin"))
	loot := nearestLoot(t, erin)
	walkTo(t, erin, loot)
	if ack := pickup(t, erin, loot); !ack.OK {
		t.Fatal(ack)
	}
	w.crypt.crash()
	if ack := enterPortal(t, erin, "crypt"); !ack.OK {
		t.Fatalf("portal.enter: %+v", ack)
	}
	s := erin.Snapshot()
	if s.Returns != 1 || s.Map != "town" || len(erin.Welcome().Inventory) != 1 {
		t.Fatalf("after the failed transfer: returns %d, map %s, welcome %+v", s.Returns, s.Map, erin.Welcome())
	}
	waitTransferState(t, w.db, erin.Welcome().Transfer, store.TransferAborted)
	portal, _ := playtest.PortalTo(erin, "crypt")
	self := waitFor(t, erin, "a snapshot", func(s client.State) bool { return s.Snapshots > 0 }).Self
	if dist(self, protocol.EntityState{X: portal.X, Y: portal.Y}) > playtest.Reach+1 {
		t.Fatalf("erin is at (%v,%v), not back at the portal (%v,%v)", self.X, self.Y, portal.X, portal.Y)
	}
	if held, _ := w.db.ItemsOf(context.Background(), "erin"); len(held) != 1 {
		t.Fatalf("erin holds %+v", held)
	}
}

func TestPortalEnterRefusals(t *testing.T) {
	w := newWorld(t, nil)
	give(t, w.db, "frank", store.Item{ItemID: "f1", Kind: "sword"})
	c := w.town.join(character("frank"))
	portal, ok := playtest.PortalTo(c, "crypt")
	if !ok {
		t.Fatal("no portal to the crypt in welcome")
	}
	enter := func(id uint32) protocol.Ack {
		return command(t, c, protocol.FeaturePortal, protocol.ActionEnter, protocol.PortalEnter{Portal: id})
	}
	if ack := enter(portal.Entity); ack.OK || ack.Code != protocol.CodeOutOfRange {
		t.Fatalf("from afar: %+v, want out_of_range", ack)
	}
	if ack := enter(9999); ack.OK || ack.Code != protocol.CodeInvalidAction {
		t.Fatalf("no such portal: %+v, want invalid_action", ack)
	}
	if ack := command(t, c, protocol.FeaturePortal, protocol.ActionEnter, map[string]any{"portal": "x"}); ack.OK || ack.Code != protocol.CodeBadRequest {
		t.Fatalf("malformed: %+v, want bad_request", ack)
	}
	walkTo(t, c, protocol.EntityState{X: portal.X, Y: portal.Y})
	delete(w.dir, "crypt") // the crypt is quarantined or gone
	if ack := enter(portal.Entity); ack.OK || ack.Code != protocol.CodeMapQuarantined {
		t.Fatalf("to a map that is not running: %+v, want map_quarantined", ack)
	}
	walk(t, c, -1, 0, 3) // still here, still in control
	w.dir["crypt"] = Destination{Map: "crypt", Instance: "demo-crypt", Endpoint: w.crypt.url}
	walkTo(t, c, protocol.EntityState{X: portal.X, Y: portal.Y})
	first, err := c.Command(protocol.FeaturePortal, protocol.ActionEnter, protocol.PortalEnter{Portal: portal.Entity})
	if err != nil {
		t.Fatal(err)
	}
	if ack := equipCmd(t, c, "f1", "weapon"); ack.OK || ack.Code != protocol.CodeInvalidAction {
		t.Errorf("equipping on the way through the portal: %+v, want invalid_action", ack)
	}
	second := enter(portal.Entity)
	if second.OK || second.Code != protocol.CodeInvalidAction {
		t.Fatalf("entering twice: %+v, want invalid_action", second)
	}
	waitFor(t, c, "the first entry's transfer", func(s client.State) bool {
		for _, a := range s.Acks {
			if a.Seq == first && a.OK {
				return s.Map == "crypt" && s.Transfers == 1
			}
		}
		return false
	})
}

// TestSourceKilledAfterTheCommit: the source dies right after it sent the
// transfer; the destination takes the player all the same.
func TestSourceKilledAfterTheCommit(t *testing.T) {
	w := newWorld(t, nil)
	_, tr := transferOf(t, w, "gina")
	w.town.crash()
	gina := w.crypt.dial(protocol.Hello{Ticket: tr.Ticket}, client.Options{})
	if gina.Welcome().Map != "crypt" {
		t.Fatal(gina.Welcome())
	}
	waitTransferState(t, w.db, tr.ID, store.TransferCompleted)
}

// TestAStalledDatabaseAnswersThePortalInSeconds: when the database does not
// answer, portal.enter is refused with persistence_unavailable once the
// commit has waited CriticalTimeout, not the whole TransferTimeout (which
// is for waiting on a destination to start), and the player plays on.
func TestAStalledDatabaseAnswersThePortalInSeconds(t *testing.T) {
	w := newWorld(t, func(c *Config) { c.CriticalTimeout, c.TransferTimeout = 300*time.Millisecond, time.Hour })
	hana := w.town.join(character("hana"))
	tx, err := w.db.DB().Begin()
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = tx.Rollback() }()
	if _, err := tx.Exec(`LOCK TABLE transfers IN ACCESS EXCLUSIVE MODE`); err != nil { // every transfer's commit waits
		t.Fatal(err)
	}
	if ack := enterPortal(t, hana, "crypt"); ack.OK || ack.Code != protocol.CodePersistenceUnavailable {
		t.Fatalf("portal.enter with the database stalled: %+v, want persistence_unavailable", ack)
	}
	if err := tx.Rollback(); err != nil {
		t.Fatal(err)
	}
	if ack := enterPortal(t, hana, "crypt"); !ack.OK {
		t.Fatalf("portal.enter once the database answers: %+v", ack)
	}
}

// TestATransferWhoseCommitWentUnansweredIsTakenBack: the database commits
// a portal's transfer and its answer is lost on the way back. The portal
// fails (persistence_unavailable) and the player plays on where it stood:
// the town takes the transfer back, so the lease keeper's next renewal
// does not sign the player out as active in another map, and the next
// portal works.
func TestATransferWhoseCommitWentUnansweredIsTakenBack(t *testing.T) {
	db, dsn := newDB(t)
	townDB, cutter := storeCutting(t, dsn)
	w := newWorldOn(t, nil, db, townDB)
	ivo := w.town.join(character("ivo"))

	cutter.CutNextCommitOf("INSERT INTO transfers")
	if ack := enterPortal(t, ivo, "crypt"); ack.OK || ack.Code != protocol.CodePersistenceUnavailable {
		t.Fatalf("portal.enter whose commit went unanswered: %+v, want persistence_unavailable", ack)
	}
	select {
	case <-cutter.Cuts():
	default:
		t.Fatal("the transfer's commit was not cut")
	}
	var state string
	if err := db.DB().QueryRow(`SELECT state FROM transfers WHERE character_id = 'ivo'`).Scan(&state); err != nil || state != string(store.TransferAborted) {
		t.Fatalf("the transfer that committed unanswered is %q (%v), want aborted", state, err)
	}
	w.town.srv.db.leases.renew(waitCtx(t))
	if s := ivo.Snapshot(); s.Closed != nil {
		t.Fatalf("ivo was disconnected: %v", s.Closed)
	}
	if ack := enterPortal(t, ivo, "crypt"); !ack.OK {
		t.Fatalf("the next portal.enter: %+v", ack)
	}
}

// TestATransferTheSweepAbortedFirstIsTakenBackToo: a transfer whose
// commit went unanswered, whose take-back waited past its deadline (the
// database away longer), is aborted by the expiry sweep first, its lease
// freed. The take-back then finds it settled, and the map, which never
// let the player go, claims the lease again: the player plays on, not
// signed out as active in another map at the next renewal (the 50-room
// soak, docs/benchmarks.md, "Fifteenth session").
func TestATransferTheSweepAbortedFirstIsTakenBackToo(t *testing.T) {
	w := newWorld(t, nil)
	ivo := w.town.join(character("ivo"))
	srv, ctx := w.town.srv, waitCtx(t)
	st := srv.seats.of("ivo")
	id := randomID()
	var state store.CharacterState
	if err := srv.loop.Do(ctx, func(world *sim.World) {
		record, _ := world.Record(st.player)
		state = encodeState(srv.cfg.Map, record)
	}); err != nil {
		t.Fatal(err)
	}
	tr := store.Transfer{ID: id, CharacterID: "ivo", FromInstance: srv.cfg.Instance, ToInstance: w.crypt.srv.cfg.Instance,
		ToMap: "crypt", ExpiresAt: time.Now().Add(time.Minute)}
	if err := w.db.BeginTransfer(ctx, tr, state); err != nil { // the commit whose answer was lost
		t.Fatal(err)
	}
	if err := w.db.AbortTransfer(ctx, id, "expired"); err != nil { // the sweep, first
		t.Fatal(err)
	}

	st.transferring.Store(true) // as portal.enter holds it
	srv.settleTransfer(st, id)
	st.transferring.Store(false)
	srv.db.leases.renew(ctx)
	if s := ivo.Snapshot(); s.Closed != nil {
		t.Fatalf("ivo was disconnected: %v", s.Closed)
	}
	if holder, _ := leaseOf(t, w.db, "ivo"); holder != srv.cfg.Instance {
		t.Fatalf("the lease is %q's, want the town's", holder)
	}
	if ack := enterPortal(t, ivo, "crypt"); !ack.OK {
		t.Fatalf("the next portal.enter: %+v", ack)
	}
}

// TestGuestsTravelToo: a guest crosses without a database record.
func TestGuestsTravelToo(t *testing.T) {
	w := newWorld(t, nil)
	g := w.town.join(func(c *token.Claims) { c.Subject, c.Character = "guest-1", "guest-char-1" })
	if ack := enterPortal(t, g, "crypt"); !ack.OK {
		t.Fatal(ack)
	}
	if g.Welcome().Map != "crypt" {
		t.Fatal(g.Welcome())
	}
	if n := w.town.srv.Stats().Players; n != 0 {
		t.Fatalf("the town still has %d players after the guest left", n)
	}
	var n int
	if err := w.db.DB().QueryRow(`SELECT count(*) FROM transfers`).Scan(&n); err != nil || n != 0 {
		t.Fatalf("a guest's transfer reached the database: %d %v", n, err)
	}
}

// TestAGuestsTransferAdmitsOnce: a guest has no transfer row to settle
// who takes it, so its transfer's id is spent where the database keeps
// one-use tokens: whichever of its tickets (forward or return) is used
// first admits it, the other is token_replayed. No guest plays twice.
func TestAGuestsTransferAdmitsOnce(t *testing.T) {
	for _, forwardFirst := range []bool{true, false} {
		t.Run(fmt.Sprint("forward first ", forwardFirst), func(t *testing.T) {
			w := newWorld(t, nil)
			id := guestPrefix + randomID()
			c := w.town.dial(protocol.Hello{Ticket: w.town.ticket(func(c *token.Claims) { c.Subject, c.Character = id, id })},
				client.Options{NoFollow: true})
			portal, _ := playtest.PortalTo(c, "crypt")
			walkTo(t, c, protocol.EntityState{X: portal.X, Y: portal.Y})
			if ack := command(t, c, protocol.FeaturePortal, protocol.ActionEnter, protocol.PortalEnter{Portal: portal.Entity}); !ack.OK {
				t.Fatalf("portal.enter: %+v", ack)
			}
			msg := *waitFor(t, c, "the transfer message", func(s client.State) bool { return s.Transfer != nil }).Transfer
			first, second := w.crypt, w.town
			firstTicket, secondTicket := msg.Ticket, msg.ReturnTicket
			if !forwardFirst {
				first, second, firstTicket, secondTicket = second, first, secondTicket, firstTicket
			}
			if welcome := first.dial(protocol.Hello{Ticket: firstTicket}, client.Options{}).Welcome(); welcome.PlayerID == 0 {
				t.Fatalf("the first ticket admitted nobody: %+v", welcome)
			}
			second.refused(protocol.Hello{Ticket: secondTicket}, protocol.CodeTokenReplayed)
		})
	}
}

// TestTransfersUnderFastLeaseRenewal: players going back and forth while
// leases are renewed every 100 ms. A lease a seat loses to its own
// transfer must never evict it (a race the throughput benchmark found).
func TestTransfersUnderFastLeaseRenewal(t *testing.T) {
	w := newWorld(t, func(c *Config) { c.LeaseTTL = 90 * time.Millisecond })
	const players, hops = 16, 12
	errs := make(chan error, players)
	for i := range players {
		c := w.town.join(character(fmt.Sprint("hopper-", i)))
		go func() {
			for range hops {
				to := "crypt"
				if c.Snapshot().Map == "crypt" {
					to = "town"
				}
				if ack, err := playtest.EnterPortal(waitCtx(t), c, to); err != nil || !ack.OK {
					errs <- fmt.Errorf("hopper %d to %s: %+v %w (errors %+v)", i, to, ack, err, c.Snapshot().Errors)
					return
				}
			}
			errs <- nil
		}()
	}
	for range players {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
}

// TestAPlayerSentBackLaterIsToldToRetry: a player whose transfer could be
// neither completed nor undone is removed with persistence_unavailable and
// a close that asks to come back later (1013), which a reconnecting client
// follows, not the refusal's 1008 that ends it.
func TestAPlayerSentBackLaterIsToldToRetry(t *testing.T) {
	h := newHarness(t, nil)
	waitReady(t, h)
	c := h.join(character("olga"))
	st := h.srv.seats.of("olga")
	if st == nil {
		t.Fatal("olga is not seated")
	}
	h.srv.sendBackLater(st, "the transfer could not complete: join again shortly")
	s, err := c.WaitFor(waitCtx(t), func(s client.State) bool { return s.Closed != nil })
	var ce *websocket.CloseError
	if err != nil || !errors.As(s.Closed, &ce) || ce.Code != websocket.CloseTryAgainLater {
		t.Fatalf("closed with %v, want 1013", s.Closed)
	}
	if n := len(s.Errors); n == 0 || s.Errors[n-1].Code != protocol.CodePersistenceUnavailable {
		t.Errorf("errors before the close %+v, want persistence_unavailable", s.Errors)
	}
	if h.srv.seats.of("olga") != nil {
		t.Error("the player is still seated")
	}
}

// TestEachTransferTransition runs the transitions of transfer.go, one
// function each, from the town to the crypt on a real Postgres: after each
// chain, the transfer row's state and who holds the character's lease are
// what docs/architecture.md ("Transfers") says, and a transition from a
// state it does not start from changes nothing.
func TestEachTransferTransition(t *testing.T) {
	type step string
	const (
		request  step = "request"
		issue    step = "issue tokens"
		accept   step = "accept"
		complete step = "complete"
		abort    step = "abort"
		undo     step = "undo"
	)
	for _, tc := range []struct {
		steps     []step
		state     store.TransferState
		holder    string // the lease's map instance; "" when nobody holds it
		inFlight  bool   // the lease is in transfer
		refusedAt int    // the index of the step that must fail, or -1
	}{
		{steps: []step{request}, state: store.TransferRequested, holder: "demo-crypt", inFlight: true, refusedAt: -1},
		{steps: []step{request, issue}, state: store.TransferTokenIssued, holder: "demo-crypt", inFlight: true, refusedAt: -1},
		{steps: []step{request, issue, accept}, state: store.TransferDestinationAccepted, holder: "demo-crypt", refusedAt: -1},
		{steps: []step{request, issue, accept, complete}, state: store.TransferCompleted, holder: "demo-crypt", refusedAt: -1},
		{steps: []step{request, issue, abort}, state: store.TransferAborted, holder: "", refusedAt: -1},
		{steps: []step{request, undo}, state: store.TransferAborted, holder: "demo-town", refusedAt: -1},
		{steps: []step{request, issue, undo}, state: store.TransferAborted, holder: "demo-town", refusedAt: -1},
		{steps: []step{request, accept}, state: store.TransferRequested, holder: "demo-crypt", inFlight: true, refusedAt: 1},
		{steps: []step{request, issue, accept, abort}, state: store.TransferDestinationAccepted, holder: "demo-crypt", refusedAt: 3},
		{steps: []step{request, issue, abort, accept}, state: store.TransferAborted, holder: "", refusedAt: 3},
	} {
		t.Run(fmt.Sprint(tc.steps), func(t *testing.T) {
			w := newWorld(t, nil)
			ctx := waitCtx(t)
			w.town.join(character("alice"))
			st := w.town.srv.seats.of("alice")
			id, dest := newTransferID(), w.dir["crypt"]
			arriving := &seat{character: "alice", user: st.user, transfer: id}
			for i, s := range tc.steps {
				var err error
				switch s {
				case request:
					err = w.town.srv.requestTransfer(ctx, st, dest, id)
				case issue:
					_, err = w.town.srv.issueTokens(ctx, st, dest, id)
				case accept:
					err = w.crypt.srv.acceptTransfer(arriving).Err
				case complete:
					w.crypt.srv.completeTransfer(arriving, time.Now())
					waitTransferState(t, w.db, id, store.TransferCompleted)
				case abort:
					err = w.town.srv.abortTransfer(ctx, store.Transfer{ID: id, CharacterID: "alice"})
				case undo:
					cause := errors.New("the client could not be told")
					if got := w.town.srv.undoTransfer(st, id, cause); !errors.Is(got, cause) {
						t.Fatalf("undo returned %v, want its cause", got)
					}
				}
				if refused := err != nil; refused != (i == tc.refusedAt) {
					t.Fatalf("step %d (%s): err %v, want refused=%v", i, s, err, i == tc.refusedAt)
				}
			}
			tr, err := w.db.GetTransfer(ctx, id)
			if err != nil || tr.State != tc.state {
				t.Fatalf("the transfer is %s (%v), want %s", tr.State, err, tc.state)
			}
			holder, inTransfer := leaseOf(t, w.db, "alice")
			if holder != tc.holder || inTransfer != tc.inFlight {
				t.Fatalf("the lease is held by %q (in transfer: %v), want %q (%v)", holder, inTransfer, tc.holder, tc.inFlight)
			}
		})
	}
}

// leaseOf says which map instance holds the character's lease ("" for
// none) and whether it is in transfer.
func leaseOf(t *testing.T, db *store.Postgres, character string) (instance string, inTransfer bool) {
	t.Helper()
	err := db.DB().QueryRow(`SELECT map_instance, in_transfer FROM character_authority WHERE character_id = $1`, character).
		Scan(&instance, &inTransfer)
	if err != nil && !errors.Is(err, sql.ErrNoRows) {
		t.Fatal(err)
	}
	return instance, inTransfer
}

// askedDirectory is a directory that remembers what it was asked.
type askedDirectory struct {
	StaticDirectory
	asked chan DestinationRequest
}

func (d askedDirectory) Resolve(ctx context.Context, req DestinationRequest) (Destination, error) {
	d.asked <- req
	return d.StaticDirectory.Resolve(ctx, req)
}

// TestThePortalNamesThePlayersAddress: the destination request carries
// the network address the player connected from (clientaddr.Key), which
// the join API budgets guests' instances by.
func TestThePortalNamesThePlayersAddress(t *testing.T) {
	dir := askedDirectory{StaticDirectory: StaticDirectory{"crypt": {Map: "crypt", Instance: "demo-crypt", Endpoint: "ws://127.0.0.1:1/ws"}},
		asked: make(chan DestinationRequest, 1)}
	h := newHarnessOn(t, func(c *Config) { c.Map, c.Instance, c.MapConfig = "town", "demo-town", []byte(townWithPortal) }, nil, nil, dir)
	c := h.join()
	enterPortal(t, c, "crypt")
	select {
	case req := <-dir.asked:
		if req.Address != "127.0.0.1/32" {
			t.Fatalf("asked %+v, want the player's address 127.0.0.1/32", req)
		}
	case <-waitCtx(t).Done():
		t.Fatal("the directory was never asked")
	}
}

// TestAMapThatSendsNobodyStopsSweeping: the lease keeper looks for
// expired transfers out of its map only until a sweep began after the
// last one's expiry (and the start's, for a predecessor's), so a map
// that sends nobody anywhere asks its database nothing; a transfer arms
// it again.
func TestAMapThatSendsNobodyStopsSweeping(t *testing.T) {
	w := newWorld(t, func(c *Config) { c.TokenTTL, c.LeaseTTL = time.Second, 300*time.Millisecond })
	k := w.town.srv.db.leases
	done := func() error {
		if swept, until := k.swept.Load(), k.sweepUntil.Load(); swept <= until {
			return fmt.Errorf("last complete sweep began at %d, a transfer expires at %d", swept, until)
		}
		return nil
	}
	poll(t, done)
	transferOf(t, w, "ivy")
	if done() == nil {
		t.Fatal("a transfer out did not arm the sweep")
	}
	poll(t, done)
}
