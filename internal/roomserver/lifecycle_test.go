package roomserver

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/gorilla/websocket"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/roomkeeper/roomkeeper/internal/playtest"
	"github.com/roomkeeper/roomkeeper/internal/protocol"
	"github.com/roomkeeper/roomkeeper/internal/sim"
	"github.com/roomkeeper/roomkeeper/pkg/client"
)

// The room server's lifecycle: shutdown under work in flight, the seat's
// lease under concurrent writers, replies to a resumed client, a writer
// that cannot encode, and one client's flood of world actions.

// gatedDirectory leads every portal to dest, but only once release is
// closed: until then a transfer waits in Resolve (asked says one does).
type gatedDirectory struct {
	dest    Destination
	asked   chan struct{}
	release chan struct{}
}

func newGatedDirectory(dest Destination) *gatedDirectory {
	return &gatedDirectory{dest: dest, asked: make(chan struct{}, 1), release: make(chan struct{})}
}

func (d *gatedDirectory) Resolve(ctx context.Context, _ DestinationRequest) (Destination, error) {
	select {
	case d.asked <- struct{}{}:
	default:
	}
	select {
	case <-d.release:
		return d.dest, nil
	case <-ctx.Done():
		return Destination{}, ctx.Err()
	}
}

// awaitAsked waits until a transfer waits in the directory.
func (d *gatedDirectory) awaitAsked(t testing.TB) {
	t.Helper()
	select {
	case <-d.asked:
	case <-waitCtx(t).Done():
		t.Fatal("no transfer asked the directory")
	}
}

// startTransfer walks c to its map's portal to map to and enters it,
// without waiting for the answer; it returns the command's seq.
func startTransfer(t testing.TB, c *client.Client, to string) uint32 {
	t.Helper()
	portal, ok := playtest.PortalTo(c, to)
	if !ok {
		t.Fatalf("no portal to %s", to)
	}
	ctx := waitCtx(t)
	if err := playtest.Travel(ctx, c, playtest.Point{X: portal.X, Y: portal.Y}); err != nil {
		t.Fatal(err)
	}
	if err := playtest.WalkTo(ctx, c, protocol.EntityState{X: portal.X, Y: portal.Y}); err != nil {
		t.Fatal(err)
	}
	seq, err := c.Command(protocol.FeaturePortal, protocol.ActionEnter, protocol.PortalEnter{Portal: portal.Entity})
	if err != nil {
		t.Fatal(err)
	}
	return seq
}

// await waits for ch to close, failing with what when the test's deadline
// comes first.
func await(t testing.TB, ch <-chan struct{}, what string) {
	t.Helper()
	select {
	case <-ch:
	case <-waitCtx(t).Done():
		t.Fatalf("%s did not happen", what)
	}
}

// TestShutdownCutsWorkInFlightShortAndSaves: a transfer waiting for its
// destination (far longer than the shutdown may take) does not hold
// Shutdown past its deadline: the transfer is cancelled, the player stays,
// every player's final checkpoint is written and its lease released, and
// the simulation stops, so the process can exit.
func TestShutdownCutsWorkInFlightShortAndSaves(t *testing.T) {
	db, _ := newDB(t)
	dir := newGatedDirectory(Destination{Map: "crypt", Instance: "demo-crypt", Endpoint: "ws://127.0.0.1:1/ws"})
	h := newHarnessOn(t, func(c *Config) {
		c.MapConfig = []byte(townWithPortal)
		c.CheckpointInterval = time.Hour // only the final checkpoint writes
		c.TransferTimeout = 10 * time.Minute
	}, db, nil, dir)
	waitReady(t, h)
	stayer := h.join(character("jane"))
	stood := walk(t, stayer, 1, 0, 6).Self
	traveller := h.join(character("karl"))
	startTransfer(t, traveller, "crypt")
	atPortal := traveller.Snapshot().Self
	dir.awaitAsked(t)

	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	returned := make(chan struct{})
	var err error
	go func() { err = h.srv.Shutdown(ctx); close(returned) }()
	await(t, returned, "Shutdown returning")
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("Shutdown = %v, want it to say the transfer was cut short", err)
	}
	await(t, h.done, "the simulation stopping")
	for name, at := range map[string]protocol.EntityState{"jane": stood, "karl": atPortal} {
		waitSaved(t, db, name, at)
		if _, err := db.ClaimLease(context.Background(), name, "demo-town", "next-pod", time.Minute, time.Now()); err != nil {
			t.Errorf("%s's lease was not released at shutdown: %v", name, err)
		}
	}
}

