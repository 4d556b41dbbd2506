package store

import (
	"context"
	"database/sql"
	"sync"
)

// The statements of a critical action run prepared: lib/pq runs a
// statement with arguments in two round trips, parsed and planned every
// time, and a prepared one in one round trip with its plan kept
// (docs/design.md, "Density"). database/sql prepares a statement on a
// connection the first time a transaction there uses it.

// hotQueries are the statements prepared.
var hotQueries = []string{insertEventSQL, moveFromMapSQL, moveFromOwnerSQL}

// preparedStatements holds the hot statements once prepared.
type preparedStatements struct {
	mu    sync.Mutex
	stmts map[string]*sql.Stmt
}

// prepare prepares the hot statements, once per store. It takes a
// connection of its own, so it runs before a transaction begins, never
// inside one (a full pool would wait on itself). A failure (the database
// is away) leaves them unprepared: the action runs them unprepared, and
// the next one tries again.
func (p *Postgres) prepare(ctx context.Context) error {
	ps := &p.prepared
	ps.mu.Lock()
	defer ps.mu.Unlock()
	if ps.stmts != nil {
		return nil
	}
	stmts := make(map[string]*sql.Stmt, len(hotQueries))
	for _, q := range hotQueries {
		s, err := p.db.PrepareContext(ctx, q)
		if err != nil {
			for _, s := range stmts {
				_ = s.Close()
			}
			return err
		}
		stmts[q] = s
	}
	ps.stmts = stmts
	return nil
}

// close releases the prepared statements.
func (ps *preparedStatements) close() {
	ps.mu.Lock()
	defer ps.mu.Unlock()
	for _, s := range ps.stmts {
		_ = s.Close()
	}
	ps.stmts = nil
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
	p.prepared.mu.Lock()
	defer p.prepared.mu.Unlock()
	return preparedTx{Tx: tx, stmts: p.prepared.stmts}
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
