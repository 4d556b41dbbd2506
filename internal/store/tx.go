package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/lib/pq"
)

// Retries of a transaction that failed on a serialization failure or a
// deadlock: the other transaction won, running ours again will work.
const (
	txAttempts    = 4
	txBackoffBase = 5 * time.Millisecond
)

// inTx runs fn in a transaction and commits it, running it again (fn must
// be safe to repeat) when Postgres aborted it for a serialization failure
// or a deadlock. Errors are returned unwrapped; the caller wraps them.
func (p *Postgres) inTx(ctx context.Context, fn func(runner) error) error {
	_ = p.prepare(ctx) // before the transaction takes a connection
	for attempt := 1; ; attempt++ {
		err := p.tryTx(ctx, fn)
		if err == nil || attempt == txAttempts || !isRetryable(err) {
			return err
		}
		if err := backoff(ctx, attempt); err != nil {
			return err
		}
	}
}

// tryTx is one attempt. The deferred Rollback undoes everything unless
// Commit ran first (then it is a no-op returning sql.ErrTxDone).
func (p *Postgres) tryTx(ctx context.Context, fn func(runner) error) error {
	tx, err := p.db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer func() { _ = tx.Rollback() }()
	if err := fn(p.withPrepared(tx)); err != nil {
		return contextEnded(ctx, err)
	}
	return commitOutcome(ctx, tx.Commit())
}

// commitOutcome names the error of a Commit. sql.ErrTxDone means
// database/sql had rolled the transaction back before sending COMMIT, and
// a transaction rollback (class 40: serialization failure, deadlock) or an
// integrity violation (class 23, a deferred constraint) is the server
// refusing it: either way nothing was committed. Anything else leaves the
// outcome unknown (ErrCommitUnknown): the connection broke, the context
// ended while COMMIT was on the wire, or the server was shut down or
// cancelled the statement, which it may do after the commit record is
// written and before it answers.
func commitOutcome(ctx context.Context, err error) error {
	switch {
	case err == nil:
		return nil
	case errors.Is(err, sql.ErrTxDone):
		return contextEnded(ctx, err)
	case refusedCommit(err):
		return err
	default:
		return fmt.Errorf("%w: %w", ErrCommitUnknown, err)
	}
}

func refusedCommit(err error) bool {
	pqErr := pq.As(err)
	return pqErr != nil && (pqErr.Code.Class() == "40" || pqErr.Code.Class() == "23")
}

// contextEnded names the context's end in err when the transaction was
// over because of it: database/sql rolls a transaction back as its
// context ends, and what runs in it after (its commit included) then
// fails with sql.ErrTxDone, which alone would not say that nothing was
// done and the caller may try again (isUnavailable).
func contextEnded(ctx context.Context, err error) error {
	if errors.Is(err, sql.ErrTxDone) && ctx.Err() != nil {
		return fmt.Errorf("%w: %w", ctx.Err(), err)
	}
	return err
}

// backoff waits before attempt+1: exponential with jitter, so two
// transactions that deadlocked do not collide again in lockstep.
func backoff(ctx context.Context, attempt int) error {
	d := txBackoffBase << (attempt - 1)
	d += rand.N(d)
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// execOne runs a statement and reports whether it changed a row.
func execOne(ctx context.Context, tx runner, query string, args ...any) (bool, error) {
	res, err := tx.ExecContext(ctx, query, args...)
	if err != nil {
		return false, err
	}
	n, err := res.RowsAffected()
	return n > 0, err
}
