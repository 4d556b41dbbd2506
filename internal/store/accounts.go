package store

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"errors"
	"fmt"
	"time"

	"github.com/lib/pq"
)

// The accounts side of the store: what the join API's characters endpoints
// and its joins without a characterId need. A user has several characters
// and at most one active (the partial unique index characters_one_active_idx
// guarantees it whatever the callers do).

// DefaultCharacterName is the name of the character a user gets on a first
// join, when they have none.
const DefaultCharacterName = "hero"

// MaxCharactersPerUser bounds how many characters one user may keep. Anyone
// can make up an authKey, so without a bound one client could fill the table.
const MaxCharactersPerUser = 16

// ErrTooManyCharacters: the user already has MaxCharactersPerUser characters.
var ErrTooManyCharacters = errors.New("the user has the maximum number of characters")

// characterIDBytes is the random part of a generated character id: 96 bits
// never collide in practice, and nobody can guess another user's ids.
const characterIDBytes = 12

// userLockClass is the first key of the two-key advisory lock that
// serialises one user's account changes. Two-key locks live in a key space
// of their own, apart from the one-key lock the migrations take.
const userLockClass = 0x726b6368 // "rkch"

// capLockClass keys the advisory lock that holds the creations of
// characters in one database one at a time, across processes.
const capLockClass = 0x726b6363 // "rkcc"

// ErrCharacterCap is returned by WithCharacterCap when the database holds
// its maximum number of characters.
var ErrCharacterCap = errors.New("store: the database holds its maximum number of characters")

// WithCharacterCap runs create, which may add characters, while no other
// WithCharacterCap call on this database runs (in any process), and only
// if the database holds fewer than limit characters: else ErrCharacterCap.
// The count is the whole database's: characters carry no room. create
// commits before the lock is released (read committed), so the next
// holder's count includes what it made.
func (p *Postgres) WithCharacterCap(ctx context.Context, limit int, create func() error) error {
	tx, err := p.db.BeginTx(ctx, nil)
	if err != nil {
		return wrap("character cap", err)
	}
	defer func() { _ = tx.Rollback() }() // releases the lock; the transaction wrote nothing
	if _, err := tx.ExecContext(ctx, fmt.Sprintf(`SELECT pg_advisory_xact_lock(%d, 0)`, capLockClass)); err != nil {
		return wrap("character cap: lock", contextEnded(ctx, err))
	}
	var n int
	if err := tx.QueryRowContext(ctx, `SELECT count(*) FROM characters`).Scan(&n); err != nil {
		return wrap("character cap: count", contextEnded(ctx, err))
	}
	if n >= limit {
		return ErrCharacterCap
	}
	return create()
}

// characterColumns are the columns Character is scanned from, in scan order.
const characterColumns = `id, user_id, name, active, created_at`

// Character is one of a user's characters.
type Character struct {
	ID        string
	UserID    string
	Name      string
	Active    bool
	CreatedAt time.Time
}

// ListCharacters returns the user's characters, oldest first.
func (p *Postgres) ListCharacters(ctx context.Context, userID string) ([]Character, error) {
	out, err := queryAll(ctx, p.db, scanCharacter,
		`SELECT `+characterColumns+` FROM characters WHERE user_id = $1 ORDER BY created_at, id`, userID)
	return out, wrap("list characters", err)
}

// CreateCharacter gives the user a new character with a generated id. It
// becomes the active one when makeActive is set (the previous active one
// is deactivated) or when the user has no active character, so a user's
// first character is active. A user at MaxCharactersPerUser gets
// ErrTooManyCharacters.
func (p *Postgres) CreateCharacter(ctx context.Context, userID, name string, makeActive bool) (Character, error) {
	if userID == "" {
		return Character{}, errors.New("store: create character: empty user id")
	}
	var c Character
	err := p.inTx(ctx, func(tx runner) error {
		var err error
		c, err = createCharacter(ctx, tx, userID, name, makeActive)
		return err
	})
	if err != nil {
		return Character{}, wrap("create character", err)
	}
	return c, nil
}

