package store

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/lib/pq"
	"github.com/lib/pq/pqerror"
)

// Retention (docs/operations.md, "Data retention"): the manager's leader
// prunes each room database in small batches, each its own transaction
// that gives up rather than wait for a lock, so pruning never holds up a
// checkpoint or a critical action for longer than pruneLockTimeout.

// Retention says how long each kind of row is kept. A zero duration keeps
// that kind forever.
type Retention struct {
	// Transfers: settled (completed or aborted) or expired transfers, by
	// created_at.
	Transfers time.Duration
	// CriticalEvents: critical_events, item_recovery_audit,
	// admin_actions, and bans that ended. An event id
	// pruned is no longer an idempotency key: keep it far longer than any
	// retry (minutes).
	CriticalEvents time.Duration
	// EventLog: the event_log's hourly partitions, dropped whole once
	// their last hour is older.
	EventLog time.Duration
	// CheckpointHistory: a character's checkpoint_history rows, except its
	// newest, which a replay starts from.
	CheckpointHistory time.Duration
	// DeletedInstances: what a map instance that no longer exists left
	// behind (the items lying on it, its world state), by their last
	// change.
	DeletedInstances time.Duration
}

// The tables Prune reports on, as its Pruned and TableSizes name them.
const (
	TableTransfers         = "transfers"
	TableCriticalEvents    = "critical_events"
	TableRecoveryAudit     = "item_recovery_audit"
	TableEventLog          = "event_log"
	TableCheckpointHistory = "checkpoint_history"
	TableItemOwnership     = "item_ownership"
	TableMapState          = "map_state"
	TableAdminActions      = "admin_actions"
	TableBans              = "bans"
)

// Pruning limits.
const (
	// DefaultPruneBatch is the rows one pruning transaction deletes: a few
	// milliseconds of work, so the row locks it takes are short.
	DefaultPruneBatch = 1000
	// pruneLockTimeout is the longest a pruning statement waits for a
	// lock before giving up (the rest waits for the next run): the work
	// it would queue behind itself waits no longer than that.
	pruneLockTimeout = 50 * time.Millisecond
)

// PruneOptions are one pruning run's inputs.
type PruneOptions struct {
	Now time.Time
	// Batch is the rows per transaction (0: DefaultPruneBatch).
	Batch int
	// LiveInstances are the map instances that exist: their rows are never
	// a deleted instance's. Nil means the caller does not know them, and
	// skips DeletedInstances.
	LiveInstances []string
}

// Pruned counts what one run removed: rows by table, and for event_log
// the partitions dropped (in EventLogPartitions).
type Pruned struct {
	Rows               map[string]int64
	EventLogPartitions int
}

// ErrLockBusy: a pruning statement met a lock it would have had to wait
// for; what it did not prune is left for the next run.
var ErrLockBusy = errors.New("a lock was busy: pruning stopped early")

// pruneStatement deletes up to $2 rows older than $1 from one table.
type pruneStatement struct {
	table string
	query string
}

// pruneStatements, each through an index on its time column. A transfer
// not settled yet is kept until it expired; a character's newest
// checkpoint stays whatever its age.
var pruneStatements = []pruneStatement{
	{TableTransfers, `DELETE FROM transfers WHERE id IN (
    SELECT id FROM transfers WHERE created_at < $1
    AND (state IN ('completed', 'aborted') OR expires_at < $1) LIMIT $2)`},
	{TableCriticalEvents, `DELETE FROM critical_events WHERE event_id IN (
    SELECT event_id FROM critical_events WHERE created_at < $1 LIMIT $2)`},
	{TableRecoveryAudit, `DELETE FROM item_recovery_audit WHERE id IN (
    SELECT id FROM item_recovery_audit WHERE decided_at < $1 LIMIT $2)`},
	{TableAdminActions, `DELETE FROM admin_actions WHERE id IN (
    SELECT id FROM admin_actions WHERE at < $1 LIMIT $2)`},
	{TableBans, `DELETE FROM bans WHERE user_id IN (
    SELECT user_id FROM bans WHERE until < $1 LIMIT $2)`},
	{TableCheckpointHistory, `DELETE FROM checkpoint_history WHERE id IN (
    SELECT h.id FROM checkpoint_history h WHERE h.at < $1
    AND EXISTS (SELECT 1 FROM checkpoint_history n WHERE n.character_id = h.character_id AND n.id > h.id)
    LIMIT $2)`},
}

// orphanStatements delete a deleted instance's rows: $3 are the live
// instances.
var orphanStatements = []pruneStatement{
	{TableItemOwnership, `DELETE FROM item_ownership WHERE item_id IN (
    SELECT item_id FROM item_ownership WHERE owner_kind = 'map' AND updated_at < $1
    AND NOT (owner_id = ANY($3)) LIMIT $2)`},
	{TableMapState, `DELETE FROM map_state WHERE map_instance IN (
    SELECT map_instance FROM map_state WHERE updated_at < $1
    AND NOT (map_instance = ANY($3)) LIMIT $2)`},
}

