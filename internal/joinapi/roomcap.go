package joinapi

import (
	"context"
	"errors"
	"fmt"

	"github.com/roomkeeper/roomkeeper/internal/store"
)

// DefaultMaxCharactersPerRoom is the cap on a room's characters when
// Options.MaxCharactersPerRoom is zero. Anyone can make up authKeys, and
// each new one gets a character on its first join: without a cap, one
// client could fill the room's database.
const DefaultMaxCharactersPerRoom = 100_000

// errRoomFull: the room's database holds its maximum number of characters.
var errRoomFull = errors.New("the room has its maximum number of characters")

// capLockClass is the first key of the two-key advisory lock that holds
// the creations of characters in one database one at a time, across
// manager replicas ("rkcc"; the store's per-user locks are "rkch").
const capLockClass = 0x726b6363

// postgresAccounts are the store's accounts with the cap the join API
// keeps on them.
type postgresAccounts struct {
	*store.Postgres
	// creating holds one token: the one request of this process that may
	// wait for the database's lock. The others wait here, not each on a
	// pooled connection, so a queue of creations never takes the
	// connections the creation in progress needs.
	creating chan struct{}
}

// openPostgres is the default OpenFunc: store.Open, which also migrates.
func openPostgres(ctx context.Context, dsn string) (Accounts, error) {
	p, err := store.Open(ctx, dsn)
	if err != nil {
		return nil, err
	}
	return &postgresAccounts{Postgres: p, creating: make(chan struct{}, 1)}, nil
}

// Capped counts the characters under a transaction-scoped advisory lock
// and runs create before releasing it. The count is the whole database's:
// characters carry no room, so rooms that share a database share the cap.
// The store has no call to count characters or to hold creations across
// processes, hence the two statements here on its pool. Read committed:
// a creation commits before its lock is released, so the next holder's
// count includes it.
func (p *postgresAccounts) Capped(ctx context.Context, limit int, create func() (store.Character, error)) (store.Character, error) {
	select {
	case p.creating <- struct{}{}:
	case <-ctx.Done():
		return store.Character{}, unavailable("waiting to create a character", ctx.Err())
	}
	defer func() { <-p.creating }()
	tx, err := p.DB().BeginTx(ctx, nil)
	if err != nil {
		return store.Character{}, unavailable("counting characters", err)
	}
	defer func() { _ = tx.Rollback() }() // releases the lock; the transaction wrote nothing
	if _, err := tx.ExecContext(ctx, fmt.Sprintf(`SELECT pg_advisory_xact_lock(%d, 0)`, capLockClass)); err != nil {
		return store.Character{}, unavailable("locking character creation", err)
	}
	var n int
	if err := tx.QueryRowContext(ctx, `SELECT count(*) FROM characters`).Scan(&n); err != nil {
		return store.Character{}, unavailable("counting characters", err)
	}
	if n >= limit {
		return store.Character{}, errRoomFull
	}
	return create()
}

// unavailable marks a failure of the cap's own statements as the
// database's: they are a lock and a count, which fail only when the
// database does not serve.
func unavailable(op string, err error) error {
	return fmt.Errorf("joinapi: %s: %w: %w", op, store.ErrUnavailable, err)
}

// underCap runs create, which may make one character, within the room's
// cap; at the cap it answers room_full and counts the refusal.
func (h *Handler) underCap(ctx context.Context, accounts Accounts, create func() (store.Character, error)) (store.Character, error) {
	c, err := accounts.Capped(ctx, h.maxCharacters, create)
	if errors.Is(err, errRoomFull) {
		charactersRefused.Inc()
		return store.Character{}, fail(CodeRoomFull,
			"this room has its maximum number of characters (%d): no new character can be made", h.maxCharacters)
	}
	return c, err
}

// activeCharacter is the user's active character, as
// Accounts.ActiveCharacter gives it; only when the user has no character
// at all, and one is created, does it count against the room's cap. A
// returning player costs one statement, as before.
func (h *Handler) activeCharacter(ctx context.Context, accounts Accounts, user string) (store.Character, error) {
	list, err := accounts.ListCharacters(ctx, user)
	if err != nil {
		return store.Character{}, err
	}
	for _, c := range list {
		if c.Active {
			return c, nil
		}
	}
	if len(list) > 0 { // the oldest becomes active: nothing is created
		return accounts.ActiveCharacter(ctx, user)
	}
	return h.underCap(ctx, accounts, func() (store.Character, error) { return accounts.ActiveCharacter(ctx, user) })
}
