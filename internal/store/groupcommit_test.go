package store

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/roomkeeper/roomkeeper/internal/testenv"
)

// committed reports whether the event is stored and the item is with the
// owner the event's move gave it: the action happened, whole.
func committed(t *testing.T, s *Postgres, ev CriticalEvent, owner string) bool {
	t.Helper()
	var events int
	if err := s.DB().QueryRowContext(testCtx(t), `SELECT count(*) FROM critical_events WHERE event_id = $1`, ev.EventID).Scan(&events); err != nil {
		t.Fatal(err)
	}
	var held string
	err := s.DB().QueryRowContext(testCtx(t), `SELECT owner_id FROM item_ownership WHERE item_id = $1`, ev.ItemID).Scan(&held)
	if events > 1 {
		t.Fatalf("event %s recorded %d times", ev.EventID, events)
	}
	return events == 1 && err == nil && held == owner
}

// TestGroupedActionsCommitExactlyOnceEach: many players' actions at once,
// each sent twice (a client retrying while the first is in flight), go
// through the groups; every call succeeds, and every action is recorded
// once with its move.
func TestGroupedActionsCommitExactlyOnceEach(t *testing.T) {
	t.Parallel()
	s := newStore(t)
	var largest atomic.Int64
	groups := NewCriticalGroups(s, GroupOptions{Observe: func(n int) {
		for cur := largest.Load(); int64(n) > cur && !largest.CompareAndSwap(cur, int64(n)); cur = largest.Load() {
		}
	}})
	defer groups.Close()
	const players, each = 12, 10
	actions := make([]CriticalEvent, 0, players*each)
	moves := map[string]Move{}
	for p := range players {
		chr := fmt.Sprint("g", p)
		epoch := withLease(t, s, CriticalEvent{CharacterID: chr, MapInstance: "town-1"}).Epoch
		for i := range each {
			ev, m := pickup(fmt.Sprint(chr, "-", i), chr, "town-1", fmt.Sprint(chr, "-item-", i))
			ev.Epoch = epoch
			actions, moves[ev.EventID] = append(actions, ev), m
		}
	}
	var wg sync.WaitGroup
	errs := make(chan error, 2*len(actions))
	for _, ev := range actions {
		for range 2 {
			wg.Go(func() { errs <- groups.CommitCritical(testCtx(t), ev, moves[ev.EventID]) })
		}
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatalf("a grouped action failed: %v", err)
		}
	}
	for _, ev := range actions {
		if !committed(t, s, ev, ev.CharacterID) {
			t.Fatalf("action %s is not recorded with its move", ev.EventID)
		}
	}
	if largest.Load() < 2 {
		t.Fatal("no group held more than one action: grouping was not tried")
	}
}

// TestAFailingActionFailsOnlyItself: in one group, an action whose item
// is gone and one whose map lost the character's lease fail, each with
// its own error; the others commit.
func TestAFailingActionFailsOnlyItself(t *testing.T) {
	t.Parallel()
	s := newStore(t)
	epoch := withLease(t, s, CriticalEvent{CharacterID: "hero", MapInstance: "town-1"}).Epoch
	rival := withLease(t, s, CriticalEvent{CharacterID: "rival", MapInstance: "town-1"}).Epoch
	first, firstMove := pickup("first", "hero", "town-1", "sword")
	taken, takenMove := pickup("taken", "rival", "town-1", "sword") // after first: gone
	fenced, fencedMove := pickup("fenced", "hero", "town-1", "shield")
	last, lastMove := pickup("last", "rival", "town-1", "helm")
	first.Epoch, taken.Epoch, fenced.Epoch, last.Epoch = epoch, rival, epoch+7, rival
	errs := s.CommitCriticalGroup(testCtx(t), []CriticalAction{
		{first, []Move{firstMove}}, {taken, []Move{takenMove}}, {fenced, []Move{fencedMove}}, {last, []Move{lastMove}},
	})
	if errs[0] != nil || !errors.Is(errs[1], ErrItemTaken) || !errors.Is(errs[2], ErrLeaseLost) || errs[3] != nil {
		t.Fatalf("errors %v; want nil, item taken, lease lost, nil", errs)
	}
	if !committed(t, s, first, "hero") || !committed(t, s, last, "rival") {
		t.Fatal("the actions that could commit did not")
	}
	for _, ev := range []CriticalEvent{taken, fenced} {
		if committed(t, s, ev, ev.CharacterID) {
			t.Fatalf("the failed action %s was recorded", ev.EventID)
		}
	}
}

// TestACrashMidGroupLosesNoAcknowledgedAction kills Postgres (kill -9)
// while players' actions stream through the groups: every action whose
// caller heard success is in the database with its move once it is back,
// and none is recorded twice.
func TestACrashMidGroupLosesNoAcknowledgedAction(t *testing.T) {
	t.Parallel()
	own, s := ownStore(t, "groups")
	groups := NewCriticalGroups(s, GroupOptions{})
	const players = 8
	epochs := make([]int64, players)
	for p := range players {
		epochs[p] = withLease(t, s, CriticalEvent{CharacterID: fmt.Sprint("c", p), MapInstance: "town-1"}).Epoch
	}
	var (
		mu    sync.Mutex
		acked []CriticalEvent
		wg    sync.WaitGroup
	)
	ctx, stop := context.WithCancel(testCtx(t))
	successes := make(chan struct{}, players*1000)
	failures := make(chan struct{}, players*1000)
	for p := range players {
		wg.Go(func() {
			for i := 0; i < 1000 && ctx.Err() == nil; i++ {
				ev, m := pickupN(p, i)
				ev.Epoch = epochs[p]
				if err := groups.CommitCritical(ctx, ev, m); err != nil {
					failures <- struct{}{}
					continue
				}
				mu.Lock()
				acked = append(acked, ev)
				mu.Unlock()
				successes <- struct{}{}
			}
		})
	}
	for range 4 * players { // mid-stream: groups in flight
		<-successes
	}
	if err := own.Kill(); err != nil {
		t.Fatal(err)
	}
	<-failures // the crash reached the callers
	stop()
	wg.Wait()
	groups.Close()
	if err := own.Restart(); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	for _, ev := range acked {
		if !committed(t, s, ev, ev.CharacterID) {
			t.Fatalf("action %s was acknowledged but is not in the database after the crash", ev.EventID)
		}
	}
	t.Logf("%d acknowledged actions survived the crash", len(acked))
}

