package joinapi

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/roomkeeper/roomkeeper/internal/store"
)

// Accounts is what the join API needs of a room's database: the store's
// accounts (*store.Postgres) and the cap on characters (postgresAccounts
// adds it). Every error that means the database is unreachable wraps
// store.ErrUnavailable.
type Accounts interface {
	// ListCharacters returns the user's characters, oldest first.
	ListCharacters(ctx context.Context, userID string) ([]store.Character, error)
	// CreateCharacter gives the user a new character, active when
	// makeActive or when the user has no active one.
	CreateCharacter(ctx context.Context, userID, name string, makeActive bool) (store.Character, error)
	// DeleteCharacter deletes the user's character (store.ErrNotOwner,
	// store.ErrNotFound); its items of the critical kinds are released
	// for their maps to bring back.
	DeleteCharacter(ctx context.Context, userID, id string, critical []string) error
	// ActiveCharacter returns the user's active character, making one
	// active or creating a default one when there is none.
	ActiveCharacter(ctx context.Context, userID string) (store.Character, error)
	// CharacterOf returns the character if it is the user's
	// (store.ErrNotOwner, store.ErrNotFound).
	CharacterOf(ctx context.Context, userID, id string) (store.Character, error)
	// BanOf is the user's ban in force at now, if any.
	BanOf(ctx context.Context, userID string, now time.Time) (store.Ban, bool, error)
	// Capped runs create, which may add one character to the database,
	// only while the database holds fewer than limit characters, and
	// while no other Capped call on the same database runs, from this
	// process or another: so the count never passes limit. At limit it
	// returns store.ErrCharacterCap without running create.
	Capped(ctx context.Context, limit int, create func() (store.Character, error)) (store.Character, error)
}

var _ Accounts = (*postgresAccounts)(nil)

// OpenFunc opens the accounts of the database at dsn. The join API calls it
// once per DSN and keeps the result until it is closed; a failed open is
// tried again on the next request.
type OpenFunc func(ctx context.Context, dsn string) (Accounts, error)

// database is one DSN's accounts, opened on first use. Opening holds a
// slot of its own (not the map's lock), so a database that does not answer
// holds up only its own rooms, and each waiter only as long as its context.
type database struct {
	slot     chan struct{} // one token: whoever holds it may open
	accounts Accounts      // guarded by slot
	used     time.Time     // guarded by databases.mu
}

// The databases the join API keeps open. DSNs come from the rooms'
// Secrets, which tenants write: a DSN nobody used lately is closed, and no
// more than maxDatabases are open at once.
const (
	// maxDatabases bounds the distinct DSNs open at once; past it a room
	// with yet another DSN is persistence_unavailable until one closes.
	maxDatabases = 64
	// closeUnusedAfter closes a DSN's pool nobody asked for this long:
	// far longer than any request that may still use it (requests end
	// within their timeout).
	closeUnusedAfter = 5 * time.Minute
)

// databases holds one Accounts per DSN: rooms that share a database share
// its connection pool.
type databases struct {
	open OpenFunc
	now  func() time.Time

	mu    sync.Mutex
	byDSN map[string]*database
}

func newDatabases(open OpenFunc) *databases {
	return &databases{open: open, now: time.Now, byDSN: map[string]*database{}}
}

// get returns the DSN's accounts, opening them on first use.
func (d *databases) get(ctx context.Context, dsn string) (Accounts, error) {
	db, err := d.entry(dsn)
	if err != nil {
		return nil, err
	}
	select {
	case db.slot <- struct{}{}:
	case <-ctx.Done():
		return nil, fmt.Errorf("waiting for the database to open: %w: %w", store.ErrUnavailable, ctx.Err())
	}
	defer func() { <-db.slot }()
	if db.accounts == nil {
		accounts, err := d.open(ctx, dsn)
		if err != nil {
			return nil, err
		}
		db.accounts = accounts
	}
	return db.accounts, nil
}

// entry is the DSN's entry, marked used now, made when there is none and
// the bound leaves room; the entries unused for closeUnusedAfter close.
func (d *databases) entry(dsn string) (*database, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	now := d.now()
	d.closeUnused(now)
	db, ok := d.byDSN[dsn]
	if !ok {
		if len(d.byDSN) >= maxDatabases {
			return nil, fmt.Errorf("the join API has %d databases open, its maximum: %w", maxDatabases, store.ErrUnavailable)
		}
		db = &database{slot: make(chan struct{}, 1)}
		d.byDSN[dsn] = db
	}
	db.used = now
	return db, nil
}

// closeUnused closes the pools nobody asked for since closeUnusedAfter
// before now (one being opened is left for the next time); d.mu is held.
func (d *databases) closeUnused(now time.Time) {
	for dsn, db := range d.byDSN {
		if now.Sub(db.used) < closeUnusedAfter {
			continue
		}
		select {
		case db.slot <- struct{}{}:
			closeAccounts(db.accounts)
			db.accounts = nil
			<-db.slot
			delete(d.byDSN, dsn)
		default:
		}
	}
}

// closeAccounts closes accounts that can be closed; an error closing a
// pool nobody uses loses nothing.
func closeAccounts(a Accounts) {
	if c, ok := a.(interface{ Close() error }); ok {
		_ = c.Close()
	}
}

// Close closes every opened database that can be closed. It waits for
// opens in progress, which end with their requests' contexts.
func (d *databases) Close() error {
	d.mu.Lock()
	defer d.mu.Unlock()
	var errs []error
	for dsn, db := range d.byDSN {
		db.slot <- struct{}{}
		if c, ok := db.accounts.(interface{ Close() error }); ok {
			errs = append(errs, c.Close())
		}
		db.accounts = nil
		<-db.slot
		delete(d.byDSN, dsn)
	}
	return errors.Join(errs...)
}
