package store

import (
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"
)

func TestEnsureCharacter(t *testing.T) {
	t.Parallel()
	s := newStore(t)
	ctx := testCtx(t)
	if err := s.EnsureCharacter(ctx, "c1", "alice"); err != nil {
		t.Fatalf("new character: %v", err)
	}
	if err := s.EnsureCharacter(ctx, "c1", "alice"); err != nil {
		t.Fatalf("own character again: %v", err)
	}
	if err := s.EnsureCharacter(ctx, "c1", "bob"); !errors.Is(err, ErrNotOwner) {
		t.Fatalf("someone else's character: error = %v, want ErrNotOwner", err)
	}
	if err := s.EnsureCharacter(ctx, "c2", "alice"); err != nil {
		t.Fatalf("second character of a user: %v", err)
	}
}

func TestEnsureCharacterConcurrentUsersOneOwner(t *testing.T) {
	t.Parallel()
	s := newStore(t)
	const users = 16
	errs := make([]error, users)
	var wg sync.WaitGroup
	for i := range users {
		wg.Go(func() { errs[i] = s.EnsureCharacter(testCtx(t), "contested", fmt.Sprint("user-", i)) })
	}
	wg.Wait()
	owners := 0
	for _, err := range errs {
		switch {
		case err == nil:
			owners++
		case !errors.Is(err, ErrNotOwner):
			t.Errorf("unexpected error: %v", err)
		}
	}
	if owners != 1 {
		t.Fatalf("%d users own the character, want 1", owners)
	}
}

func TestConsumeTokenOnce(t *testing.T) {
	t.Parallel()
	s := newStore(t)
	ctx := testCtx(t)
	now := time.Now()
	if err := s.ConsumeToken(ctx, "jti-1", now.Add(10*time.Second)); err != nil {
		t.Fatalf("first use: %v", err)
	}
	if err := s.ConsumeToken(ctx, "jti-1", now.Add(10*time.Second)); !errors.Is(err, ErrReplayed) {
		t.Fatalf("second use: error = %v, want ErrReplayed", err)
	}
}

func TestConsumeTokenConcurrentOneWinner(t *testing.T) {
	t.Parallel()
	s := newStore(t)
	const racers = 32
	errs := make([]error, racers)
	var wg sync.WaitGroup
	exp := time.Now().Add(time.Minute)
	for i := range racers {
		wg.Go(func() { errs[i] = s.ConsumeToken(testCtx(t), "contested", exp) })
	}
	wg.Wait()
	winners := 0
	for _, err := range errs {
		switch {
		case err == nil:
			winners++
		case !errors.Is(err, ErrReplayed):
			t.Errorf("unexpected error: %v", err)
		}
	}
	if winners != 1 {
		t.Fatalf("%d goroutines consumed the token, want 1", winners)
	}
}

func TestPruneTokensDeletesOnlyExpired(t *testing.T) {
	t.Parallel()
	s := newStore(t)
	ctx := testCtx(t)
	now := time.Now()
	for jti, exp := range map[string]time.Time{"old-1": now.Add(-time.Hour), "old-2": now.Add(-time.Second), "live": now.Add(time.Hour)} {
		if err := s.ConsumeToken(ctx, jti, exp); err != nil {
			t.Fatal(err)
		}
	}
	n, err := s.PruneTokens(ctx, now)
	if err != nil {
		t.Fatal(err)
	}
	if n != 2 {
		t.Fatalf("pruned %d, want 2", n)
	}
	if err := s.ConsumeToken(ctx, "live", now.Add(time.Hour)); !errors.Is(err, ErrReplayed) {
		t.Fatalf("live token after prune: error = %v, want ErrReplayed", err)
	}
}