// TestUndoingATransferWhileLeasesRenew: a transfer that is undone writes
// the seat's lease on its own goroutine while the lease keeper renews it;
// under -race the two must not race, and the player keeps playing on the
// newest lease.
func TestUndoingATransferWhileLeasesRenew(t *testing.T) {
	w := newWorld(t, nil)
	c := w.town.join(character("lena"))
	srv := w.town.srv
	st := srv.seats.of("lena")
	first := st.lease()
	st.transferring.Store(true) // as during a real transfer: a lease lost to it is not an eviction
	ctx := waitCtx(t)
	stop := make(chan struct{})
	var keeper sync.WaitGroup
	keeper.Go(func() { // the lease keeper, renewing as fast as it can
		for {
			select {
			case <-stop:
				return
			default:
				srv.db.leases.renew(ctx)
			}
		}
	})
	for range 10 {
		id := newTransferID()
		if err := srv.requestTransfer(ctx, st, w.dir["crypt"], id); err != nil {
			t.Fatal(err)
		}
		_ = srv.undoTransfer(st, id, errors.New("signing failed"))
	}
	close(stop)
	keeper.Wait()
	st.transferring.Store(false)
	srv.db.leases.renew(ctx)
	if got := st.lease(); got.Epoch <= first.Epoch || got.CharacterID != "lena" {
		t.Fatalf("lease after the undone transfers: %+v, first %+v", got, first)
	}
	if s := c.Snapshot(); s.Closed != nil {
		t.Fatalf("lena was disconnected: %v", s.Closed)
	}
	if _, err := w.db.ClaimLease(ctx, "lena", "demo-crypt", "other", time.Minute, time.Now()); err == nil {
		t.Fatal("the town no longer holds lena's lease")
	}
}

// TestATransferNeitherCompletedNorUndoneSendsThePlayerBack: a transfer
// whose tokens could not be recorded and whose undo failed too (the sweep
// had aborted it and freed the lease meanwhile, as on the 50-room soak's
// full core) sends the player away to come back later (1013), even when
// the lease keeper finds the lease gone before the player is sent: not
// as signed in elsewhere (1008), which a client takes as final.
func TestATransferNeitherCompletedNorUndoneSendsThePlayerBack(t *testing.T) {
	w := newWorld(t, nil)
	c := w.town.join(character("nora"))
	srv := w.town.srv
	st := srv.seats.of("nora")
	st.transferring.Store(true)
	ctx := waitCtx(t)
	id := newTransferID()
	if err := srv.requestTransfer(ctx, st, w.dir["crypt"], id); err != nil {
		t.Fatal(err)
	}
	if err := w.db.AbortTransfer(ctx, id, "the transfer tokens expired unused"); err != nil { // the sweep
		t.Fatal(err)
	}
	_ = srv.undoTransfer(st, id, errors.New("issuing the tokens failed"))
	st.transferring.Store(false) // as portalTransfer does once the transfer failed
	srv.db.leases.renew(ctx)
	s, err := c.WaitFor(ctx, func(s client.State) bool { return s.Closed != nil })
	var ce *websocket.CloseError
	if err != nil || !errors.As(s.Closed, &ce) || ce.Code != websocket.CloseTryAgainLater {
		t.Fatalf("closed with %v, want 1013", s.Closed)
	}
}

