package store

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"net"
	"slices"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/lib/pq"
)

// everyCall exercises each Store method once, for the outage tests.
func everyCall(ctx context.Context, s Store, round int) map[string]error {
	id := fmt.Sprint("c", round)
	e, m := pickup(fmt.Sprint("e", round), id, "town-1", fmt.Sprint("item", round))
	errs := map[string]error{}
	errs["Ping"] = s.Ping(ctx)
	errs["EnsureCharacter"] = s.EnsureCharacter(ctx, id, "u")
	errs["ConsumeToken"] = s.ConsumeToken(ctx, fmt.Sprint("jti", round), time.Now().Add(time.Minute))
	_, errs["PruneTokens"] = s.PruneTokens(ctx, time.Now())
	var lease Lease
	lease, errs["ClaimLease"] = s.ClaimLease(ctx, id, "town-1", "pod", time.Minute, time.Now())
	errs["RenewLeases"] = s.RenewLeases(ctx, "town-1", []Lease{lease}, time.Minute, time.Now())
	st := state(id, 1)
	st.Epoch, e.Epoch = lease.Epoch, lease.Epoch
	_, errs["SaveStates"] = s.SaveStates(ctx, "town-1", []CharacterState{st})
	_, errs["LoadState"] = s.LoadState(ctx, id)
	errs["CommitCritical"] = s.CommitCritical(ctx, e, m)
	_, errs["ItemsOf"] = s.ItemsOf(ctx, id)
	_, errs["ItemsOn"] = s.ItemsOn(ctx, "town-1")
	_, errs["EventsOf"] = s.EventsOf(ctx, id)
	errs["ReleaseLease"] = s.ReleaseLease(ctx, lease)
	return errs
}

// TestStoreSurvivesAnOutage takes the database away (crash, then clean
// shutdown): every call must fail with ErrUnavailable, and once the
// database is back the same store works again without being reopened.
func TestStoreSurvivesAnOutage(t *testing.T) {
	t.Parallel()
	own, s := ownStore(t, "outage")
	checkAll(t, "before the outage", everyCall(testCtx(t), s, 0), nil)

	outages := []struct {
		name string
		stop func() error
	}{{"kill", own.Kill}, {"fast shutdown", own.Halt}}
	for round, outage := range outages {
		if err := outage.stop(); err != nil {
			t.Fatal(err)
		}
		checkAll(t, outage.name, everyCall(testCtx(t), s, round+1), ErrUnavailable)
		if err := own.Restart(); err != nil {
			t.Fatal(err)
		}
		checkAll(t, "after "+outage.name+" and restart", everyCall(testCtx(t), s, round+1), nil)
	}
}

// checkAll wants every error to be want (errors.Is), or nil when want is nil.
func checkAll(t *testing.T, when string, errs map[string]error, want error) {
	t.Helper()
	for call, err := range errs {
		if want == nil && err != nil || want != nil && !errors.Is(err, want) {
			t.Errorf("%s: %s: error = %v, want %v", when, call, err, want)
		}
	}
}

func TestOpenUnreachableIsUnavailable(t *testing.T) {
	t.Parallel()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	_ = l.Close() // nothing listens there now
	_, err = Open(testCtx(t), "postgres://postgres@"+addr+"/postgres?sslmode=disable")
	if !errors.Is(err, ErrUnavailable) {
		t.Fatalf("error = %v, want ErrUnavailable", err)
	}
}

// TestOpenLazyWaitsForTheDatabase: OpenLazy dials nothing, so a process
// starts while its database is away; its pool holds at most the
// connections asked for, and Migrate works once the database answers.
func TestOpenLazyWaitsForTheDatabase(t *testing.T) {
	t.Parallel()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	_ = l.Close()
	away, err := OpenLazy("postgres://postgres@"+addr+"/postgres?sslmode=disable", 3)
	if err != nil {
		t.Fatalf("OpenLazy with the database away: %v, want a store", err)
	}
	defer func() { _ = away.Close() }()
	if err := away.Migrate(testCtx(t)); !errors.Is(err, ErrUnavailable) {
		t.Fatalf("Migrate with the database away: %v, want ErrUnavailable", err)
	}
	if n := away.DB().Stats().MaxOpenConnections; n != 3 {
		t.Fatalf("pool of %d connections, want the 3 asked for", n)
	}
	if _, err := OpenLazy("postgres://x", 0); err == nil {
		t.Fatal("a pool of no connections accepted")
	}
}

func TestIsUnavailable(t *testing.T) {
	t.Parallel()
	unavailable := []error{
		fmt.Errorf("x: %w", driver.ErrBadConn),
		&net.OpError{Op: "dial", Net: "tcp", Err: syscall.ECONNREFUSED},
		fmt.Errorf("read: %w", syscall.ECONNRESET),
		context.DeadlineExceeded,
		&pq.Error{Code: "57P01", Message: "terminating connection due to administrator command"},
		&pq.Error{Code: "57P03", Message: "the database system is starting up"},
		&pq.Error{Code: "08006"},
		&pq.Error{Code: "53300"},
		&pq.Error{Code: "57014", Message: "canceling statement due to user request"},
		context.Canceled,
	}
	for _, err := range unavailable {
		if !isUnavailable(err) {
			t.Errorf("isUnavailable(%v) = false", err)
		}
		if w := wrap("op", err); !errors.Is(w, ErrUnavailable) || !errors.Is(w, err) {
			t.Errorf("wrap(%v) = %v: want ErrUnavailable and the cause", err, w)
		}
	}
	available := []error{
		&pq.Error{Code: "23505"},
		&pq.Error{Code: "42601"},
		&pq.Error{Code: "40001"},
		ErrNotOwner,
		errors.New("something else"),
	}
	for _, err := range available {
		if isUnavailable(err) || errors.Is(wrap("op", err), ErrUnavailable) {
			t.Errorf("isUnavailable(%v) = true", err)
		}
	}
}