func TestClaimLeaseLifecycle(t *testing.T) {
	t.Parallel()
	s := newStore(t)
	ctx := testCtx(t)
	mustEnsure(t, s, "c1")
	now := time.Now()
	const ttl = 10 * time.Second

	a1, err := s.ClaimLease(ctx, "c1", "town-1", "pod-a", ttl, now)
	if err != nil {
		t.Fatal(err)
	}
	if !a1.ExpiresAt.Equal(now.Add(ttl)) || a1.MapInstance != "town-1" || a1.Pod != "pod-a" {
		t.Fatalf("lease = %+v", a1)
	}
	if _, err := s.ClaimLease(ctx, "c1", "forest-1", "pod-b", ttl, now.Add(time.Second)); !errors.Is(err, ErrLeaseHeld) {
		t.Fatalf("claim by another map while held: error = %v, want ErrLeaseHeld", err)
	}
	a2, err := s.ClaimLease(ctx, "c1", "town-1", "pod-a", ttl, now.Add(2*time.Second))
	if err != nil {
		t.Fatalf("reclaim by the same map: %v", err)
	}
	if a2.Epoch <= a1.Epoch {
		t.Fatalf("reclaim epoch %d, want > %d", a2.Epoch, a1.Epoch)
	}

	later := now.Add(time.Minute) // a2 expired
	b, err := s.ClaimLease(ctx, "c1", "forest-1", "pod-b", ttl, later)
	if err != nil {
		t.Fatalf("claim after expiry: %v", err)
	}
	if b.Epoch <= a2.Epoch {
		t.Fatalf("takeover epoch %d, want > %d", b.Epoch, a2.Epoch)
	}
	err = s.RenewLeases(ctx, "town-1", []Lease{a2}, ttl, later)
	var lost *LeaseLostError
	if !errors.Is(err, ErrLeaseLost) || !errors.As(err, &lost) || len(lost.CharacterIDs) != 1 || lost.CharacterIDs[0] != "c1" {
		t.Fatalf("renew of a lease taken over: error = %v, want LeaseLostError{c1}", err)
	}

	if err := s.ReleaseLease(ctx, a2); err != nil { // stale: must not end b
		t.Fatal(err)
	}
	if n := count(t, s, `SELECT count(*) FROM character_authority WHERE epoch = $1`, b.Epoch); n != 1 {
		t.Fatal("a stale release removed the new holder's lease")
	}
	if err := s.ReleaseLease(ctx, b); err != nil {
		t.Fatal(err)
	}
	if n := count(t, s, `SELECT count(*) FROM character_authority`); n != 0 {
		t.Fatal("release left the lease")
	}
	c, err := s.ClaimLease(ctx, "c1", "town-1", "pod-a", ttl, later)
	if err != nil {
		t.Fatalf("claim after release: %v", err)
	}
	if c.Epoch <= b.Epoch {
		t.Fatalf("epoch after release %d, want > %d (epochs never repeat)", c.Epoch, b.Epoch)
	}
}

func TestClaimLeaseUnknownCharacter(t *testing.T) {
	t.Parallel()
	s := newStore(t)
	if _, err := s.ClaimLease(testCtx(t), "nobody", "town-1", "pod-a", time.Second, time.Now()); !errors.Is(err, ErrNotFound) {
		t.Fatalf("error = %v, want ErrNotFound", err)
	}
}

// TestClaimLeaseRefusesALeaseInTransfer: a plain claim never takes a lease
// in transfer, not even on its destination: only ArriveByTransfer does,
// with the transfer's id (transfers_test.go). Once it expired, anyone may.
func TestClaimLeaseRefusesALeaseInTransfer(t *testing.T) {
	t.Parallel()
	s := newStore(t)
	ctx := testCtx(t)
	mustEnsure(t, s, "c1")
	now := time.Now()
	if _, err := s.ClaimLease(ctx, "c1", "town-1", "pod-a", time.Minute, now); err != nil {
		t.Fatal(err)
	}
	if _, err := s.DB().ExecContext(ctx, `UPDATE character_authority
SET in_transfer = true, map_instance = 'forest-1', transfer_id = 'x1' WHERE character_id = 'c1'`); err != nil {
		t.Fatal(err)
	}
	for _, instance := range []string{"forest-1", "town-1", "cave-1"} {
		if _, err := s.ClaimLease(ctx, "c1", instance, "pod-b", time.Minute, now); !errors.Is(err, ErrLeaseHeld) {
			t.Errorf("claim on %s of a lease in transfer: error = %v, want ErrLeaseHeld", instance, err)
		}
	}
	if _, err := s.ClaimLease(ctx, "c1", "cave-1", "pod-b", time.Minute, now.Add(2*time.Minute)); err != nil {
		t.Fatalf("claim after the lease in transfer expired: %v", err)
	}
}

