package store

import (
	"context"
	"errors"
	"slices"
	"sync"
	"time"

	"github.com/lib/pq"
)

// Group commit (docs/design.md, "Density"): the critical actions of one
// map that wait for the database at the same moment commit together, in
// one transaction, instead of one transaction each. Nothing about one
// action changes: it is recorded exactly once (its event id), under the
// fence of its character's lease, and its caller hears only after the
// transaction that holds it committed, so an acknowledged action is
// durable and a crash before the commit loses only actions nobody was
// told about. An action that fails on its own account (its item taken,
// its lease lost) fails alone: the group commits again without it.

// CriticalAction is one action of a group: what CommitCritical takes.
type CriticalAction struct {
	Event CriticalEvent
	Moves []Move
}

// errMemberFailed ends a group's transaction when one of its actions
// failed on its own account (commitGroup says which).
var errMemberFailed = errors.New("an action of the group failed")

// CommitCriticalGroup commits the actions as CommitCritical commits each,
// in one transaction, and returns each one's error (nil: committed). An
// action that fails on its own account is left out and the others commit
// without it; a failure of the transaction itself (the database went
// away) is every remaining action's.
func (p *Postgres) CommitCriticalGroup(ctx context.Context, actions []CriticalAction) []error {
	errs := make([]error, len(actions))
	pending := make([]int, 0, len(actions))
	for i := range actions {
		if errs[i] = checkCritical(&actions[i].Event, actions[i].Moves); errs[i] == nil {
			pending = append(pending, i)
		}
	}
	for len(pending) > 0 {
		failed, err := p.tryGroup(ctx, actions, pending)
		if failed < 0 {
			for _, i := range pending {
				errs[i] = wrap("commit critical "+actions[i].Event.EventID, err)
			}
			return errs
		}
		errs[pending[failed]] = wrap("commit critical "+actions[pending[failed]].Event.EventID, err)
		pending = slices.Delete(pending, failed, failed+1)
	}
	return errs
}

// tryGroup commits the pending actions in one transaction. It returns the
// position in pending of the action that failed on its own account with
// its error, or -1 with the transaction's outcome (nil: all committed).
func (p *Postgres) tryGroup(ctx context.Context, actions []CriticalAction, pending []int) (int, error) {
	failed, memberErr := -1, error(nil)
	err := p.inTx(ctx, func(tx runner) error {
		failed = -1
		for n, i := range pending {
			a := &actions[i]
			if err := p.commitCriticalTx(ctx, tx, a.Event, a.Moves); err != nil {
				if !ownFailure(err) {
					return err
				}
				failed, memberErr = n, err
				return errMemberFailed
			}
		}
		return nil
	})
	if errors.Is(err, errMemberFailed) {
		return failed, memberErr
	}
	return -1, err
}

// ownFailure says whether err is an action's own (what it asked cannot
// be done) rather than the transaction's: alone, it would fail the same.
func ownFailure(err error) bool {
	if errors.Is(err, ErrLeaseLost) || errors.Is(err, ErrItemTaken) {
		return true
	}
	var pqErr *pq.Error
	if !errors.As(err, &pqErr) {
		return false
	}
	class := pqErr.Code.Class()
	return class == "22" || class == "23" // data exception, integrity constraint
}

// CriticalGroups gathers a map's critical actions into groups: an action
// that comes while the database is busy with a group waits for the next
// one, with every other that came meanwhile, so the groups grow with the
// load and an action alone is committed at once. Up to Committers groups
// are in flight at a time.
type CriticalGroups struct {
	db      *Postgres
	queue   chan *queuedAction
	max     int
	timeout time.Duration
	observe func(int)
	stop    chan struct{}
	once    sync.Once
	wg      sync.WaitGroup
}

// queuedAction is an action waiting for its group, and its caller waiting
// for the outcome.
type queuedAction struct {
	ctx    context.Context
	action CriticalAction
	done   chan error
}

