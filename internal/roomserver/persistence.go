package roomserver

import (
	"context"
	"sync"
	"time"

	"github.com/roomkeeper/roomkeeper/internal/store"
	"github.com/roomkeeper/roomkeeper/internal/token"
)

// What a map keeps in Postgres, it keeps through one value, Server.db:
// its players' checkpoints (the persister, persist.go), their authority
// leases (the lease keeper, leases.go), loading and admitting characters
// (admit.go), critical actions (critical.go), transfers (transfer.go,
// handover.go), critical-item recovery (recovery.go) and the loot on its
// ground (loot.go). A map run without a database has no db (nil): nothing
// of it is written, and every player plays as a guest would.

// persistence is the store as this map uses it: bound to the map's
// identity (instance, pod, lease TTL, clock), with the goroutines that
// write in the background.
type persistence struct {
	// Store is the database. The optional capabilities a store may have
	// beyond the interface (looking items up, critical-item recovery) are
	// asked of it, db.Store, not of db: embedding promotes only the
	// interface's methods.
	store.Store
	instance, pod string
	leaseTTL      time.Duration
	clock         func() time.Time

	checkpoints *persister
	leases      *leaseKeeper
	// events writes the event log; nil when the store has none.
	events *eventLog
	// groups commit critical actions together (store.CriticalGroups); nil
	// when the store cannot.
	groups *store.CriticalGroups
}

func newPersistence(s *Server, st store.Store) *persistence {
	db := &persistence{Store: st, instance: s.cfg.Instance, pod: s.cfg.Pod, leaseTTL: s.cfg.LeaseTTL, clock: s.deps.Clock}
	db.checkpoints = newPersister(s, db, s.cfg.CheckpointInterval)
	db.leases = newLeaseKeeper(s, db)
	if appender, ok := st.(eventAppender); ok {
		db.events = newEventLog(s, appender)
	}
	if pg, ok := st.(*store.Postgres); ok {
		db.groups = store.NewCriticalGroups(pg, store.GroupOptions{Timeout: s.cfg.CriticalTimeout,
			Observe: func(n int) { s.metrics.criticalGroup.Observe(float64(n)) }})
	}
	return db
}

// CommitCritical commits a critical action together with the others that
// wait for the database at the same moment (docs/design.md, "Density").
func (db *persistence) CommitCritical(ctx context.Context, ev store.CriticalEvent, moves ...store.Move) error {
	if db.groups == nil {
		return db.Store.CommitCritical(ctx, ev, moves...)
	}
	return db.groups.CommitCritical(ctx, ev, moves...)
}

// close stops the committers of critical actions.
func (db *persistence) close() {
	if db.groups != nil {
		db.groups.Close()
	}
}

// run runs the background writers until ctx ends.
func (db *persistence) run(ctx context.Context, workers *sync.WaitGroup) {
	workers.Go(func() { db.checkpoints.run(ctx) })
	workers.Go(func() { db.leases.run(ctx) })
	if db.events != nil {
		workers.Go(func() { db.events.run(ctx) })
	}
}

// logEvent adds an event that happened outside the world to the event
// log, if the map keeps one.
func (db *persistence) logEvent(ev store.LoggedEvent) {
	if db != nil && db.events != nil {
		db.events.add(ev)
	}
}

// claimLease makes this map the character's authority (a join).
func (db *persistence) claimLease(ctx context.Context, character string) (store.Lease, error) {
	return db.ClaimLease(ctx, character, db.instance, db.pod, db.leaseTTL, db.clock())
}

// resumeLease takes the lease of a session resumed on this pod, if it is
// still that session's (epoch).
func (db *persistence) resumeLease(ctx context.Context, character string, epoch int64) (store.Lease, error) {
	return db.ResumeLease(ctx, character, db.instance, db.pod, epoch, db.leaseTTL, db.clock())
}

// arriveByTransfer admits the character of transfer id on this map, as
// its destination or, coming back, its source.
func (db *persistence) arriveByTransfer(ctx context.Context, id, character string) (store.Arrival, error) {
	return db.ArriveByTransfer(ctx, id, character, db.instance, db.pod, db.leaseTTL, db.clock())
}

// arriveByTransfers admits characters arriving by their transfers on this
// map, as its destination or, coming back, its source.
func (db *persistence) arriveByTransfers(ctx context.Context, reqs []store.ArrivalRequest) ([]store.ArrivalResult, error) {
	return db.ArriveByTransfers(ctx, reqs, db.instance, db.pod, db.leaseTTL, db.clock())
}

// renewLeases extends this map's leases by the TTL.
func (db *persistence) renewLeases(ctx context.Context, leases []store.Lease) error {
	return db.RenewLeases(ctx, db.instance, leases, db.leaseTTL, db.clock())
}

// expiredTransfers lists this map's transfers out whose tokens expired.
func (db *persistence) expiredTransfers(ctx context.Context) ([]store.Transfer, error) {
	return db.ExpiredTransfers(ctx, db.instance, db.clock())
}

// tokenPruner is what store.ReplayGuard adds to a token.ReplayGuard: it
// prunes only when ids it recorded can have expired.
type tokenPruner interface {
	Prune(ctx context.Context, now time.Time) (int64, error)
}

// pruneTokens deletes the consumed ticket ids that expired: through the
// replay guard when it keeps track of its own, so an idle map asks its
// database nothing; else every time.
func (db *persistence) pruneTokens(ctx context.Context, replay token.ReplayGuard) error {
	prune := db.PruneTokens
	if guard, ok := replay.(tokenPruner); ok {
		prune = guard.Prune
	}
	_, err := prune(ctx, db.clock())
	return err
}

// saveStates writes a checkpoint batch under this map's leases.
func (db *persistence) saveStates(ctx context.Context, batch []store.CharacterState) error {
	_, err := db.SaveStates(ctx, db.instance, batch)
	return err
}