// TestAResumedClientGetsItsTransfer: a client that drops while its
// transfer is being decided and resumes its seat gets the answer: on its
// new connection when it resumed before the transfer was decided, as the
// answer to its resume when it resumed after (the seat is gone then); and
// it reaches the destination.
func TestAResumedClientGetsItsTransfer(t *testing.T) {
	for _, tc := range []struct {
		name         string
		decidedFirst bool
	}{{"resumed while the transfer is decided", false}, {"resumed after it was decided", true}} {
		t.Run(tc.name, func(t *testing.T) {
			db, _ := newDB(t)
			keys := newKeys(t)
			crypt := newHarnessOn(t, func(c *Config) {
				c.Map, c.Instance, c.MapConfig = "crypt", "demo-crypt", []byte(cryptWithPortal)
			}, db, keys, nil)
			dir := newGatedDirectory(Destination{Map: "crypt", Instance: "demo-crypt", Endpoint: crypt.url})
			town := newHarnessOn(t, func(c *Config) { c.MapConfig = []byte(townWithPortal) }, db, keys, dir)
			waitReady(t, town)
			waitReady(t, crypt)
			c := town.join(character("mira"))
			seq := startTransfer(t, c, "crypt")
			dir.awaitAsked(t)
			resume := c.Snapshot().ResumeToken
			if err := c.Drop(); err != nil {
				t.Fatal(err)
			}
			poll(t, func() error { // the server saw the drop: the seat waits for a resume
				if town.srv.seats.sessionOf(town.srv.seats.of("mira")) != nil {
					return errors.New("mira's seat is still attached to the dropped connection")
				}
				return nil
			})
			hello := protocol.Hello{Resume: resume, LastSeq: seq}
			if tc.decidedFirst {
				close(dir.release)
				poll(t, func() error {
					if town.srv.seats.of("mira") != nil {
						return errors.New("mira has not left the town")
					}
					return nil
				})
				back := resumeIntoTransfer(t, town, crypt, hello)
				waitFor(t, back, "mira in the crypt", func(s client.State) bool { return s.Snapshots > 0 })
				return
			}
			back := town.dial(hello, client.Options{})
			close(dir.release)
			s := waitFor(t, back, "the transfer on the resumed connection", func(s client.State) bool {
				return s.Transfers == 1 && s.Snapshots > 0
			})
			if back.Endpoint() != crypt.url || s.Instance != "demo-crypt" {
				t.Fatalf("mira plays on %s (%s), want the crypt", back.Endpoint(), s.Instance)
			}
		})
	}
}

// resumeIntoTransfer resumes with hello at from, expects the transfer of a
// seat that left meanwhile, and follows it to to.
func resumeIntoTransfer(t *testing.T, from, to *harness, hello protocol.Hello) *client.Client {
	t.Helper()
	_, err := client.Dial(waitCtx(t), from.url, hello, client.Options{})
	var left *client.Transferred
	if !errors.As(err, &left) || left.Transfer.Endpoint != to.url {
		t.Fatalf("resume after the transfer: %v, want the transfer to %s", err, to.url)
	}
	if _, err := client.Dial(waitCtx(t), from.url, hello, client.Options{}); err == nil || errors.As(err, &left) {
		t.Fatalf("a second resume with the same token: %v, want a refusal", err)
	}
	return to.dial(protocol.Hello{Ticket: left.Transfer.Ticket}, client.Options{})
}

// TestAWriterThatCannotEncodeClosesTheConnection: a snapshot the codec
// refuses ends the connection with 1011 internal, logged and counted,
// instead of leaving the client connected without snapshots.
func TestAWriterThatCannotEncodeClosesTheConnection(t *testing.T) {
	h := newHarness(t, func(c *Config) {
		c.marshal = func(kind protocol.Kind, seq uint32, payload any) ([]byte, error) {
			if kind == protocol.KindSnapshot {
				return nil, errors.New("injected encoding failure")
			}
			return protocol.MarshalMessage(kind, seq, payload)
		}
	})
	c := h.join()
	s := waitFor(t, c, "the connection closed", func(s client.State) bool { return s.Closed != nil })
	var ce *websocket.CloseError
	if !errors.As(s.Closed, &ce) || ce.Code != websocket.CloseInternalServerErr || ce.Text != string(protocol.CodeInternal) {
		t.Fatalf("closed with %v, want 1011 internal", s.Closed)
	}
	poll(t, func() error {
		if n := testutil.ToFloat64(h.srv.metrics.disconnects.WithLabelValues("encode_failed")); n != 1 {
			return fmt.Errorf("disconnects{reason=encode_failed} = %v, want 1", n)
		}
		return nil
	})
}

