package client

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/roomkeeper/roomkeeper/internal/protocol"
)

// Connect joins through opts.Reconnect.Rejoin (a JoinAPI's Reconnect
// policy) and connects to the map it names. A try refused for the moment,
// not for the player (the map busy or its database down, the join API
// answering 500 or 429, a handshake that timed out on a loaded node), is
// made again with a new ticket after the policy's backoff, as a reconnect
// would: a player's first join is as patient as its way back after a
// drop. State.JoinTries says how many tries it took. It gives up on a
// refusal for good, after the policy's Attempts, or when ctx ends.
func Connect(ctx context.Context, opts Options) (*Client, error) {
	r := opts.Reconnect
	if r == nil || r.Rejoin == nil {
		return nil, errors.New("client: Connect needs Options.Reconnect with a Rejoin")
	}
	for n := 0; ; n++ {
		c, err := joinOnce(ctx, r, opts)
		if err == nil {
			c.update(func(s *State) { s.JoinTries = n + 1 })
			return c, nil
		}
		if refusedForGood(err) || n == r.attempts()-1 {
			return nil, fmt.Errorf("joining (try %d): %w", n+1, err)
		}
		wait := r.delay(n)
		if after, ok := RetryAfter(err); ok {
			wait = max(wait, after)
		}
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("joining (try %d): %w", n+1, err)
		case <-time.After(wait):
		}
	}
}

// joinOnce is one try of Connect: a new ticket, then the map's welcome.
func joinOnce(ctx context.Context, r *Reconnect, opts Options) (*Client, error) {
	endpoint, ticket, err := r.Rejoin(ctx)
	if err != nil {
		return nil, err
	}
	return Dial(ctx, endpoint, protocol.Hello{Ticket: ticket}, opts)
}