// TestCallsInFlightDuringACrashAreUnavailable kills the database under
// load, so the errors come from connections that die mid-statement (EOF,
// reset, bad connection) rather than from refused dials.
func TestCallsInFlightDuringACrashAreUnavailable(t *testing.T) {
	t.Parallel()
	own, s := ownStore(t, "inflight")
	const workers = 4
	batch := make([]CharacterState, 500)
	for i := range batch {
		id := fmt.Sprint("c", i)
		mustEnsure(t, s, id)
		batch[i] = state(id, 1)
	}
	batch = leased(t, s, "town-1", batch...)

	ctx, stop := context.WithCancel(testCtx(t))
	errs := make(chan error, 1024)
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() { hammer(ctx, s, w, batch, errs) })
	}
	// Kill once every worker has had a call succeed, i.e. mid-stream.
	for range workers {
		if err := <-errs; err != nil {
			t.Fatalf("before the crash: %v", err)
		}
	}
	if err := own.Kill(); err != nil {
		t.Fatal(err)
	}
	failures := 0
	for failures < 4*workers {
		if err := <-errs; err != nil {
			failures++
			if !errors.Is(err, ErrUnavailable) {
				t.Errorf("during the crash: error = %v, want ErrUnavailable", err)
			}
		}
	}
	stop()
	wg.Wait()
}

// hammer commits and checkpoints until ctx ends, sending each result
// (nil for a success, but only the first) to errs.
func hammer(ctx context.Context, s *Postgres, worker int, shared []CharacterState, errs chan<- error) {
	batch := slices.Clone(shared)
	epochs := map[string]int64{}
	for _, st := range shared {
		epochs[st.CharacterID] = st.Epoch
	}
	sentOK := false
	for i := 0; ctx.Err() == nil; i++ {
		var err error
		if i%2 == 0 {
			e, m := pickupN(worker, i)
			e.Epoch = epochs[e.CharacterID]
			err = s.CommitCritical(ctx, e, m)
		} else {
			for j := range batch {
				batch[j].Revision = int64(i)
			}
			_, err = s.SaveStates(ctx, "town-1", batch)
		}
		if ctx.Err() != nil || err == nil && sentOK {
			continue
		}
		sentOK = sentOK || err == nil
		select {
		case errs <- err:
		case <-ctx.Done():
		}
	}
}

func pickupN(worker, i int) (CriticalEvent, Move) {
	return pickup(fmt.Sprint("w", worker, "-", i), fmt.Sprint("c", worker), "town-1", fmt.Sprint("item-", worker, "-", i))
}

// TestActionsDoNotWaitOnAPrepare: while one action prepares the hot
// statements on a database that does not answer, another runs its
// statements unprepared at once; a prepare that failed is not tried again
// within prepareRetry.
func TestActionsDoNotWaitOnAPrepare(t *testing.T) {
	t.Parallel()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	accepted := make(chan net.Conn, 16)
	go func() { // a database that takes connections and never answers
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			accepted <- c
		}
	}()
	s, err := OpenLazy("postgres://postgres@"+l.Addr().String()+"/postgres?sslmode=disable&connect_timeout=30", 3)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(testCtx(t))
	first := make(chan error, 1)
	go func() { first <- s.prepare(ctx) }()
	conn := <-accepted // the first prepare holds the lock, dialing
	if err := s.prepare(testCtx(t)); err != nil {
		t.Fatalf("a second prepare while the first waits: %v, want nil (run unprepared)", err)
	}
	select {
	case err := <-first:
		t.Fatalf("the first prepare ended (%v) before the database answered", err)
	default:
	}
	cancel()
	if err := <-first; err == nil {
		t.Fatal("a prepare against a database that never answered succeeded")
	}
	_ = conn.Close()
	// Tried again, it would wait on the database that never answers; it
	// returns, having dialed nothing.
	if err := s.prepare(testCtx(t)); err != nil {
		t.Fatalf("a prepare right after one failed: %v, want nil (not tried again yet)", err)
	}
	select {
	case c := <-accepted:
		t.Fatalf("a prepare right after one failed dialed the database (%v)", c.RemoteAddr())
	default:
	}
	_ = l.Close()
	_ = s.Close()
}

// TestATransactionWhoseContextEndedIsUnavailable: database/sql rolls a
// transaction back as its context ends, and what runs in it after fails
// with sql.ErrTxDone; the store names that ErrUnavailable (nothing was
// done: try again), not an internal error. lib/pq may win the race: it
// watches the transaction's context too and marks the connection bad as
// it ends, so the statement fails with driver.ErrBadConn instead; that is
// unavailable just the same.
func TestATransactionWhoseContextEndedIsUnavailable(t *testing.T) {
	t.Parallel()
	s := newStore(t)
	ctx, cancel := context.WithCancel(testCtx(t))
	err := s.inTx(ctx, func(tx runner) error {
		cancel()
		for range 100_000 { // until database/sql has rolled it back
			if _, err := tx.ExecContext(context.Background(), "SELECT 1"); err != nil {
				return err
			}
		}
		return errors.New("the transaction outlived its context")
	})
	if !errors.Is(err, sql.ErrTxDone) && !errors.Is(err, driver.ErrBadConn) {
		t.Fatalf("error = %v, want sql.ErrTxDone or driver.ErrBadConn", err)
	}
	if !errors.Is(wrap("test", err), ErrUnavailable) {
		t.Fatalf("error = %v, not named ErrUnavailable", err)
	}
}