// Prune deletes what r says is old enough, table by table, batch by
// batch, until a batch finds less than a full one or ctx ends. A lock it
// would wait for stops that table for this run (ErrLockBusy, joined with
// any other error); the other tables go on.
func (p *Postgres) Prune(ctx context.Context, r Retention, opts PruneOptions) (Pruned, error) {
	if opts.Batch <= 0 {
		opts.Batch = DefaultPruneBatch
	}
	out := Pruned{Rows: map[string]int64{}}
	var errs []error
	prune := func(st pruneStatement, keep time.Duration, extra ...any) {
		if keep <= 0 || ctx.Err() != nil {
			return
		}
		n, err := p.pruneTable(ctx, st, opts.Now.Add(-keep), opts.Batch, extra...)
		out.Rows[st.table] += n
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", st.table, err))
		}
	}
	keeps := map[string]time.Duration{TableTransfers: r.Transfers, TableCriticalEvents: r.CriticalEvents,
		TableRecoveryAudit: r.CriticalEvents, TableAdminActions: r.CriticalEvents, TableBans: r.CriticalEvents, TableCheckpointHistory: r.CheckpointHistory}
	for _, st := range pruneStatements {
		prune(st, keeps[st.table])
	}
	if opts.LiveInstances != nil {
		for _, st := range orphanStatements {
			prune(st, r.DeletedInstances, pq.Array(opts.LiveInstances))
		}
	}
	if r.EventLog > 0 && ctx.Err() == nil {
		n, err := p.DropEventLogBefore(ctx, opts.Now.Add(-r.EventLog))
		out.EventLogPartitions = n
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", TableEventLog, err))
		}
	}
	return out, wrap("prune", errors.Join(errs...))
}

// pruneTable runs st until a batch deletes less than batch rows.
func (p *Postgres) pruneTable(ctx context.Context, st pruneStatement, before time.Time, batch int, extra ...any) (int64, error) {
	var total int64
	for ctx.Err() == nil {
		var n int64
		err := p.tryTx(ctx, func(tx runner) error {
			if err := setLockTimeout(ctx, tx); err != nil {
				return err
			}
			res, err := tx.ExecContext(ctx, st.query, append([]any{before, batch}, extra...)...)
			if err != nil {
				return err
			}
			n, err = res.RowsAffected()
			return err
		})
		if err != nil {
			return total, lockBusy(err)
		}
		total += n
		if n < int64(batch) {
			return total, nil
		}
	}
	return total, ctx.Err()
}

// setLockTimeout makes the transaction's statements give up on a lock
// after pruneLockTimeout instead of queueing others behind them.
func setLockTimeout(ctx context.Context, tx runner) error {
	_, err := tx.ExecContext(ctx, fmt.Sprintf("SET LOCAL lock_timeout = '%dms'", pruneLockTimeout.Milliseconds()))
	return err
}

// lockBusy marks a lock timeout as ErrLockBusy.
func lockBusy(err error) error {
	if hasCode(err, pqerror.LockNotAvailable) {
		return fmt.Errorf("%w: %w", ErrLockBusy, err)
	}
	return err
}

// TableSize is one table's footprint: bytes on disk with its indexes (and
// TOAST, and for event_log its partitions), and its rows as Postgres
// estimates them (the planner's count, as of the last vacuum or analyze).
type TableSize struct {
	Bytes int64
	Rows  int64
}

// tableSizesSQL sizes each table of the schema (a partitioned one as the
// sum of its partitions).
const tableSizesSQL = `
SELECT c.relname,
    CASE WHEN c.relkind = 'p'
        THEN COALESCE((SELECT sum(pg_total_relation_size(t.relid)) FROM pg_partition_tree(c.oid) t), 0)
        ELSE pg_total_relation_size(c.oid) END::bigint,
    COALESCE((SELECT sum(GREATEST(p.reltuples, 0)) FROM pg_class p
              WHERE p.oid = c.oid OR p.oid IN (SELECT t.relid FROM pg_partition_tree(c.oid) t WHERE t.isleaf)), 0)::bigint
FROM pg_class c
WHERE c.relnamespace = current_schema()::regnamespace AND c.relname = ANY($1)`

// TableSizes sizes the tables retention keeps in check and the ones
// beside them that grow with players.
func (p *Postgres) TableSizes(ctx context.Context) (map[string]TableSize, error) {
	tables := []string{TableTransfers, TableCriticalEvents, TableRecoveryAudit, TableAdminActions, TableEventLog,
		TableCheckpointHistory, TableItemOwnership, TableMapState, "characters", "character_state", "checkpoint_audit"}
	rows, err := p.db.QueryContext(ctx, tableSizesSQL, pq.Array(tables))
	if err != nil {
		return nil, wrap("table sizes", err)
	}
	defer rows.Close()
	sizes := map[string]TableSize{}
	for rows.Next() {
		var name string
		var s TableSize
		if err := rows.Scan(&name, &s.Bytes, &s.Rows); err != nil {
			return nil, wrap("table sizes", err)
		}
		sizes[name] = s
	}
	return sizes, wrap("table sizes", rows.Err())
}
