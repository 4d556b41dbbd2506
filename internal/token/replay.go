package token

import (
	"container/heap"
	"context"
	"fmt"
	"sync"
	"time"
)

// replayGrace is how long past exp a consumed jti is remembered. A Verifier
// accepts a ticket up to its leeway past exp; were the id forgotten at exp,
// the ticket could be replayed inside that window.
const replayGrace = time.Minute

// ReplayGuard makes a ticket single-use. Consume records jti until exp and
// fails with ErrReplayed when the id was consumed before. Call it after
// Verify succeeds and before acting on the ticket.
type ReplayGuard interface {
	Consume(ctx context.Context, jti string, exp time.Time) error
}

// MemoryReplayGuard is the in-process ReplayGuard. It only protects one
// process, so a room with several pods needs the shared (Postgres) one. It
// remembers each id until a minute past its exp (longer than any Verifier
// leeway) and then prunes it, so memory is bounded by the tickets consumed in
// one TTL plus a minute. It is safe for concurrent use.
type MemoryReplayGuard struct {
	clock func() time.Time

	mu     sync.Mutex
	seen   map[string]struct{}
	expiry expiryHeap
}

// NewMemoryReplayGuard returns an empty guard. A nil clock means time.Now.
func NewMemoryReplayGuard(clock func() time.Time) *MemoryReplayGuard {
	return &MemoryReplayGuard{clock: orNow(clock), seen: map[string]struct{}{}}
}

// Consume records jti until exp (plus a grace period) and returns ErrReplayed
// when it is already recorded.
func (g *MemoryReplayGuard) Consume(ctx context.Context, jti string, exp time.Time) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if jti == "" {
		return fmt.Errorf("%w: jti is empty", ErrMalformed)
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	g.prune(g.clock())
	if _, ok := g.seen[jti]; ok {
		return ErrReplayed
	}
	g.seen[jti] = struct{}{}
	heap.Push(&g.expiry, expiring{jti: jti, forgetAt: exp.Add(replayGrace)})
	return nil
}

// prune forgets the ids whose time is up. Ids leave in expiry order, so each
// Consume pays only for the ids that actually expired since the last one.
func (g *MemoryReplayGuard) prune(now time.Time) {
	for len(g.expiry) > 0 && !now.Before(g.expiry[0].forgetAt) {
		e := heap.Pop(&g.expiry).(expiring)
		delete(g.seen, e.jti)
	}
}

// expiring is one remembered id and when it may be forgotten.
type expiring struct {
	jti      string
	forgetAt time.Time
}

// expiryHeap is a min-heap of ids by forgetAt (container/heap.Interface).
type expiryHeap []expiring

func (h expiryHeap) Len() int           { return len(h) }
func (h expiryHeap) Less(i, j int) bool { return h[i].forgetAt.Before(h[j].forgetAt) }
func (h expiryHeap) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }

func (h *expiryHeap) Push(x any) { *h = append(*h, x.(expiring)) }

func (h *expiryHeap) Pop() any {
	old := *h
	last := old[len(old)-1]
	*h = old[:len(old)-1]
	return last
}
