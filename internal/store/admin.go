package store

import (
	"context"
	"encoding/json"
	"time"
)

// AdminAction is one row of admin_actions: what a platform operator did
// through the manager's admin API (docs/operations.md, "Moderation").
type AdminAction struct {
	At time.Time
	// Actor is the Kubernetes user who did it.
	Actor  string
	Action string
	// Target names whom or what: a character, a user, a map instance.
	Target string
	Detail map[string]any
}

// RecordAdminAction appends the action to admin_actions.
func (p *Postgres) RecordAdminAction(ctx context.Context, a AdminAction) error {
	detail, err := json.Marshal(a.Detail)
	if err != nil {
		return err
	}
	if a.Detail == nil {
		detail = []byte("{}")
	}
	_, err = p.db.ExecContext(ctx, `INSERT INTO admin_actions (actor, action, target, detail) VALUES ($1, $2, $3, $4)`,
		a.Actor, a.Action, a.Target, string(detail))
	return wrap("recording an admin action", err)
}

// AdminActions lists the recorded actions since since, oldest first, at
// most limit (0: 1,000).
func (p *Postgres) AdminActions(ctx context.Context, since time.Time, limit int) ([]AdminAction, error) {
	if limit <= 0 {
		limit = 1000
	}
	actions, err := queryAll(ctx, p.db, func(row rowScanner) (a AdminAction, err error) {
		var detail []byte
		if err = row.Scan(&a.At, &a.Actor, &a.Action, &a.Target, &detail); err == nil {
			err = json.Unmarshal(detail, &a.Detail)
		}
		return a, err
	}, `SELECT at, actor, action, target, detail FROM admin_actions WHERE at >= $1 ORDER BY id LIMIT $2`, since, limit)
	return actions, wrap("admin actions", err)
}
