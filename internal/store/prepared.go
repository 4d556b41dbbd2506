package store

import (
	"context"
	"database/sql"
	"sync"
	"sync/atomic"
	"time"
)

// The statements of a critical action run prepared: lib/pq runs a
// statement with arguments in two round trips, parsed and planned every
// time, and a prepared one in one round trip with its plan kept
// (docs/design.md, "Density"). database/sql prepares a statement on a
// connection the first time a transaction there uses it.

// hotQueries are the statements prepared.
var hotQueries = []string{insertEventSQL, moveFromMapSQL, moveFromOwnerSQL}

// prepareRetry is how long after a failed prepare (the database away)
// actions run unprepared before one tries again.
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
// inside one (a full pool would wait on itself). It never makes an
// action wait on another's prepare, and a failure (the database is away)
// is tried again only after prepareRetry: meanwhile the actions run the
// statements unprepared, as they do while another prepares them.
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

// txRunner runs statements in a transaction: a *sql.Tx, or a preparedTx.
type txRunner interface {
	ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error)
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
}

// preparedTx runs the hot statements of tx prepared, the others as they are.
type preparedTx struct {
	*sql.Tx
	stmts map[string]*sql.Stmt
}

// withPrepared is tx running the store's prepared statements (those
// prepare made; none before it did).
func (p *Postgres) withPrepared(tx *sql.Tx) preparedTx {
	ptx := preparedTx{Tx: tx}
	if stmts := p.prepared.stmts.Load(); stmts != nil {
		ptx.stmts = *stmts
	}
	return ptx
}

func (t preparedTx) ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error) {
	if s, ok := t.stmts[query]; ok {
		return t.StmtContext(ctx, s).ExecContext(ctx, args...)
	}
	return t.Tx.ExecContext(ctx, query, args...)
}

func (t preparedTx) QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row {
	if s, ok := t.stmts[query]; ok {
		return t.StmtContext(ctx, s).QueryRowContext(ctx, args...)
	}
	return t.Tx.QueryRowContext(ctx, query, args...)
}