func createCharacter(ctx context.Context, tx runner, userID, name string, makeActive bool) (Character, error) {
	if err := lockUser(ctx, tx, userID); err != nil {
		return Character{}, err
	}
	var n int
	var hasActive bool
	err := tx.QueryRowContext(ctx,
		`SELECT count(*), coalesce(bool_or(active), false) FROM characters WHERE user_id = $1`, userID).Scan(&n, &hasActive)
	switch {
	case err != nil:
		return Character{}, err
	case n >= MaxCharactersPerUser:
		return Character{}, ErrTooManyCharacters
	}
	if makeActive && hasActive {
		if _, err := tx.ExecContext(ctx, `UPDATE characters SET active = false WHERE user_id = $1 AND active`, userID); err != nil {
			return Character{}, err
		}
	}
	return insertCharacter(ctx, tx, userID, name, makeActive || !hasActive)
}

// ActiveCharacter returns the user's active character. A user without one
// gets one: their oldest character becomes active, or, when they have
// none, a new one named DefaultCharacterName. Concurrent calls for one user
// all return the same character.
func (p *Postgres) ActiveCharacter(ctx context.Context, userID string) (Character, error) {
	if userID == "" {
		return Character{}, errors.New("store: active character: empty user id")
	}
	// The common case, a returning player, costs one statement and no lock.
	c, err := scanCharacter(p.db.QueryRowContext(ctx,
		`SELECT `+characterColumns+` FROM characters WHERE user_id = $1 AND active`, userID))
	switch {
	case err == nil:
		return c, nil
	case !errors.Is(err, sql.ErrNoRows):
		return Character{}, wrap("active character", err)
	}
	err = p.inTx(ctx, func(tx runner) error {
		var err error
		c, err = ensureActive(ctx, tx, userID)
		return err
	})
	if err != nil {
		return Character{}, wrap("active character", err)
	}
	return c, nil
}

// ensureActive runs under the user's lock, so of concurrent first joins
// one creates the character and the others find it.
func ensureActive(ctx context.Context, tx runner, userID string) (Character, error) {
	if err := lockUser(ctx, tx, userID); err != nil {
		return Character{}, err
	}
	c, err := scanCharacter(tx.QueryRowContext(ctx,
		`SELECT `+characterColumns+` FROM characters WHERE user_id = $1 AND active`, userID))
	if !errors.Is(err, sql.ErrNoRows) {
		return c, err
	}
	c, err = scanCharacter(tx.QueryRowContext(ctx, `
UPDATE characters SET active = true
WHERE id = (SELECT id FROM characters WHERE user_id = $1 ORDER BY created_at, id LIMIT 1)
RETURNING `+characterColumns, userID))
	if !errors.Is(err, sql.ErrNoRows) {
		return c, err
	}
	return insertCharacter(ctx, tx, userID, DefaultCharacterName, true)
}

// CharacterOf returns the character id if it is the user's: ErrNotOwner
// when it belongs to someone else, ErrNotFound when it does not exist.
func (p *Postgres) CharacterOf(ctx context.Context, userID, id string) (Character, error) {
	c, err := scanCharacter(p.db.QueryRowContext(ctx,
		`SELECT `+characterColumns+` FROM characters WHERE id = $1`, id))
	switch {
	case errors.Is(err, sql.ErrNoRows):
		return Character{}, fmt.Errorf("store: character %s: %w", id, ErrNotFound)
	case err != nil:
		return Character{}, wrap("character of", err)
	case c.UserID != userID:
		return Character{}, fmt.Errorf("store: character %s: %w", id, ErrNotOwner)
	}
	return c, nil
}

