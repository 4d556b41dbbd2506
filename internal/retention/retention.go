// Package retention is the manager's pruning of the room databases
// (docs/operations.md, "Data retention"): on the leader, every interval,
// each database the GameRooms name loses what is older than the rooms'
// spec.database.retention, in small batches that never wait on a lock
// (store.Prune), and gets the event log's next hours made ahead. Its
// metrics say what went and how big each table is.
package retention

// +kubebuilder:rbac:groups=game.roomkeeper.dev,resources=gamerooms;mapinstances,verbs=get;list;watch

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/go-logr/logr"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	gamev1 "github.com/roomkeeper/roomkeeper/api/v1"
	"github.com/roomkeeper/roomkeeper/internal/roomdb"
	"github.com/roomkeeper/roomkeeper/internal/store"
)

// Defaults of spec.database.retention, for rooms stored before it had
// them (the CRD defaults the rest).
const (
	DefaultTransfers         = 7 * 24 * time.Hour
	DefaultCriticalEvents    = 30 * 24 * time.Hour
	DefaultEventLog          = 24 * time.Hour
	DefaultCheckpointHistory = 24 * time.Hour
	DefaultDeletedInstances  = 7 * 24 * time.Hour
)

// DefaultInterval is how often the manager prunes.
const DefaultInterval = 10 * time.Minute

// partitionsAhead is how far ahead the event log's hours are made, so a
// pod never has to make its own while the manager runs.
const partitionsAhead = 3 * time.Hour

// Pruner prunes every room database; a manager.Runnable that runs on the
// leader only.
type Pruner struct {
	// Rooms reads the GameRooms and MapInstances (the manager's cache).
	Rooms client.Reader
	// Secrets reads the database Secrets (the API reader: they are not
	// cached).
	Secrets client.Reader
	// Interval between runs (0: DefaultInterval); the first runs at once.
	Interval time.Duration
	// Clock is the time now (nil: time.Now).
	Clock func() time.Time
	Log   logr.Logger

	pool roomdb.Pool // the databases, kept between runs
	mu   sync.Mutex
	// labels are the database label values of the last run's gauges.
	labels []string
}

var _ manager.LeaderElectionRunnable = (*Pruner)(nil)

// NeedLeaderElection: one manager replica prunes.
func (p *Pruner) NeedLeaderElection() bool { return true }

// Start runs until ctx ends, then closes the databases.
func (p *Pruner) Start(ctx context.Context) error {
	interval := p.Interval
	if interval <= 0 {
		interval = DefaultInterval
	}
	defer p.pool.Close()
	ticker := time.NewTicker(interval)
	defer ticker.Stop()
	for {
		run, cancel := context.WithTimeout(ctx, interval)
		_ = p.RunOnce(run) // logged and counted by database: the next run tries again
		cancel()
		select {
		case <-ctx.Done():
			return nil
		case <-ticker.C:
		}
	}
}

// database is one DSN and what the rooms that use it ask.
type database struct {
	dsn string
	// label names it in metrics and logs: the namespace/name of the first
	// (sorted) Secret that holds its DSN, never the DSN (it has a password).
	label     string
	retention store.Retention
}

// RunOnce prunes each database once; a failure is logged and counted,
// and the others go on. It returns the errors joined.
func (p *Pruner) RunOnce(ctx context.Context) error {
	now := p.now()
	dbs, err := p.databases(ctx)
	if err != nil {
		runErrors.WithLabelValues("").Inc()
		p.Log.Error(err, "listing the room databases to prune")
		return err
	}
	live, err := p.liveInstances(ctx)
	if err != nil { // prune nothing of a map's without knowing which exist
		p.Log.Error(err, "listing the map instances: keeping deleted instances' rows this run")
	}
	var errs []error
	labels := make([]string, 0, len(dbs))
	for _, db := range dbs {
		labels = append(labels, db.label)
		if err := p.prune(ctx, db, live, now); err != nil {
			runErrors.WithLabelValues(db.label).Inc()
			p.Log.Error(err, "pruning a room database", "database", db.label)
			errs = append(errs, fmt.Errorf("%s: %w", db.label, err))
		}
	}
	p.forgetGone(labels, dbs)
	return errors.Join(errs...)
}

// prune is one database's run: the event log's next hours, the pruning,
// then the sizes.
func (p *Pruner) prune(ctx context.Context, db database, live []string, now time.Time) error {
	pg, err := p.pool.Open(ctx, db.dsn)
	if err != nil {
		return err
	}
	partErr := pg.EnsureEventLogPartitions(ctx, now, now.Add(partitionsAhead))
	pruned, pruneErr := pg.Prune(ctx, db.retention, store.PruneOptions{Now: now, LiveInstances: live})
	for table, n := range pruned.Rows {
		prunedRows.WithLabelValues(table).Add(float64(n))
	}
	droppedPartitions.Add(float64(pruned.EventLogPartitions))
	if n := sum(pruned.Rows); n > 0 || pruned.EventLogPartitions > 0 {
		p.Log.Info("pruned", "database", db.label, "rows", pruned.Rows, "eventLogHours", pruned.EventLogPartitions)
	}
	sizes, sizeErr := pg.TableSizes(ctx)
	for table, size := range sizes {
		tableBytes.WithLabelValues(db.label, table).Set(float64(size.Bytes))
		tableRows.WithLabelValues(db.label, table).Set(float64(size.Rows))
	}
	return errors.Join(partErr, pruneErr, sizeErr)
}

