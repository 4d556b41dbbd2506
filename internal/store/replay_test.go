package store

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/roomkeeper/roomkeeper/internal/token"
)

func TestReplayGuardSharedAcrossPods(t *testing.T) {
	t.Parallel()
	dsn := newDatabase(t)
	podA, podB := NewReplayGuard(openStore(t, dsn)), NewReplayGuard(openStore(t, dsn))
	ctx := testCtx(t)
	exp := time.Now().Add(10 * time.Second)
	if err := podA.Consume(ctx, "jti-1", exp); err != nil {
		t.Fatalf("first use: %v", err)
	}
	if err := podB.Consume(ctx, "jti-1", exp); !errors.Is(err, token.ErrReplayed) {
		t.Fatalf("second use on another pod: error = %v, want token.ErrReplayed", err)
	}
	if err := podA.Consume(ctx, "", exp); !errors.Is(err, token.ErrMalformed) {
		t.Fatalf("empty jti: error = %v, want token.ErrMalformed", err)
	}
	// Kept past exp for the verifier's leeway: pruning at exp must not forget it.
	s := openStore(t, dsn)
	if _, err := s.PruneTokens(ctx, exp.Add(time.Second)); err != nil {
		t.Fatal(err)
	}
	if err := podB.Consume(ctx, "jti-1", exp); !errors.Is(err, token.ErrReplayed) {
		t.Fatalf("second use just after exp: error = %v, want token.ErrReplayed", err)
	}
}

// pruneCounter is a real store that counts the prunes that reach it.
type pruneCounter struct {
	Store
	prunes int
}

func (c *pruneCounter) PruneTokens(ctx context.Context, now time.Time) (int64, error) {
	c.prunes++
	return c.Store.PruneTokens(ctx, now)
}

// TestAReplayGuardPrunesOnlyWhatCanHaveExpired: the first prune clears
// what earlier pods left; after that the guard asks the database only once
// an id it recorded has expired (a map nobody joins asks nothing), and then
// that id is gone.
func TestAReplayGuardPrunesOnlyWhatCanHaveExpired(t *testing.T) {
	t.Parallel()
	dsn := newDatabase(t)
	ctx := testCtx(t)
	now := time.Now()
	earlier := NewReplayGuard(openStore(t, dsn))
	if err := earlier.Consume(ctx, "left-behind", now.Add(-time.Hour)); err != nil {
		t.Fatal(err)
	}
	counter := &pruneCounter{Store: openStore(t, dsn)}
	guard := NewReplayGuard(counter)
	if n, err := guard.Prune(ctx, now); err != nil || n != 1 || counter.prunes != 1 {
		t.Fatalf("first prune: %d pruned, %d queries, %v; want the earlier pod's id, 1 query", n, counter.prunes, err)
	}
	for _, at := range []time.Time{now.Add(time.Minute), now.Add(time.Hour)} {
		if _, err := guard.Prune(ctx, at); err != nil || counter.prunes != 1 {
			t.Fatalf("nothing recorded since: %d queries (%v), want none", counter.prunes-1, err)
		}
	}
	exp := now.Add(10 * time.Second)
	for _, id := range []string{"a", "b"} {
		if err := guard.Consume(ctx, id, exp); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := guard.Prune(ctx, exp); err != nil || counter.prunes != 1 {
		t.Fatalf("before the ids expired (exp plus the grace): %d queries (%v), want none", counter.prunes-1, err)
	}
	after := exp.Add(replayGrace + time.Second)
	if n, err := guard.Prune(ctx, after); err != nil || n != 2 || counter.prunes != 2 {
		t.Fatalf("after they expired: %d pruned, %d queries, %v; want 2 pruned by 1 query", n, counter.prunes-1, err)
	}
	if _, err := guard.Prune(ctx, after.Add(time.Hour)); err != nil || counter.prunes != 2 {
		t.Fatalf("all pruned: %d more queries (%v), want none", counter.prunes-2, err)
	}
}
