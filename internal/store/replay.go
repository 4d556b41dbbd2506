package store

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/roomkeeper/roomkeeper/internal/token"
)

// replayGrace is how long past exp a consumed ticket id is kept. It matches
// the in-memory guard of package token: a Verifier accepts a ticket a
// little past exp, so forgetting the id at exp would reopen that window.
const replayGrace = time.Minute

// ReplayGuard is the token.ReplayGuard every pod of a room shares: it
// records ticket ids through a Store (the consumed_tokens table), so a
// ticket used on one pod is refused on all of them.
type ReplayGuard struct {
	store Store

	mu sync.Mutex
	// pruned: Prune has run once (the ids earlier pods left are gone).
	pruned bool
	// due is when an id recorded here since the last prune has expired
	// (zero: none recorded); latest the newest expiry recorded here.
	due, latest time.Time
}

var _ token.ReplayGuard = (*ReplayGuard)(nil)

// NewReplayGuard returns a guard that consumes ids through s.
func NewReplayGuard(s Store) *ReplayGuard {
	return &ReplayGuard{store: s}
}

// Consume records jti until a minute past exp. A second use is
// token.ErrReplayed; a database that cannot be reached is ErrUnavailable,
// so the caller refuses the ticket for now rather than as replayed.
func (g *ReplayGuard) Consume(ctx context.Context, jti string, exp time.Time) error {
	if jti == "" {
		return fmt.Errorf("%w: jti is empty", token.ErrMalformed)
	}
	until := exp.Add(replayGrace)
	err := g.store.ConsumeToken(ctx, jti, until)
	if errors.Is(err, ErrReplayed) {
		return token.ErrReplayed
	}
	if err == nil {
		g.recorded(until)
	}
	return err
}

func (g *ReplayGuard) recorded(until time.Time) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.due.IsZero() {
		g.due = until
	}
	if until.After(g.latest) {
		g.latest = until
	}
}

// Prune deletes the recorded ids that expired before now, and says how
// many. It asks the database only when there can be some of its own: the
// first time (what pods before this one left), then once an id it recorded
// since has expired. So a map nobody joins does not keep a database
// connection busy for it (docs/operations.md, "Multi-tenancy and limits").
func (g *ReplayGuard) Prune(ctx context.Context, now time.Time) (int64, error) {
	g.mu.Lock()
	due, first := g.due, !g.pruned
	g.mu.Unlock()
	if !first && (due.IsZero() || now.Before(due)) {
		return 0, nil
	}
	n, err := g.store.PruneTokens(ctx, now)
	if err != nil {
		return 0, err
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	g.pruned = true
	// What is left of this guard's expires by latest at the latest.
	g.due = time.Time{}
	if g.latest.After(now) {
		g.due = g.latest
	}
	return n, nil
}