// databases groups the rooms by DSN, each field of the retention the
// longest any of them asks (0, for ever, longest of all).
func (p *Pruner) databases(ctx context.Context) ([]database, error) {
	var rooms gamev1.GameRoomList
	if err := p.Rooms.List(ctx, &rooms); err != nil {
		return nil, err
	}
	slices.SortFunc(rooms.Items, func(a, b gamev1.GameRoom) int { return strings.Compare(secretOf(&a), secretOf(&b)) })
	byDSN := map[string]*database{}
	var order []string
	for i := range rooms.Items {
		room := &rooms.Items[i]
		if room.Spec.Database == nil || !room.DeletionTimestamp.IsZero() {
			continue
		}
		dsn, err := roomdb.DSN(ctx, p.Secrets, room)
		if err != nil {
			p.Log.Info("skipping a room whose database cannot be read", "room", client.ObjectKeyFromObject(room), "reason", err.Error())
			continue
		}
		r := fromSpec(room.Spec.Database.Retention)
		if db, ok := byDSN[dsn]; ok {
			db.retention = longest(db.retention, r)
			continue
		}
		byDSN[dsn] = &database{dsn: dsn, label: secretOf(room), retention: r}
		order = append(order, dsn)
	}
	out := make([]database, 0, len(order))
	for _, dsn := range order {
		out = append(out, *byDSN[dsn])
	}
	return out, nil
}

// liveInstances are the names of every MapInstance: rows of a map
// instance among them are never a deleted instance's.
func (p *Pruner) liveInstances(ctx context.Context) ([]string, error) {
	var maps gamev1.MapInstanceList
	if err := p.Rooms.List(ctx, &maps); err != nil {
		return nil, err
	}
	names := make([]string, 0, len(maps.Items))
	for _, m := range maps.Items {
		names = append(names, m.Name)
	}
	return names, nil
}

// forgetGone closes the databases no room names any more and drops their
// gauges.
func (p *Pruner) forgetGone(labels []string, dbs []database) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, old := range p.labels {
		if !slices.Contains(labels, old) {
			tableBytes.DeletePartialMatch(map[string]string{"database": old})
			tableRows.DeletePartialMatch(map[string]string{"database": old})
		}
	}
	p.labels = labels
	dsns := make([]string, len(dbs))
	for i, db := range dbs {
		dsns[i] = db.dsn
	}
	p.pool.Keep(dsns)
}

func (p *Pruner) now() time.Time {
	if p.Clock != nil {
		return p.Clock()
	}
	return time.Now()
}

// fromSpec reads a room's retention, with the defaults for what a room
// stored before the field existed lacks.
func fromSpec(r gamev1.DataRetention) store.Retention {
	return store.Retention{
		Transfers:         durationOr(r.Transfers, DefaultTransfers),
		CriticalEvents:    durationOr(r.CriticalEvents, DefaultCriticalEvents),
		EventLog:          durationOr(r.EventLog, DefaultEventLog),
		CheckpointHistory: durationOr(r.CheckpointHistory, DefaultCheckpointHistory),
		DeletedInstances:  durationOr(r.DeletedInstances, DefaultDeletedInstances),
	}
}

func durationOr(d *metav1.Duration, def time.Duration) time.Duration {
	return max(gamev1.DurationOr(d, def), 0)
}

// longest keeps, field by field, the longer retention; 0 (for ever) is
// the longest.
func longest(a, b store.Retention) store.Retention {
	pick := func(x, y time.Duration) time.Duration {
		if x == 0 || y == 0 {
			return 0
		}
		return max(x, y)
	}
	return store.Retention{
		Transfers:         pick(a.Transfers, b.Transfers),
		CriticalEvents:    pick(a.CriticalEvents, b.CriticalEvents),
		EventLog:          pick(a.EventLog, b.EventLog),
		CheckpointHistory: pick(a.CheckpointHistory, b.CheckpointHistory),
		DeletedInstances:  pick(a.DeletedInstances, b.DeletedInstances),
	}
}

func sum(m map[string]int64) (n int64) {
	for _, v := range m {
		n += v
	}
	return n
}

// secretOf is the namespace/name of the room's database Secret.
func secretOf(room *gamev1.GameRoom) string {
	if room.Spec.Database == nil {
		return room.Namespace + "/"
	}
	return room.Namespace + "/" + room.Spec.Database.SecretRef.Name
}
