package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
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

// Ban keeps a user off the room's maps until Until.
type Ban struct {
	UserID    string
	Until     time.Time
	Reason    string
	BannedBy  string
	CreatedAt time.Time
}

// Message is what the banned user is told, by the join API and the maps
// alike: until when, and why.
func (b Ban) Message() string {
	msg := "banned from this room until " + b.Until.UTC().Format(time.RFC3339)
	if b.Reason != "" {
		msg += ": " + b.Reason
	}
	return msg
}

// BanUser bans the user until ban.Until, replacing a ban it has.
func (p *Postgres) BanUser(ctx context.Context, ban Ban) error {
	_, err := p.db.ExecContext(ctx, `
INSERT INTO bans (user_id, until, reason, banned_by) VALUES ($1, $2, $3, $4)
ON CONFLICT (user_id) DO UPDATE SET until = EXCLUDED.until, reason = EXCLUDED.reason,
    banned_by = EXCLUDED.banned_by, created_at = now()`, ban.UserID, ban.Until, ban.Reason, ban.BannedBy)
	return wrap("banning "+ban.UserID, err)
}

// LiftBan ends the user's ban; false when it had none.
func (p *Postgres) LiftBan(ctx context.Context, userID string) (bool, error) {
	res, err := p.db.ExecContext(ctx, `DELETE FROM bans WHERE user_id = $1`, userID)
	if err != nil {
		return false, wrap("lifting the ban of "+userID, err)
	}
	n, err := res.RowsAffected()
	return n > 0, wrap("lifting the ban of "+userID, err)
}

const banOfSQL = `SELECT until, reason, banned_by, created_at FROM bans WHERE user_id = $1 AND until > $2`

// BanOf is the user's ban in force at now, if any.
func (p *Postgres) BanOf(ctx context.Context, userID string, now time.Time) (Ban, bool, error) {
	b := Ban{UserID: userID}
	err := p.hot(ctx).QueryRowContext(ctx, banOfSQL, userID, now).Scan(&b.Until, &b.Reason, &b.BannedBy, &b.CreatedAt)
	if errors.Is(err, sql.ErrNoRows) {
		return Ban{}, false, nil
	}
	if err != nil {
		return Ban{}, false, wrap("the ban of "+userID, err)
	}
	return b, true, nil
}
