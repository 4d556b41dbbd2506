package store

import (
	"context"

	"github.com/lib/pq"
)

// Items returns the stored rows of the given item ids, wherever the items
// are. A map uses it at start: a generated item with a row has moved (a
// committed pickup gave it to someone), one without still lies at its spawn.
func (p *Postgres) Items(ctx context.Context, ids []string) ([]Item, error) {
	items, err := queryAll(ctx, p.db, scanItem,
		`SELECT `+itemColumns+` FROM item_ownership WHERE item_id = ANY($1) ORDER BY item_id`, pq.Array(ids))
	return items, wrap("looking items up", err)
}