// TestResumeLease takes a session's lease on a replacement pod of the same
// map while the session still holds it (unexpired: the old pod crashed),
// and when it was released; it refuses an epoch replaced since, another
// map's lease and a lease in transfer.
func TestResumeLease(t *testing.T) {
	t.Parallel()
	s := newStore(t)
	ctx := testCtx(t)
	mustEnsure(t, s, "c1", "c2")
	now := time.Now()
	old, err := s.ClaimLease(ctx, "c1", "town-1", "pod-a", time.Minute, now)
	if err != nil {
		t.Fatal(err)
	}
	resumed, err := s.ResumeLease(ctx, "c1", "town-1", "pod-b", old.Epoch, time.Minute, now)
	if err != nil {
		t.Fatalf("resume of the session's unexpired lease: %v", err)
	}
	if resumed.Epoch <= old.Epoch || resumed.Pod != "pod-b" {
		t.Fatalf("resumed lease %+v, want pod-b and an epoch above %d", resumed, old.Epoch)
	}
	if err := s.RenewLeases(ctx, "town-1", []Lease{old}, time.Minute, now); !errors.Is(err, ErrLeaseLost) {
		t.Fatalf("the old pod renewing after the resume: %v, want ErrLeaseLost", err)
	}
	if _, err := s.ResumeLease(ctx, "c1", "town-1", "pod-c", old.Epoch, time.Minute, now); !errors.Is(err, ErrSessionEnded) {
		t.Fatalf("second resume of one epoch: %v, want ErrSessionEnded", err)
	}
	if _, err := s.ResumeLease(ctx, "c1", "forest-1", "pod-c", resumed.Epoch, time.Minute, now); !errors.Is(err, ErrSessionEnded) {
		t.Fatalf("resume on another map: %v, want ErrSessionEnded", err)
	}
	if err := s.ReleaseLease(ctx, resumed); err != nil {
		t.Fatal(err)
	}
	if _, err := s.ResumeLease(ctx, "c1", "town-1", "pod-c", resumed.Epoch, time.Minute, now); err != nil {
		t.Fatalf("resume after a clean release: %v", err)
	}
	inTransfer, err := s.ClaimLease(ctx, "c2", "town-1", "pod-a", time.Minute, now)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.DB().ExecContext(ctx, `UPDATE character_authority SET in_transfer = true WHERE character_id = 'c2'`); err != nil {
		t.Fatal(err)
	}
	if _, err := s.ResumeLease(ctx, "c2", "town-1", "pod-b", inTransfer.Epoch, time.Minute, now); !errors.Is(err, ErrSessionEnded) {
		t.Fatalf("resume of a lease in transfer: %v, want ErrSessionEnded", err)
	}
}

func TestClaimLeaseRaceOneWinner(t *testing.T) {
	t.Parallel()
	s := newStore(t)
	const rounds = 20
	for r := range rounds {
		id := fmt.Sprint("c", r)
		mustEnsure(t, s, id)
		errs := make([]error, 2)
		var wg sync.WaitGroup
		for i, m := range []string{"town-1", "forest-1"} {
			wg.Go(func() { _, errs[i] = s.ClaimLease(testCtx(t), id, m, "pod-"+m, time.Minute, time.Now()) })
		}
		wg.Wait()
		won := 0
		for _, err := range errs {
			switch {
			case err == nil:
				won++
			case !errors.Is(err, ErrLeaseHeld):
				t.Fatalf("unexpected error: %v", err)
			}
		}
		if won != 1 {
			t.Fatalf("round %d: %d maps won the lease, want 1", r, won)
		}
	}
}

func TestRenewLeasesExtendsTheOnesStillHeld(t *testing.T) {
	t.Parallel()
	s := newStore(t)
	ctx := testCtx(t)
	mustEnsure(t, s, "a", "b", "c")
	now := time.Now()
	var held []Lease
	for _, id := range []string{"a", "b", "c"} {
		l, err := s.ClaimLease(ctx, id, "town-1", "pod-a", time.Second, now)
		if err != nil {
			t.Fatal(err)
		}
		held = append(held, l)
	}
	if _, err := s.ClaimLease(ctx, "b", "forest-1", "pod-b", time.Minute, now.Add(2*time.Second)); err != nil {
		t.Fatal(err)
	}
	renewAt := now.Add(3 * time.Second)
	err := s.RenewLeases(ctx, "town-1", held, 10*time.Second, renewAt)
	var lost *LeaseLostError
	if !errors.As(err, &lost) || fmt.Sprint(lost.CharacterIDs) != "[b]" {
		t.Fatalf("error = %v, want LeaseLostError{b}", err)
	}
	if n := count(t, s, `SELECT count(*) FROM character_authority WHERE map_instance = 'town-1' AND expires_at = $1`,
		renewAt.Add(10*time.Second)); n != 2 {
		t.Fatalf("%d leases extended, want 2", n)
	}
	if err := s.RenewLeases(ctx, "town-1", nil, time.Second, now); err != nil {
		t.Fatalf("renewing nothing: %v", err)
	}
}
