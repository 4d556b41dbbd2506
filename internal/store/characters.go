package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/lib/pq"
	"github.com/lib/pq/pqerror"
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

// ConsumeToken records a ticket id until exp; the second time it returns
// ErrReplayed. Of any number of concurrent calls with one id, exactly one
// succeeds: the primary key decides.
func (p *Postgres) ConsumeToken(ctx context.Context, jti string, exp time.Time) error {
	res, err := p.db.ExecContext(ctx,
		`INSERT INTO consumed_tokens (jti, expires_at) VALUES ($1, $2) ON CONFLICT (jti) DO NOTHING`,
		jti, exp)
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

// claimLeaseSQL takes the lease when there is none, when it expired, when
// this map already holds it (a reconnect), or when its holder has handed it
// over for a transfer (DESIGN.md section 3.5: the destination claims it).
// Otherwise the WHERE leaves the row alone and nothing is returned. One
// statement, so two maps racing serialise on the row and one wins.
const claimLeaseSQL = `
INSERT INTO character_authority AS a (character_id, map_instance, pod, epoch, expires_at, in_transfer)
VALUES ($1, $2, $3, nextval('character_authority_epoch_seq'), $4, false)
ON CONFLICT (character_id) DO UPDATE
SET map_instance = EXCLUDED.map_instance, pod = EXCLUDED.pod, epoch = EXCLUDED.epoch,
    expires_at = EXCLUDED.expires_at, in_transfer = false
WHERE a.expires_at <= $5 OR a.map_instance = EXCLUDED.map_instance OR a.in_transfer
RETURNING epoch`

// ClaimLease makes mapInstance/pod authoritative for the character until
// now+ttl with a new, higher epoch, unless another map holds an unexpired
// lease (ErrLeaseHeld). The character must exist (ErrNotFound).
func (p *Postgres) ClaimLease(ctx context.Context, characterID, mapInstance, pod string, ttl time.Duration, now time.Time) (Lease, error) {
	lease := Lease{CharacterID: characterID, MapInstance: mapInstance, Pod: pod, ExpiresAt: now.Add(ttl)}
	err := p.db.QueryRowContext(ctx, claimLeaseSQL, characterID, mapInstance, pod, lease.ExpiresAt, now).Scan(&lease.Epoch)
	switch {
	case errors.Is(err, sql.ErrNoRows):
		return Lease{}, fmt.Errorf("store: character %s: %w", characterID, ErrLeaseHeld)
	case hasCode(err, pqerror.ForeignKeyViolation):
		return Lease{}, fmt.Errorf("store: character %s: %w", characterID, ErrNotFound)
	case err != nil:
		return Lease{}, wrap("claim lease", err)
	}
	return lease, nil
}

// renewLeasesSQL extends the leases that still carry this map and the
// epoch it was given, and returns which ones it extended.
const renewLeasesSQL = `
UPDATE character_authority AS a SET expires_at = $4
FROM unnest($2::text[], $3::bigint[]) AS l(character_id, epoch)
WHERE a.character_id = l.character_id AND a.epoch = l.epoch AND a.map_instance = $1
RETURNING a.character_id`

// RenewLeases extends the leases this map holds to now+ttl in one
// statement. The ones another map took over are reported in a
// *LeaseLostError (errors.Is ErrLeaseLost); the others are still extended.
func (p *Postgres) RenewLeases(ctx context.Context, mapInstance string, leases []Lease, ttl time.Duration, now time.Time) error {
	if len(leases) == 0 {
		return nil
	}
	ids := make([]string, len(leases))
	epochs := make([]int64, len(leases))
	for i, l := range leases {
		ids[i], epochs[i] = l.CharacterID, l.Epoch
	}
	rows, err := p.db.QueryContext(ctx, renewLeasesSQL, mapInstance, pq.Array(ids), pq.Array(epochs), now.Add(ttl))
	if err != nil {
		return wrap("renew leases", err)
	}
	renewed, err := scanStrings(rows)
	if err != nil {
		return wrap("renew leases", err)
	}
	return lostLeases(ids, renewed)
}

// lostLeases is a *LeaseLostError naming the ids missing from renewed, or nil.
func lostLeases(ids []string, renewed []string) error {
	kept := make(map[string]bool, len(renewed))
	for _, id := range renewed {
		kept[id] = true
	}
	var lost []string
	for _, id := range ids {
		if !kept[id] {
			lost = append(lost, id)
		}
	}
	if lost == nil {
		return nil
	}
	return &LeaseLostError{CharacterIDs: lost}
}

// ReleaseLease ends the lease if this map still holds it with that epoch;
// a lease already taken over is left to its new holder.
func (p *Postgres) ReleaseLease(ctx context.Context, lease Lease) error {
	_, err := p.db.ExecContext(ctx,
		`DELETE FROM character_authority WHERE character_id = $1 AND map_instance = $2 AND epoch = $3`,
		lease.CharacterID, lease.MapInstance, lease.Epoch)
	return wrap("release lease", err)
}

// scanStrings reads a one-column result and closes rows.
func scanStrings(rows *sql.Rows) ([]string, error) {
	defer rows.Close()
	var out []string
	for rows.Next() {
		var s string
		if err := rows.Scan(&s); err != nil {
			return nil, err
		}
		out = append(out, s)
	}
	return out, rows.Err()
}
