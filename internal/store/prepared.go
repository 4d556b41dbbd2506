package store

import (
	"context"
	"database/sql"
	"sync"
	"sync/atomic"
	"time"
)

// The statements a map pod runs for every action, checkpoint, crossing,
// renewal and event-log batch run prepared: Postgres parses and plans an
// unprepared statement every time, which was a third of its CPU in the
// 50-room soak (docs/benchmarks.md, "Density"). database/sql prepares a
// statement on a connection the first time that connection runs it.
// Either way a statement is one round trip (binary_parameters, OpenDB).

// hotQueries are the statements prepared.
var hotQueries = []string{
	// a critical action (items.go)
	insertEventSQL, moveFromMapSQL, moveFromOwnerSQL,
	// checkpoints, the world's, the event log, leases (states.go, worlds.go, eventlog.go, leases.go)
	saveStatesSQL, auditCheckpointSQL, saveWorldSQL, appendEventsSQL, renewLeasesSQL,
	// a crossing, both sides (transfers.go), and the hello's checks (characters.go, admin.go)
	saveStatesForHandOverSQL, handOverSQL, insertTransfersSQL, advanceTransferSQL, lockTransfersSQL,
	claimTransferLeasesSQL, advanceArrivalsSQL, loadStatesSQL, loadItemsOfSQL, completeTransfersSQL,
	expiredTransfersSQL, consumeTokenSQL, banOfSQL,
}

// prepareRetry is how long after a failed prepare (the database away)
// statements run unprepared before one tries again.
const prepareRetry = time.Second

// preparedStatements holds the hot statements once prepared.
type preparedStatements struct {
	stmts atomic.Pointer[map[string]*sql.Stmt]
	// mu is held while preparing; retryAt, under it, is when a prepare
	// that failed may be tried again.
	mu      sync.Mutex
	retryAt time.Time
}

// prepare prepares the hot statements, once per store. It takes a
// connection of its own, so it runs before a transaction begins, never
// inside one (a full pool would wait on itself). It never makes a
// statement wait on another's prepare, and a failure (the database is
// away) is tried again only after prepareRetry: meanwhile the statements
// run unprepared, as they do while another prepares them.
func (p *Postgres) prepare(ctx context.Context) error {
	ps := &p.prepared
	if ps.stmts.Load() != nil || !ps.mu.TryLock() {
		return nil
	}
	defer ps.mu.Unlock()
	if ps.stmts.Load() != nil || time.Now().Before(ps.retryAt) {
		return nil
	}
	stmts := make(map[string]*sql.Stmt, len(hotQueries))
	for _, q := range hotQueries {
		s, err := p.db.PrepareContext(ctx, q)
		if err != nil {
			for _, s := range stmts {
				_ = s.Close()
			}
			ps.retryAt = time.Now().Add(prepareRetry)
			return err
		}
		stmts[q] = s
	}
	ps.stmts.Store(&stmts)
	return nil
}

// close releases the prepared statements.
func (ps *preparedStatements) close() {
	ps.mu.Lock()
	defer ps.mu.Unlock()
	if stmts := ps.stmts.Swap(nil); stmts != nil {
		for _, s := range *stmts {
			_ = s.Close()
		}
	}
}

// loaded is the prepared statements, nil before prepare made them.
func (ps *preparedStatements) loaded() map[string]*sql.Stmt {
	if stmts := ps.stmts.Load(); stmts != nil {
		return *stmts
	}
	return nil
}

// runner runs statements: a *sql.DB, a *sql.Tx, or a preparedRunner.
type runner interface {
	ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error)
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
}

// preparedRunner runs the hot statements prepared, the others as plain
// does (the pool, or tx).
type preparedRunner struct {
	plain runner
	tx    *sql.Tx // nil: on the pool
	stmts map[string]*sql.Stmt
}

// hot is the pool running the store's prepared statements, preparing
// them first if no one has.
func (p *Postgres) hot(ctx context.Context) preparedRunner {
	_ = p.prepare(ctx)
	return preparedRunner{plain: p.db, stmts: p.prepared.loaded()}
}

// withPrepared is tx running the store's prepared statements (those
// prepare made; none before it did): every transaction of inTx and tryTx
// runs so, and inTx prepares them before it begins.
func (p *Postgres) withPrepared(tx *sql.Tx) preparedRunner {
	return preparedRunner{plain: tx, tx: tx, stmts: p.prepared.loaded()}
}

// stmt is query's prepared statement (in the transaction, on one), or nil.
func (r preparedRunner) stmt(ctx context.Context, query string) *sql.Stmt {
	s, ok := r.stmts[query]
	switch {
	case !ok:
		return nil
	case r.tx != nil:
		return r.tx.StmtContext(ctx, s)
	}
	return s
}

func (r preparedRunner) ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error) {
	if s := r.stmt(ctx, query); s != nil {
		return s.ExecContext(ctx, args...)
	}
	return r.plain.ExecContext(ctx, query, args...)
}

func (r preparedRunner) QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row {
	if s := r.stmt(ctx, query); s != nil {
		return s.QueryRowContext(ctx, args...)
	}
	return r.plain.QueryRowContext(ctx, query, args...)
}

func (r preparedRunner) QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error) {
	if s := r.stmt(ctx, query); s != nil {
		return s.QueryContext(ctx, args...)
	}
	return r.plain.QueryContext(ctx, query, args...)
}
