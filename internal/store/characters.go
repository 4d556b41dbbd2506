package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"
)

// EnsureCharacter creates the character for userID if it is new and
// returns ErrNotOwner if it belongs to someone else.
func (p *Postgres) EnsureCharacter(ctx context.Context, characterID, userID string) error {
	if characterID == "" || userID == "" {
		return errors.New("store: ensure character: empty character or user id")
	}
	// Insert first: a new character costs one statement. ON CONFLICT waits
	// for a concurrent insert of the same id, so the lookup that follows a
	// conflict sees the winner's row.
	res, err := p.db.ExecContext(ctx,
		`INSERT INTO characters (id, user_id) VALUES ($1, $2) ON CONFLICT (id) DO NOTHING`,
		characterID, userID)
	if err != nil {
		return wrap("ensure character", err)
	}
	n, err := res.RowsAffected()
	if err != nil {
		return wrap("ensure character", err)
	}
	if n == 1 {
		return nil // a new character, now userID's
	}
	var owner string
	err = p.db.QueryRowContext(ctx, `SELECT user_id FROM characters WHERE id = $1`, characterID).Scan(&owner)
	switch {
	case errors.Is(err, sql.ErrNoRows): // deleted in between
		return fmt.Errorf("store: character %s: %w", characterID, ErrNotFound)
	case err != nil:
		return wrap("ensure character", err)
	case owner != userID:
		return fmt.Errorf("store: character %s: %w", characterID, ErrNotOwner)
	}
	return nil
}

const consumeTokenSQL = `INSERT INTO consumed_tokens (jti, expires_at) VALUES ($1, $2) ON CONFLICT (jti) DO NOTHING`

// ConsumeToken records a ticket id until exp; the second time it returns
// ErrReplayed. Of any number of concurrent calls with one id, exactly one
// succeeds: the primary key decides.
func (p *Postgres) ConsumeToken(ctx context.Context, jti string, exp time.Time) error {
	res, err := p.hot(ctx).ExecContext(ctx, consumeTokenSQL, jti, exp)
	if err != nil {
		return wrap("consume token", err)
	}
	n, err := res.RowsAffected()
	if err != nil {
		return wrap("consume token", err)
	}
	if n == 0 {
		return ErrReplayed
	}
	return nil
}

// PruneTokens deletes the ids that expired before now and says how many.
func (p *Postgres) PruneTokens(ctx context.Context, now time.Time) (int64, error) {
	res, err := p.db.ExecContext(ctx, `DELETE FROM consumed_tokens WHERE expires_at < $1`, now)
	if err != nil {
		return 0, wrap("prune tokens", err)
	}
	n, err := res.RowsAffected()
	return n, wrap("prune tokens", err)
}