// GroupOptions shape CriticalGroups; zero values take the defaults.
type GroupOptions struct {
	// Committers is how many groups may be in flight at once (2).
	Committers int
	// MaxGroup bounds the actions of one group (64).
	MaxGroup int
	// Timeout bounds one group's transaction (5 s).
	Timeout time.Duration
	// Observe, when set, is told each group's size as it commits.
	Observe func(actions int)
}

// NewCriticalGroups starts the committers of db; Close stops them.
func NewCriticalGroups(db *Postgres, o GroupOptions) *CriticalGroups {
	if o.Committers <= 0 {
		o.Committers = 2
	}
	if o.MaxGroup <= 0 {
		o.MaxGroup = 64
	}
	if o.Timeout <= 0 {
		o.Timeout = 5 * time.Second
	}
	g := &CriticalGroups{db: db, queue: make(chan *queuedAction, 4*o.MaxGroup), max: o.MaxGroup,
		timeout: o.Timeout, observe: o.Observe, stop: make(chan struct{})}
	for range o.Committers {
		g.wg.Go(g.commit)
	}
	return g
}

// ErrGroupsClosed: the committers stopped before the action was taken up.
var ErrGroupsClosed = errors.New("store: the critical-action committers have stopped")

// CommitCritical commits one action with the next group. It returns when
// the action's group has committed or failed; an action whose ctx ended
// before a group took it up is not committed (ErrUnavailable with ctx's
// error: this try did nothing, the caller may try again).
func (g *CriticalGroups) CommitCritical(ctx context.Context, ev CriticalEvent, moves ...Move) error {
	q := &queuedAction{ctx: ctx, action: CriticalAction{Event: ev, Moves: moves}, done: make(chan error, 1)}
	select {
	case g.queue <- q:
	case <-ctx.Done():
		return notTakenUp(ev, ctx.Err())
	case <-g.stop:
		return ErrGroupsClosed
	}
	return <-q.done // once queued, the outcome is always told
}

// Close stops the committers; actions still queued fail with
// ErrGroupsClosed, none is left waiting.
func (g *CriticalGroups) Close() {
	g.once.Do(func() { close(g.stop) })
	g.wg.Wait()
	for {
		select {
		case q := <-g.queue:
			q.done <- ErrGroupsClosed
		default:
			return
		}
	}
}

// notTakenUp is the error of an action whose caller's ctx ended before a
// group took it up. It is ErrUnavailable, as a transaction that timed out
// is: a caller that tries again after a commit whose answer was lost
// (ErrCommitUnknown) must not take "this try did nothing" for an answer.
func notTakenUp(ev CriticalEvent, ctxErr error) error {
	return wrap("commit critical "+ev.EventID+": not taken up", ctxErr)
}

// commit takes a group at a time until Close.
func (g *CriticalGroups) commit() {
	group := make([]*queuedAction, 0, g.max)
	for {
		select {
		case <-g.stop:
			return
		case q := <-g.queue:
			group = g.gather(append(group[:0], q))
		}
		g.commitGroup(group)
	}
}

// gather adds to group every action already waiting, up to the bound.
func (g *CriticalGroups) gather(group []*queuedAction) []*queuedAction {
	for len(group) < g.max {
		select {
		case q := <-g.queue:
			group = append(group, q)
		default:
			return group
		}
	}
	return group
}

// commitGroup commits the group's live actions and tells each caller.
func (g *CriticalGroups) commitGroup(group []*queuedAction) {
	live := group[:0]
	for _, q := range group {
		if err := q.ctx.Err(); err != nil {
			q.done <- notTakenUp(q.action.Event, err) // its caller gave up first: never committed
			continue
		}
		live = append(live, q)
	}
	if len(live) == 0 {
		return
	}
	if g.observe != nil {
		g.observe(len(live))
	}
	actions := make([]CriticalAction, len(live))
	for i, q := range live {
		actions[i] = q.action
	}
	ctx, cancel := context.WithTimeout(context.Background(), g.timeout)
	defer cancel()
	for i, err := range g.db.CommitCriticalGroup(ctx, actions) {
		live[i].done <- err
	}
}
