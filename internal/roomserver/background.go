package roomserver

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/roomkeeper/roomkeeper/internal/sim"
)

// Work the server does off the connection's reader and off the tick
// (critical actions, transfers, attacks and doors, seat releases, the
// bookkeeping after them) follows one policy:
//
//   - it runs on a goroutine of the server's workGroup, so Shutdown can
//     wait for it, and never starts once Shutdown has stopped waiting;
//   - its context comes from the group (work.context): bounded by its
//     own timeout, and ended early when Shutdown's grace runs out, so a
//     transfer waiting for its destination cannot hold the pod past it;
//   - a failure nobody is waiting for (a lease release, a sweep, a
//     prune) is logged and counted by noteFailure, never dropped.
//
// The steps that undo or finish a change already decided elsewhere (a
// reservation cancelled after a failed commit, a committed pickup put in
// the world, a player let go after a failed transfer) run through
// applyInWorld instead: they must not be abandoned because the map is busy.

// workGroup tracks the goroutines the server starts for requests and
// timers. Unlike a sync.WaitGroup it may be added to while it is waited
// for, from anywhere, and it refuses new work once closed.
type workGroup struct {
	ctx    context.Context
	cancel context.CancelFunc

	mu      sync.Mutex
	running int
	idle    chan struct{} // closed while running is 0
	closed  bool
}

func newWorkGroup() *workGroup {
	ctx, cancel := context.WithCancel(context.Background())
	idle := make(chan struct{})
	close(idle)
	return &workGroup{ctx: ctx, cancel: cancel, idle: idle}
}

// Go runs fn on a goroutine of its own and reports true, unless the
// group is closed: then fn does not run.
func (g *workGroup) Go(fn func()) bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.closed {
		return false
	}
	if g.running == 0 {
		g.idle = make(chan struct{})
	}
	g.running++
	go func() {
		defer g.done()
		fn()
	}()
	return true
}

func (g *workGroup) done() {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.running--; g.running == 0 {
		close(g.idle)
	}
}

// context is the context of one piece of work: it ends after timeout, or
// when the group's work is cancelled.
func (g *workGroup) context(timeout time.Duration) (context.Context, context.CancelFunc) {
	return context.WithTimeout(g.ctx, timeout)
}

// wait waits until no work runs, or until ctx ends.
func (g *workGroup) wait(ctx context.Context) error {
	g.mu.Lock()
	idle := g.idle
	g.mu.Unlock()
	select {
	case <-idle:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// cancelWork ends the contexts of the work running and to come.
func (g *workGroup) cancelWork() { g.cancel() }

// close refuses new work; what runs goes on.
func (g *workGroup) close() {
	g.mu.Lock()
	g.closed = true
	g.mu.Unlock()
}

// applyInWorld runs fn on the tick goroutine and waits until it ran or
// the map stopped (then fn never runs, and nothing needs it to: the map
// is gone). It is for the steps that follow a decision already made (a
// commit, a refusal, a failed transfer): unlike a request's own world
// call, it is not given up because the map is busy.
func (s *Server) applyInWorld(fn func(*sim.World)) {
	_ = s.loop.Do(context.Background(), fn) // without a deadline it fails only with sim.ErrStopped
}

// The kinds of background work whose failures noteFailure counts (the op
// label of roomkeeper_roomserver_background_failures_total).
const (
	opReleaseLease     = "release_lease"
	opCheckpoint       = "checkpoint"
	opPruneTokens      = "prune_tokens"
	opSweepTransfers   = "sweep_transfers"
	opAbortTransfer    = "abort_transfer"
	opUndoTransfer     = "undo_transfer"
	opCompleteTransfer = "complete_transfer"
	opSpendResumeToken = "spend_resume_token"
	opSyncLoot         = "sync_loot"
	opLayMissing       = "lay_missing_items"
	opWelcomeInventory = "welcome_inventory"
	opWorldCheckpoint  = "world_checkpoint"
)

// failureLogEvery is how often one kind of failure is logged; each is
// counted in roomkeeper_roomserver_background_failures_total.
const failureLogEvery = time.Minute

// noteFailure records a failure of background work nobody waits for: it
// is counted by op and logged at most once a failureLogEvery per op. A nil
// error, or the map's loop having stopped (the map is shutting down), is
// nothing to note.
func (s *Server) noteFailure(op string, err error) {
	if err == nil || errors.Is(err, sim.ErrStopped) {
		return
	}
	s.metrics.backgroundFailures.WithLabelValues(op).Inc()
	if s.failureLog.due(op, time.Now()) {
		s.deps.Log.Warn("Background work failed (logged once a minute per kind; counted in roomkeeper_roomserver_background_failures_total)",
			"op", op, "err", err)
	}
}

// rateLog says when a kind of message is due again.
type rateLog struct {
	mu   sync.Mutex
	last map[string]time.Time
}

// due reports whether key was last logged more than failureLogEvery
// before now, and if so marks it logged now.
func (l *rateLog) due(key string, now time.Time) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	if last, ok := l.last[key]; ok && now.Sub(last) < failureLogEvery {
		return false
	}
	if l.last == nil {
		l.last = map[string]time.Time{}
	}
	l.last[key] = now
	return true
}