// DeleteCharacter deletes the user's character id with its state and
// authority lease (cascade), and releases what it held, in one
// transaction: its items of the critical kinds (those the room's content
// packs keep by a policy) are marked destroyed, each with an audit row
// (reason owner_deleted), for their map's next recovery pass to bring
// back to their anchors; its other items go with it. It returns ErrNotOwner when the character is
// someone else's and ErrNotFound when it does not exist. Deleting the
// active character leaves the user with none active.
func (p *Postgres) DeleteCharacter(ctx context.Context, userID, id string, critical []string) error {
	var deleted bool
	err := p.inTx(ctx, func(tx runner) error {
		var err error
		if deleted, err = execOne(ctx, tx, `DELETE FROM characters WHERE id = $1 AND user_id = $2`, id, userID); err != nil || !deleted {
			return err
		}
		if _, err := tx.ExecContext(ctx, releaseCriticalSQL, id, pq.Array(critical)); err != nil {
			return err
		}
		_, err = tx.ExecContext(ctx, `DELETE FROM item_ownership WHERE owner_kind = 'character' AND owner_id = $1`, id)
		return err
	})
	if err != nil || deleted {
		return wrap("delete character", err)
	}
	// Nothing deleted: say whether it is someone else's or does not exist.
	if _, err := p.CharacterOf(ctx, userID, id); err != nil {
		return err
	}
	// Only a concurrent delete-and-recreate of the same random id gets here.
	return fmt.Errorf("store: character %s: %w", id, ErrNotFound)
}

// releaseCriticalSQL marks a deleted character's items of the critical
// kinds ($2) destroyed and audits each.
const releaseCriticalSQL = `
WITH released AS (
    UPDATE item_ownership o SET owner_kind = 'destroyed', owner_id = '', slot = '', revision = o.revision + 1, updated_at = now()
    WHERE o.owner_kind = 'character' AND o.owner_id = $1 AND o.kind = ANY($2)
    RETURNING o.item_id, o.kind, o.x, o.y
)
INSERT INTO item_recovery_audit (event_id, item_id, kind, reason, old_owner_kind, old_owner_id, old_x, old_y, new_owner_kind)
SELECT 'owner_deleted/' || $1 || '/' || item_id, item_id, kind, 'owner_deleted', 'character', $1, x, y, 'destroyed'
FROM released
ON CONFLICT (event_id) DO NOTHING`

// lockUser takes the transaction-scoped advisory lock of one user. The
// class is inlined: with binary parameters lib/pq would send an int64.
func lockUser(ctx context.Context, tx runner, userID string) error {
	_, err := tx.ExecContext(ctx, fmt.Sprintf(`SELECT pg_advisory_xact_lock(%d, hashtext($1))`, userLockClass), userID)
	return err
}

// insertCharacter stores a new character with a generated id.
// clock_timestamp, not now(): characters made in one transaction still
// sort in the order they were made.
func insertCharacter(ctx context.Context, tx runner, userID, name string, active bool) (Character, error) {
	id, err := newCharacterID()
	if err != nil {
		return Character{}, err
	}
	return scanCharacter(tx.QueryRowContext(ctx, `
INSERT INTO characters (id, user_id, name, active, created_at) VALUES ($1, $2, $3, $4, clock_timestamp())
RETURNING `+characterColumns, id, userID, name, active))
}

// newCharacterID is "c-" and 96 random bits in hex. The prefix keeps
// generated ids apart from guests' ("guest-...").
func newCharacterID() (string, error) {
	b := make([]byte, characterIDBytes)
	if _, err := rand.Read(b); err != nil {
		return "", fmt.Errorf("generating a character id: %w", err)
	}
	return "c-" + hex.EncodeToString(b), nil
}

// rowScanner is *sql.Row or *sql.Rows.
type rowScanner interface {
	Scan(dest ...any) error
}

func scanCharacter(row rowScanner) (Character, error) {
	var c Character
	err := row.Scan(&c.ID, &c.UserID, &c.Name, &c.Active, &c.CreatedAt)
	return c, err
}