// TestAFloodOfAttacksLeavesTheWorldToOthers: one client sending attacks
// far faster than the world answers holds one job in the map's shared
// control queue and a few behind it; the rest are refused rate_limited at
// once, another client's join gets through, and the flooder's acks come
// in command order. The few are the first MaxWorldActions, and perhaps
// one more that found a place when the first left the seat's queue to
// run: when that happens during the flood is the scheduler's to decide.
func TestAFloodOfAttacksLeavesTheWorldToOthers(t *testing.T) {
	h := newHarness(t, func(c *Config) {
		c.MessagesPerSecond, c.MessageBurst = 1e6, 1e6
		c.WorldActionTimeout = time.Hour // the queued attacks wait for the world, however long the test pauses it
		c.SendQueue = 1024               // the flood's refusals must not make the flooder a slow client on a busy machine
	})
	flooder := h.join()
	paused, release := make(chan struct{}), make(chan struct{})
	resume := sync.OnceFunc(func() { close(release) })
	t.Cleanup(resume) // a failure below must not leave the map paused for good
	go func() {
		_ = h.srv.loop.Do(context.Background(), func(*sim.World) { close(paused); <-release })
	}()
	await(t, paused, "the world pausing")
	const attacks = 200 // fewer than the client keeps acks of, so every one is seen
	var first, last uint32
	for i := range attacks {
		seq, err := flooder.Command(protocol.FeatureCombat, protocol.ActionAttack, protocol.CombatAttack{Target: 1})
		if err != nil {
			t.Fatal(err)
		}
		if i == 0 {
			first = seq
		}
		last = seq
	}
	waitFor(t, flooder, "the flood's excess refused rate_limited at once", func(s client.State) bool {
		return acksBetween(s, first, last) >= attacks-(h.cfg.MaxWorldActions+1)
	})
	if q := h.srv.loop.Stats().QueuedJobs; q > 1 {
		t.Fatalf("%d jobs wait for the world after one client's flood, want at most 1", q)
	}
	joined := make(chan *client.Client, 1)
	go func() {
		c, err := client.Dial(context.Background(), h.url, protocol.Hello{Ticket: h.ticket()}, client.Options{})
		if err != nil {
			t.Error(err)
		}
		joined <- c
	}()
	poll(t, func() error { // the join waits in the queue beside the flood's one job
		if q := h.srv.loop.Stats().QueuedJobs; q < 2 {
			return errors.New("the join is not queued")
		}
		return nil
	})
	resume()
	if c := <-joined; c != nil {
		_ = c.Close()
	}
	s := waitFor(t, flooder, "every attack answered", func(s client.State) bool {
		return acksBetween(s, first, last) == attacks
	})
	seqs := answered(s)
	if n := len(seqs); n < h.cfg.MaxWorldActions || n > h.cfg.MaxWorldActions+1 {
		t.Fatalf("%d of the flood's attacks answered other than rate_limited (%v), want %d waiting and perhaps the one running",
			n, seqs, h.cfg.MaxWorldActions)
	}
	if !slices.IsSorted(seqs) || seqs[0] != first || seqs[h.cfg.MaxWorldActions-1] != first+uint32(h.cfg.MaxWorldActions)-1 {
		t.Fatalf("the attacks answered are %v, want the first %d and perhaps one that found a place later, in command order",
			seqs, h.cfg.MaxWorldActions)
	}
}

// acksBetween counts the acks of commands first to last.
func acksBetween(s client.State, first, last uint32) int {
	n := 0
	for _, a := range s.Acks {
		if a.Seq >= first && a.Seq <= last {
			n++
		}
	}
	return n
}

// answered lists the seqs of the acks other than rate_limited, in the
// order they came.
func answered(s client.State) []uint32 {
	var seqs []uint32
	for _, a := range s.Acks {
		if a.Code != protocol.CodeRateLimited {
			seqs = append(seqs, a.Seq)
		}
	}
	return seqs
}
