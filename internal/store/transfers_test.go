package store

import (
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/lib/pq"

	"github.com/roomkeeper/roomkeeper/internal/wait"
)

// beginTransfer is a fixture: character c (holding its lease on town-1)
// starts transfer id to crypt-1, checkpointed at revision rev.
func beginTransfer(t *testing.T, s *Postgres, c, id string, rev int64) (Lease, Transfer) {
	t.Helper()
	mustEnsure(t, s, c)
	lease, err := s.ClaimLease(testCtx(t), c, "town-1", "pod-a", time.Minute, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	tr := Transfer{ID: id, CharacterID: c, FromInstance: "town-1", ToInstance: "crypt-1", ToMap: "crypt",
		FromX: 500, FromY: 256, ExpiresAt: time.Now().Add(15 * time.Second)}
	if err := s.BeginTransfer(testCtx(t), tr, stateAt(lease, rev)); err != nil {
		t.Fatal(err)
	}
	return lease, tr
}

func TestBeginTransferFencesTheSourceOut(t *testing.T) {
	t.Parallel()
	s := newStore(t)
	ctx := testCtx(t)
	lease, _ := beginTransfer(t, s, "c1", "x1", 7)

	got, err := s.GetTransfer(ctx, "x1")
	if err != nil {
		t.Fatal(err)
	}
	if got.State != TransferRequested || got.ToInstance != "crypt-1" || got.FromX != 500 || got.FromY != 256 {
		t.Fatalf("transfer = %+v", got)
	}
	if st, err := s.LoadState(ctx, "c1"); err != nil || st.Revision != 7 {
		t.Fatalf("checkpoint of the transfer: %+v, %v", st, err)
	}
	if n := count(t, s, `SELECT count(*) FROM character_authority
WHERE character_id = 'c1' AND in_transfer AND map_instance = 'crypt-1' AND transfer_id = 'x1'`); n != 1 {
		t.Fatal("the lease is not in transfer to the destination")
	}
	// Every write of the source is fenced out from here on.
	late := state("c1", 8)
	late.Epoch = lease.Epoch
	if res, err := s.SaveStates(ctx, "town-1", []CharacterState{late}); err != nil || res.Saved != 0 {
		t.Fatalf("late checkpoint of the source: %+v, %v; want nothing saved", res, err)
	}
	ev, move := pickup("e1", "c1", "town-1", "sword-1")
	ev.Epoch = lease.Epoch
	if err := s.CommitCritical(ctx, ev, move); !errors.Is(err, ErrLeaseLost) {
		t.Fatalf("late pickup of the source: error = %v, want ErrLeaseLost", err)
	}
	if err := s.RenewLeases(ctx, "town-1", []Lease{lease}, time.Minute, time.Now()); !errors.Is(err, ErrLeaseLost) {
		t.Fatalf("renewal by the source: error = %v, want ErrLeaseLost", err)
	}
	// A second transfer of the same character from the source fails whole.
	again := Transfer{ID: "x2", CharacterID: "c1", FromInstance: "town-1", ToInstance: "other-1", ToMap: "other",
		ExpiresAt: time.Now().Add(time.Minute)}
	cp := state("c1", 9)
	cp.Epoch = lease.Epoch
	if err := s.BeginTransfer(ctx, again, cp); !errors.Is(err, ErrLeaseLost) {
		t.Fatalf("second transfer: error = %v, want ErrLeaseLost", err)
	}
	if n := count(t, s, `SELECT count(*) FROM transfers WHERE id = 'x2'`); n != 0 {
		t.Fatal("a failed transfer left a row")
	}
}

// TestBeginTransfersIsOneCommit: a pod handing its players over begins
// all their transfers in one transaction; when one character's lease is
// lost, nothing changes and the error names it.
func TestBeginTransfersIsOneCommit(t *testing.T) {
	t.Parallel()
	s := newStore(t)
	ctx := testCtx(t)
	batch := func(ids ...string) ([]Transfer, []CharacterState) {
		var ts []Transfer
		var cps []CharacterState
		for _, c := range ids {
			mustEnsure(t, s, c)
			lease, err := s.ClaimLease(ctx, c, "town-1", "pod-a", time.Minute, time.Now())
			if err != nil {
				t.Fatal(err)
			}
			ts = append(ts, Transfer{ID: "x-" + c, CharacterID: c, FromInstance: "town-1", ToInstance: "town-1", ToMap: "town",
				State: TransferTokenIssued, FromX: 3, FromY: 4, ExpiresAt: time.Now().Add(time.Minute)})
			cp := state(c, 5)
			cp.Epoch = lease.Epoch
			cps = append(cps, cp)
		}
		return ts, cps
	}
	ts, cps := batch("b3", "b1", "b2")
	if err := s.BeginTransfers(ctx, ts, cps); err != nil {
		t.Fatal(err)
	}
	if n := count(t, s, `SELECT count(*) FROM transfers WHERE state = 'token_issued' AND from_instance = 'town-1'`); n != 3 {
		t.Fatalf("%d transfers token_issued, want 3", n)
	}
	if n := count(t, s, `SELECT count(*) FROM character_authority WHERE in_transfer AND character_id IN ('b1','b2','b3')`); n != 3 {
		t.Fatalf("%d leases in transfer, want 3", n)
	}

	ts, cps = batch("c1", "c2")
	cps[1].Epoch-- // c2's lease was taken over since
	err := s.BeginTransfers(ctx, ts, cps)
	var lost *LeaseLostError
	if !errors.As(err, &lost) || len(lost.CharacterIDs) != 1 || lost.CharacterIDs[0] != "c2" {
		t.Fatalf("a batch with a lost lease: %v, want LeaseLostError{c2}", err)
	}
	if n := count(t, s, `SELECT count(*) FROM transfers WHERE character_id IN ('c1','c2')`); n != 0 {
		t.Fatal("a failed batch left transfers")
	}
	if n := count(t, s, `SELECT count(*) FROM character_authority WHERE in_transfer AND character_id = 'c1'`); n != 0 {
		t.Fatal("a failed batch moved a lease")
	}
	dup, dupStates := batch("d1")
	if err := s.BeginTransfers(ctx, append(dup, dup[0]), append(dupStates, dupStates[0])); err == nil {
		t.Fatal("a batch naming a character twice was taken")
	}
}

func TestTransferArrivesOnceAtItsDestination(t *testing.T) {
	t.Parallel()
	s := newStore(t)
	ctx := testCtx(t)
	src, _ := beginTransfer(t, s, "c1", "x1", 1)
	now := time.Now()
	// The token is not issued yet: nobody may arrive.
	if _, err := s.ArriveByTransfer(ctx, "x1", "c1", "crypt-1", "pod-b", time.Minute, now); !errors.Is(err, ErrTransferSettled) {
		t.Fatalf("arrival before token_issued: error = %v, want ErrTransferSettled", err)
	}
	for range 2 { // idempotent
		if err := s.AdvanceTransfer(ctx, "x1", TransferRequested, TransferTokenIssued); err != nil {
			t.Fatal(err)
		}
	}
	for name, c := range map[string]struct{ id, chr, instance string }{
		"unknown transfer":  {"nope", "c1", "crypt-1"},
		"another character": {"x1", "c2", "crypt-1"},
		"a third map":       {"x1", "c1", "cave-1"},
	} {
		if _, err := s.ArriveByTransfer(ctx, c.id, c.chr, c.instance, "pod-b", time.Minute, now); !errors.Is(err, ErrNotFound) {
			t.Errorf("%s: error = %v, want ErrNotFound", name, err)
		}
	}
	a, err := s.ArriveByTransfer(ctx, "x1", "c1", "crypt-1", "pod-b", time.Minute, now)
	if err != nil {
		t.Fatal(err)
	}
	if a.Returned || a.Lease.Epoch <= src.Epoch || a.Lease.MapInstance != "crypt-1" || a.Transfer.FromInstance != "town-1" {
		t.Fatalf("arrival = %+v", a)
	}
	if _, err := s.ArriveByTransfer(ctx, "x1", "c1", "crypt-1", "pod-b", time.Minute, now); !errors.Is(err, ErrTransferSettled) {
		t.Fatalf("second arrival: error = %v, want ErrTransferSettled", err)
	}
	if _, err := s.ArriveByTransfer(ctx, "x1", "c1", "town-1", "pod-a", time.Minute, now); !errors.Is(err, ErrTransferSettled) {
		t.Fatalf("return after the arrival: error = %v, want ErrTransferSettled", err)
	}
	for _, step := range [][2]TransferState{{TransferDestinationAccepted, TransferSourceReleased}, {TransferSourceReleased, TransferCompleted}} {
		if err := s.AdvanceTransfer(ctx, "x1", step[0], step[1]); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.AdvanceTransfer(ctx, "x1", TransferRequested, TransferTokenIssued); !errors.Is(err, ErrTransferSettled) {
		t.Fatalf("going back: error = %v, want ErrTransferSettled", err)
	}
	if err := s.AbortTransfer(ctx, "x1", "too late"); !errors.Is(err, ErrTransferSettled) {
		t.Fatalf("aborting a completed transfer: error = %v, want ErrTransferSettled", err)
	}
	// The destination now writes the character.
	st := state("c1", 2)
	st.Epoch = a.Lease.Epoch
	if res, err := s.SaveStates(ctx, "crypt-1", []CharacterState{st}); err != nil || res.Saved != 1 {
		t.Fatalf("destination checkpoint: %+v, %v", res, err)
	}
}

func TestTransferReturnsToItsSource(t *testing.T) {
	t.Parallel()
	s := newStore(t)
	ctx := testCtx(t)
	beginTransfer(t, s, "c1", "x1", 1)
	if err := s.AdvanceTransfer(ctx, "x1", TransferRequested, TransferTokenIssued); err != nil {
		t.Fatal(err)
	}
	a, err := s.ArriveByTransfer(ctx, "x1", "c1", "town-1", "pod-a2", time.Minute, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	if !a.Returned || a.Transfer.FromX != 500 || a.Lease.MapInstance != "town-1" {
		t.Fatalf("return = %+v", a)
	}
	got, _ := s.GetTransfer(ctx, "x1")
	if got.State != TransferAborted || got.Reason == "" {
		t.Fatalf("transfer after the return = %+v", got)
	}
	if _, err := s.ArriveByTransfer(ctx, "x1", "c1", "crypt-1", "pod-b", time.Minute, time.Now()); !errors.Is(err, ErrTransferSettled) {
		t.Fatalf("arrival after the return: error = %v, want ErrTransferSettled", err)
	}
}

// TestTransferArrivalRacesReturn: the destination and the source race for
// the character; exactly one gets it, whatever the order.
func TestTransferArrivalRacesReturn(t *testing.T) {
	t.Parallel()
	s := newStore(t)
	for round := range 10 {
		id, c := "x"+string(rune('a'+round)), "c"+string(rune('a'+round))
		beginTransfer(t, s, c, id, 1)
		if err := s.AdvanceTransfer(testCtx(t), id, TransferRequested, TransferTokenIssued); err != nil {
			t.Fatal(err)
		}
		errs := make([]error, 2)
		var wg sync.WaitGroup
		for i, instance := range []string{"crypt-1", "town-1"} {
			wg.Go(func() { _, errs[i] = s.ArriveByTransfer(testCtx(t), id, c, instance, "pod", time.Minute, time.Now()) })
		}
		wg.Wait()
		if (errs[0] == nil) == (errs[1] == nil) {
			t.Fatalf("round %d: destination %v, source %v: want exactly one to win", round, errs[0], errs[1])
		}
		for _, err := range errs {
			if err != nil && !errors.Is(err, ErrTransferSettled) {
				t.Fatalf("round %d: loser's error = %v, want ErrTransferSettled", round, err)
			}
		}
	}
}

func TestAbortTransferFreesTheCharacter(t *testing.T) {
	t.Parallel()
	s := newStore(t)
	ctx := testCtx(t)
	_, tr := beginTransfer(t, s, "c1", "x1", 1)
	if expired, err := s.ExpiredTransfers(ctx, "town-1", time.Now()); err != nil || len(expired) != 0 {
		t.Fatalf("expired before the lease ran out: %v, %v", expired, err)
	}
	expired, err := s.ExpiredTransfers(ctx, "town-1", tr.ExpiresAt.Add(time.Second))
	if err != nil || len(expired) != 1 || expired[0].ID != "x1" {
		t.Fatalf("expired after the lease ran out: %v, %v", expired, err)
	}
	if err := s.AbortTransfer(ctx, "x1", "token expired"); err != nil {
		t.Fatal(err)
	}
	if err := s.AbortTransfer(ctx, "x1", "again"); !errors.Is(err, ErrTransferSettled) {
		t.Fatalf("second abort: error = %v, want ErrTransferSettled", err)
	}
	if err := s.AbortTransfer(ctx, "nope", "x"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("unknown transfer: error = %v, want ErrNotFound", err)
	}
	if _, err := s.ClaimLease(ctx, "c1", "town-1", "pod-a", time.Minute, time.Now()); err != nil {
		t.Fatalf("claim after the abort: %v", err)
	}
	if _, err := s.ArriveByTransfer(ctx, "x1", "c1", "crypt-1", "pod-b", time.Minute, time.Now()); !errors.Is(err, ErrTransferSettled) {
		t.Fatalf("arrival after the abort: error = %v, want ErrTransferSettled", err)
	}
}

// TestArrivedTransfersCompleteInOneStatement: the destination completes
// the transfers it accepted, many at once; one not accepted yet, one
// aborted and an unknown id are left as they are.
func TestArrivedTransfersCompleteInOneStatement(t *testing.T) {
	t.Parallel()
	s := newStore(t)
	ctx := testCtx(t)
	for _, c := range []string{"c1", "c2", "c3", "c4"} {
		id := "x-" + c
		beginTransfer(t, s, c, id, 1)
		if err := s.AdvanceTransfer(ctx, id, TransferRequested, TransferTokenIssued); err != nil {
			t.Fatal(err)
		}
	}
	for _, c := range []string{"c1", "c2"} {
		if _, err := s.ArriveByTransfer(ctx, "x-"+c, c, "crypt-1", "pod-b", time.Minute, time.Now()); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.AbortTransfer(ctx, "x-c4", "the destination is down"); err != nil {
		t.Fatal(err)
	}
	n, err := s.CompleteTransfers(ctx, []string{"x-c1", "x-c2", "x-c3", "x-c4", "x-unknown"})
	if err != nil || n != 2 {
		t.Fatalf("completed %d, %v: want the 2 accepted", n, err)
	}
	for id, want := range map[string]TransferState{"x-c1": TransferCompleted, "x-c2": TransferCompleted,
		"x-c3": TransferTokenIssued, "x-c4": TransferAborted} {
		got, err := s.GetTransfer(ctx, id)
		if err != nil || got.State != want {
			t.Errorf("%s: %s, %v: want %s", id, got.State, err, want)
		}
	}
	if n, err := s.CompleteTransfers(ctx, []string{"x-c1"}); err != nil || n != 0 {
		t.Errorf("completing a completed transfer again: %d, %v", n, err)
	}
}

// TestAHandoversArrivalsTakeOneTransaction: the destination admits a
// handover's arrivals in one call; each gets its own answer, and the ones
// refused change nothing and hold back none of the others.
func TestAHandoversArrivalsTakeOneTransaction(t *testing.T) {
	t.Parallel()
	s := newStore(t)
	ctx := testCtx(t)
	for _, c := range []string{"c1", "c2", "c3", "c4", "c5", "c6"} {
		beginTransfer(t, s, c, "x-"+c, 3)
		if c != "c5" { // c5's token is not issued: it cannot arrive yet
			if err := s.AdvanceTransfer(ctx, "x-"+c, TransferRequested, TransferTokenIssued); err != nil {
				t.Fatal(err)
			}
		}
	}
	for _, q := range []string{
		`INSERT INTO item_ownership (item_id, kind, owner_kind, owner_id, revision) VALUES ('sword-1', 'sword', 'character', 'c2', 1), ('potion-1', 'potion', 'character', 'c2', 1)`,
		`UPDATE character_authority SET transfer_id = 'another' WHERE character_id = 'c3'`, // another map took it
		`UPDATE character_state SET state_hash = 'forged' WHERE character_id = 'c4'`,
		`DELETE FROM character_state WHERE character_id = 'c6'`,
	} {
		if _, err := s.DB().ExecContext(ctx, q); err != nil {
			t.Fatal(err)
		}
	}
	reqs := []ArrivalRequest{{"x-c1", "c1"}, {"x-c2", "c2"}, {"x-c3", "c3"}, {"x-c4", "c4"}, {"x-c5", "c5"}, {"x-c6", "c6"},
		{"x-unknown", "c7"}}
	results, err := s.ArriveByTransfers(ctx, reqs, "crypt-1", "pod-b", time.Minute, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	wantErr := []error{nil, nil, ErrLeaseHeld, nil, ErrTransferSettled, nil, ErrNotFound}
	wantStateErr := []error{nil, nil, nil, ErrCorrupt, nil, ErrNotFound, nil}
	for i, r := range results {
		c := reqs[i].CharacterID
		if !errors.Is(r.Err, wantErr[i]) || (wantErr[i] == nil) != (r.Err == nil) {
			t.Errorf("%s: error %v, want %v", c, r.Err, wantErr[i])
		}
		if r.Err != nil {
			continue
		}
		if r.Lease.MapInstance != "crypt-1" || r.Lease.Epoch == 0 || r.Returned || r.Transfer.ID != reqs[i].TransferID {
			t.Errorf("%s: arrival %+v", c, r.Arrival)
		}
		if !errors.Is(r.StateErr, wantStateErr[i]) || (wantStateErr[i] == nil) != (r.StateErr == nil) {
			t.Errorf("%s: state error %v, want %v", c, r.StateErr, wantStateErr[i])
		}
		if r.StateErr == nil && (r.State.CharacterID != c || r.State.Revision != 3) {
			t.Errorf("%s: state %+v, want its checkpoint of revision 3", c, r.State)
		}
	}
	if items := results[1].Items; len(items) != 2 || items[0].ItemID != "potion-1" || items[1].ItemID != "sword-1" {
		t.Errorf("c2's items: %+v", items)
	}
	for id, want := range map[string]TransferState{"x-c1": TransferDestinationAccepted, "x-c2": TransferDestinationAccepted,
		"x-c3": TransferTokenIssued, "x-c4": TransferDestinationAccepted, "x-c5": TransferRequested, "x-c6": TransferDestinationAccepted} {
		if got, err := s.GetTransfer(ctx, id); err != nil || got.State != want {
			t.Errorf("%s: %s, %v: want %s", id, got.State, err, want)
		}
	}
	if n := count(t, s, `SELECT count(*) FROM character_authority WHERE map_instance = 'crypt-1' AND pod = 'pod-b' AND NOT in_transfer`); n != 4 {
		t.Errorf("%d leases on the destination, want the 4 that arrived", n)
	}
}

// TestAHandOverAndACheckpointOfItsCharacterDoNotDeadlock: a transfer
// writes the character's checkpoint, then moves its lease; a checkpoint
// of the same character arriving in between waits for the transfer and
// is fenced out, instead of sharing the lease the transfer must update
// (a deadlock Postgres broke after a second, seen under load).
func TestAHandOverAndACheckpointOfItsCharacterDoNotDeadlock(t *testing.T) {
	t.Parallel()
	s := newStore(t)
	ctx := testCtx(t)
	mustEnsure(t, s, "c1")
	lease, err := s.ClaimLease(ctx, "c1", "town-1", "pod-a", time.Minute, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	rows, err := transferBatch([]Transfer{{ID: "x1", CharacterID: "c1", FromInstance: "town-1", ToInstance: "crypt-1",
		ToMap: "crypt", State: TransferRequested, ExpiresAt: time.Now().Add(15 * time.Second)}}, []CharacterState{stateAt(lease, 5)})
	if err != nil {
		t.Fatal(err)
	}
	handOver, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = handOver.Rollback() }()
	cols, err := stateColumns([]CharacterState{stateAt(lease, 5)})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := saveStatesTx(ctx, handOver, saveStatesForHandOverSQL, "town-1", cols); err != nil {
		t.Fatal(err)
	}
	// The checkpoint's own statement, once: SaveStates would retry a
	// deadlock and hide it.
	checkpoint := make(chan error, 1)
	go func() {
		later, err := stateColumns([]CharacterState{stateAt(lease, 6)})
		if err != nil {
			checkpoint <- err
			return
		}
		checkpoint <- s.tryTx(ctx, func(tx runner) error {
			n, err := saveStatesTx(ctx, tx, saveStatesSQL, "town-1", later)
			if err == nil && n != 0 {
				err = fmt.Errorf("the checkpoint after the transfer saved %d states, want none (fenced out)", n)
			}
			return err
		})
	}()
	waitForALockWait(t, s)
	moved, err := queryAll(ctx, handOver, scanString, handOverSQL, pq.Array(rows.characters), pq.Array(rows.toInstances),
		pq.Array(rows.epochs), pq.Array(rows.expires), pq.Array(rows.ids), rows.from)
	if err != nil || len(moved) != 1 {
		t.Fatalf("moving the lease with a checkpoint waiting: moved %v, %v", moved, err)
	}
	if err := handOver.Commit(); err != nil {
		t.Fatal(err)
	}
	if err := <-checkpoint; err != nil {
		t.Fatal(err)
	}
}

// stateAt is character state rev made under lease.
func stateAt(lease Lease, rev int64) CharacterState {
	st := state(lease.CharacterID, rev)
	st.Epoch = lease.Epoch
	return st
}

// waitForALockWait waits until a session of s's database waits for a
// lock (a row's, an advisory one).
func waitForALockWait(t *testing.T, s *Postgres) {
	t.Helper()
	err := wait.Until(testCtx(t), func() error {
		if count(t, s, `SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock'`) == 0 {
			return errors.New("no session waits for a lock")
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}
