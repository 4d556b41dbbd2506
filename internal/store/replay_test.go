package store

import (
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
