package token

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

func TestMemoryReplayGuardRefusesSecondUse(t *testing.T) {
	clock := &fakeClock{now: t0}
	g := NewMemoryReplayGuard(clock.Now)
	exp := t0.Add(ttl)
	if err := g.Consume(t.Context(), "a", exp); err != nil {
		t.Fatal(err)
	}
	if err := g.Consume(t.Context(), "b", exp); err != nil {
		t.Fatalf("another id: %v", err)
	}
	// Still refused inside the verifier's leeway after exp.
	clock.now = exp.Add(DefaultLeeway)
	if err := g.Consume(t.Context(), "a", exp); !errors.Is(err, ErrReplayed) {
		t.Fatalf("second use: error = %v, want ErrReplayed", err)
	}
}

func TestMemoryReplayGuardPrunesExpiredIDs(t *testing.T) {
	clock := &fakeClock{now: t0}
	g := NewMemoryReplayGuard(clock.Now)
	exp := t0.Add(ttl)
	if err := g.Consume(t.Context(), "old", exp); err != nil {
		t.Fatal(err)
	}
	clock.now = exp.Add(replayGrace)
	if err := g.Consume(t.Context(), "new", clock.now.Add(ttl)); err != nil {
		t.Fatal(err)
	}
	if _, ok := g.seen["old"]; ok || len(g.seen) != 1 || len(g.expiry) != 1 {
		t.Fatalf("after expiry the guard holds %d ids (%d in the heap), want only the new one", len(g.seen), len(g.expiry))
	}
}

func TestMemoryReplayGuardStaysBounded(t *testing.T) {
	clock := &fakeClock{now: t0}
	g := NewMemoryReplayGuard(clock.Now)
	// One ticket a second for an hour: only the last TTL plus grace remain.
	for i := range 3600 {
		if err := g.Consume(t.Context(), fmt.Sprint(i), clock.now.Add(ttl)); err != nil {
			t.Fatal(err)
		}
		clock.Advance(time.Second)
	}
	if limit := int((ttl + replayGrace) / time.Second); len(g.seen) > limit || len(g.expiry) != len(g.seen) {
		t.Fatalf("guard holds %d ids (%d in the heap), want at most %d", len(g.seen), len(g.expiry), limit)
	}
}

func TestMemoryReplayGuardConcurrentConsume(t *testing.T) {
	g := NewMemoryReplayGuard(nil)
	exp := time.Now().Add(ttl)
	var ok, replayed atomic.Int32
	var wg sync.WaitGroup
	start := make(chan struct{})
	for range 64 {
		wg.Go(func() {
			<-start
			switch err := g.Consume(context.Background(), "jti", exp); {
			case err == nil:
				ok.Add(1)
			case errors.Is(err, ErrReplayed):
				replayed.Add(1)
			default:
				t.Errorf("unexpected error: %v", err)
			}
		})
	}
	close(start)
	wg.Wait()
	if ok.Load() != 1 || replayed.Load() != 63 {
		t.Fatalf("%d consumes succeeded and %d were replays, want 1 and 63", ok.Load(), replayed.Load())
	}
}

func TestMemoryReplayGuardRefusesBadCalls(t *testing.T) {
	g := NewMemoryReplayGuard(nil)
	if err := g.Consume(t.Context(), "", time.Now().Add(ttl)); !errors.Is(err, ErrMalformed) {
		t.Errorf("empty jti: error = %v, want ErrMalformed", err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	if err := g.Consume(ctx, "a", time.Now().Add(ttl)); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled context: error = %v", err)
	}
	// A cancelled call must not have recorded the id.
	if err := g.Consume(t.Context(), "a", time.Now().Add(ttl)); err != nil {
		t.Errorf("after a cancelled call: %v", err)
	}
}

// TestVerifyThenConsume is the flow a map pod runs on hello: a ticket
// verifies, is consumed once, and the same ticket again is a replay.
func TestVerifyThenConsume(t *testing.T) {
	keys := StaticKeys(newKeySet(t))
	clock := &fakeClock{now: t0}
	raw, _ := mustSign(t, keys, clock, joinClaims())
	v, g := NewVerifier(keys, clock.Now), NewMemoryReplayGuard(clock.Now)
	use := func() error {
		c, err := v.Verify(raw, expectFor(joinClaims()))
		if err != nil {
			return err
		}
		return g.Consume(t.Context(), c.ID, c.ExpiresAt)
	}
	if err := use(); err != nil {
		t.Fatal(err)
	}
	if err := use(); !errors.Is(err, ErrReplayed) {
		t.Fatalf("second use: error = %v, want ErrReplayed", err)
	}
}
