package store

import (
	"context"

	"github.com/lib/pq"
)

// Items returns the stored rows of the given item ids, wherever the items
// are. A map uses it at start: a generated item with a row has moved (a
// committed pickup gave it to someone), one without still lies at its spawn.
func (p *Postgres) Items(ctx context.Context, ids []string) ([]Item, error) {
	rows, err := p.db.QueryContext(ctx,
		`SELECT `+itemColumns+` FROM item_ownership WHERE item_id = ANY($1) ORDER BY item_id`, pq.Array(ids))
	if err != nil {
		return nil, wrap("looking items up", err)
	}
	defer rows.Close()
	var items []Item
	for rows.Next() {
		var it Item
		if err := rows.Scan(&it.ItemID, &it.Kind, &it.OwnerKind, &it.OwnerID, &it.X, &it.Y, &it.Revision, &it.UpdatedAt); err != nil {
			return nil, wrap("looking items up", err)
		}
		items = append(items, it)
	}
	return items, wrap("looking items up", rows.Err())
}
