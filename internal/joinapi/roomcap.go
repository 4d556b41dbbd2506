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

// Capped runs create under store.WithCharacterCap, one request of this
// process at a time.
func (p *postgresAccounts) Capped(ctx context.Context, limit int, create func() (store.Character, error)) (store.Character, error) {
	select {
	case p.creating <- struct{}{}:
	case <-ctx.Done():
		return store.Character{}, fmt.Errorf("joinapi: waiting to create a character: %w: %w", store.ErrUnavailable, ctx.Err())
	}
	defer func() { <-p.creating }()
	var c store.Character
	err := p.WithCharacterCap(ctx, limit, func() (err error) {
		c, err = create()
		return err
	})
	return c, err
}

// underCap runs create, which may make one character, within the room's
// cap; at the cap it answers room_full and counts the refusal.
func (h *Handler) underCap(ctx context.Context, accounts Accounts, create func() (store.Character, error)) (store.Character, error) {
	c, err := accounts.Capped(ctx, h.maxCharacters, create)
	if errors.Is(err, store.ErrCharacterCap) {
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
