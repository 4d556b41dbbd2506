package store

import (
	"context"
	"errors"
	"fmt"
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
	err := g.store.ConsumeToken(ctx, jti, exp.Add(replayGrace))
	if errors.Is(err, ErrReplayed) {
		return token.ErrReplayed
	}
	return err
}