// TestACommitWhoseAnswerIsLostIsUnknownUntilDoneAgain: the server commits
// a group and the connection breaks before its answer arrives. Every
// action of the group gets ErrCommitUnknown (also ErrUnavailable): it may
// have committed, and here it did. The same actions again, under their
// event ids, are answered nil and recorded once: that is how a map finds
// out. A commit that fails before COMMIT is sent is not unknown.
func TestACommitWhoseAnswerIsLostIsUnknownUntilDoneAgain(t *testing.T) {
	t.Parallel()
	dsn := newDatabase(t)
	direct := openStore(t, dsn)
	cutter, viaCutter, err := testenv.NewCommitCutter(dsn)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cutter.Close() })
	s := openStore(t, viaCutter)
	groups := NewCriticalGroups(s, GroupOptions{})
	defer groups.Close()
	var actions []CriticalAction
	for i := range 3 {
		ev, move := pickup(fmt.Sprint("cut-", i), fmt.Sprint("c", i), "town-1", fmt.Sprint("sword-", i))
		actions = append(actions, CriticalAction{Event: withLease(t, direct, ev), Moves: []Move{move}})
	}

	cutter.CutNextCommitOf("critical_events")
	for i, err := range s.CommitCriticalGroup(testCtx(t), actions) {
		if !errors.Is(err, ErrCommitUnknown) || !errors.Is(err, ErrUnavailable) {
			t.Fatalf("action %d of a group whose commit went unanswered: %v, want ErrCommitUnknown and ErrUnavailable", i, err)
		}
	}
	select {
	case <-cutter.Cuts():
	default:
		t.Fatal("the group's commit was not cut")
	}
	for _, a := range actions {
		if !committed(t, direct, a.Event, a.Event.CharacterID) {
			t.Fatalf("action %s was not committed: the cut came after the server's answer, so it should be", a.Event.EventID)
		}
		if err := groups.CommitCritical(testCtx(t), a.Event, a.Moves...); err != nil {
			t.Fatalf("action %s again: %v, want nil (recorded before)", a.Event.EventID, err)
		}
		if !committed(t, direct, a.Event, a.Event.CharacterID) {
			t.Fatalf("action %s changed by its second run", a.Event.EventID)
		}
	}

	if err := cutter.Close(); err != nil {
		t.Fatal(err)
	}
	ev, move := pickup("refused-at-once", "c0", "town-1", "sword-9")
	err = groups.CommitCritical(testCtx(t), ev, move)
	if !errors.Is(err, ErrUnavailable) || errors.Is(err, ErrCommitUnknown) {
		t.Fatalf("an action with no database to reach: %v, want ErrUnavailable and not ErrCommitUnknown", err)
	}
}

// TestAnActionNotTakenUpInTimeIsUnavailable: an action whose caller's
// deadline passed while it waited for a group (the committers busy) is
// not committed, and says so as ErrUnavailable: a map settling a commit
// whose answer was lost tries again on that, where any other answer would
// be taken for the database's and told to the player.
func TestAnActionNotTakenUpInTimeIsUnavailable(t *testing.T) {
	t.Parallel()
	s := newStore(t)
	groups := NewCriticalGroups(s, GroupOptions{Committers: 1, MaxGroup: 1})
	defer groups.Close()
	busy, busyMove := pickup("busy", "holder", "town-1", "anvil")
	busy.Epoch = withLease(t, s, busy).Epoch
	late, lateMove := pickup("late", "waiter", "town-1", "feather")
	late.Epoch = withLease(t, s, late).Epoch

	// The one committer waits on the busy action's character lock, which
	// a transaction of the test holds.
	holder, err := s.DB().BeginTx(testCtx(t), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = holder.Rollback() }()
	if _, err := holder.ExecContext(testCtx(t), `SELECT pg_advisory_xact_lock(1668442484, hashtext('holder'))`); err != nil {
		t.Fatal(err)
	}
	busyDone := make(chan error, 1)
	go func() { busyDone <- groups.CommitCritical(testCtx(t), busy, busyMove) }()
	waitForALockWait(t, s)

	ctx, cancel := context.WithTimeout(testCtx(t), 200*time.Millisecond)
	defer cancel()
	lateDone := make(chan error, 1)
	go func() { lateDone <- groups.CommitCritical(ctx, late, lateMove) }()
	<-ctx.Done()
	if err := holder.Rollback(); err != nil {
		t.Fatal(err)
	}
	if err := <-busyDone; err != nil {
		t.Fatalf("the busy action: %v", err)
	}
	err = <-lateDone
	if !errors.Is(err, ErrUnavailable) || !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("the action not taken up in time: %v, want ErrUnavailable with the deadline", err)
	}
	if committed(t, s, late, "waiter") {
		t.Fatal("the action not taken up was committed")
	}

	expired, cancelExpired := context.WithCancel(testCtx(t))
	cancelExpired()
	if err := groups.CommitCritical(expired, late, lateMove); !errors.Is(err, ErrUnavailable) {
		t.Fatalf("an action whose caller gave up before it was queued: %v, want ErrUnavailable", err)
	}
}
