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

// A character's authority lease (character_authority) makes it
// authoritative in at most one map. Every claim takes a new epoch from a
// sequence; every write for the character (checkpoints, critical events,
// transfers) names the epoch it was made under and is refused once another
// claim has replaced it: the fence that keeps two pods from writing one
// character.

// claimLeaseSQL takes the lease when there is none, when it expired, or
// when this map already holds it (a reconnect). A lease in transfer is
// not claimable here, even by its destination: only ArriveByTransfer, with
// the transfer's id, takes it before it expires. Otherwise the WHERE
// leaves the row alone and nothing is returned. One statement, so two
// maps racing serialise on the row and one wins.
const claimLeaseSQL = `
INSERT INTO character_authority AS a (character_id, map_instance, pod, epoch, expires_at, in_transfer)
VALUES ($1, $2, $3, nextval('character_authority_epoch_seq'), $4, false)
ON CONFLICT (character_id) DO UPDATE
SET map_instance = EXCLUDED.map_instance, pod = EXCLUDED.pod, epoch = EXCLUDED.epoch,
    expires_at = EXCLUDED.expires_at, in_transfer = false, transfer_id = NULL
WHERE a.expires_at <= $5 OR (a.map_instance = EXCLUDED.map_instance AND NOT a.in_transfer)
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

// resumeLeaseSQL takes the lease a resumed session held: on this map under
// its epoch, whether the pod that held it is gone (crashed: the lease may
// not have expired yet) or still up (a resume on another pod of the map),
// or when no lease is left (the pod released it when it shut down). A
// lease another claim replaced leaves nothing returned.
const resumeLeaseSQL = `
INSERT INTO character_authority AS a (character_id, map_instance, pod, epoch, expires_at, in_transfer)
VALUES ($1, $2, $3, nextval('character_authority_epoch_seq'), $4, false)
ON CONFLICT (character_id) DO UPDATE
SET pod = EXCLUDED.pod, epoch = EXCLUDED.epoch, expires_at = EXCLUDED.expires_at
WHERE a.map_instance = EXCLUDED.map_instance AND a.epoch = $5 AND NOT a.in_transfer
RETURNING epoch`

// ResumeLease takes the lease of a resumed session (see resumeLeaseSQL).
func (p *Postgres) ResumeLease(ctx context.Context, characterID, mapInstance, pod string, epoch int64, ttl time.Duration, now time.Time) (Lease, error) {
	lease := Lease{CharacterID: characterID, MapInstance: mapInstance, Pod: pod, ExpiresAt: now.Add(ttl)}
	err := p.db.QueryRowContext(ctx, resumeLeaseSQL, characterID, mapInstance, pod, lease.ExpiresAt, epoch).Scan(&lease.Epoch)
	switch {
	case errors.Is(err, sql.ErrNoRows):
		return Lease{}, fmt.Errorf("store: character %s, epoch %d: %w", characterID, epoch, ErrSessionEnded)
	case hasCode(err, pqerror.ForeignKeyViolation):
		return Lease{}, fmt.Errorf("store: character %s: %w", characterID, ErrNotFound)
	case err != nil:
		return Lease{}, wrap("resume lease", err)
	}
	return lease, nil
}

// renewLeasesSQL extends the leases that still carry this map and the
// epoch it was given, and returns which ones it extended. A lease handed
// over for a transfer carries a new epoch, so it is never renewed here.
// It locks the rows in character order first, as a checkpoint's fence
// (saveStatesSQL) does: an update in the join's order deadlocked with a
// checkpoint of the same characters under load.
const renewLeasesSQL = `
WITH held AS (
SELECT a.character_id FROM character_authority AS a
JOIN unnest($2::text[], $3::bigint[]) AS l(character_id, epoch)
    ON a.character_id = l.character_id AND a.epoch = l.epoch
WHERE a.map_instance = $1 AND NOT a.in_transfer
ORDER BY a.character_id
FOR NO KEY UPDATE OF a)
UPDATE character_authority AS a SET expires_at = $4
FROM held WHERE a.character_id = held.character_id
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
	renewed, err := queryAll(ctx, p.hot(ctx), scanString, renewLeasesSQL, mapInstance, pq.Array(ids), pq.Array(epochs), now.Add(ttl))
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
