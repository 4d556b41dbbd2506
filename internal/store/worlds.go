package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"
)

// A map's world checkpoint (map_state) is fenced the way a character's
// state is: a pod that takes over a map's world claims it (ClaimWorld),
// which takes a new epoch, and a write (SaveWorld) lands only under the
// newest epoch. A pod that lost its map (the old pod of a handover, one
// cut off from the cluster while a replacement started) can never
// overwrite its successor's world.

// ErrWorldFenced: another pod claimed the map's world since this writer
// did: the write is refused.
var ErrWorldFenced = errors.New("another pod claimed the map's world")

// WorldState is a map instance's world checkpoint. Payload is opaque to
// the store; StateHash is its hex SHA-256, checked on load.
type WorldState struct {
	MapInstance    string
	SchemaVersion  int
	SimCoreVersion string
	// Revision numbers the map's checkpoints, across its pods; 0 is none.
	Revision  int64
	SavedTick int64
	Payload   []byte
	StateHash string
	UpdatedAt time.Time
	// Epoch is the claim the state is written under (SaveWorld), or the
	// new claim (ClaimWorld). Pod is the claiming pod.
	Epoch int64
	Pod   string
	// Released: its writer let the world go (it handed the map over, or
	// stopped), so this checkpoint is the world's last.
	Released bool
}

// WorldClaim says who holds a map's world now.
type WorldClaim struct {
	Epoch    int64
	Pod      string
	Released bool
}

const worldColumns = `schema_version, sim_core_version, revision, saved_tick, payload, state_hash, updated_at, epoch, pod, released`

func scanWorld(row rowScanner, s *WorldState) error {
	return row.Scan(&s.SchemaVersion, &s.SimCoreVersion, &s.Revision, &s.SavedTick, &s.Payload, &s.StateHash,
		&s.UpdatedAt, &s.Epoch, &s.Pod, &s.Released)
}

// ClaimWorld makes pod the writer of the map's world under a new epoch,
// fencing out every earlier writer, and returns the newest checkpoint
// with that epoch (Revision 0 when the map has none yet). A checkpoint
// whose hash does not match is ErrCorrupt; the claim holds anyway.
func (p *Postgres) ClaimWorld(ctx context.Context, mapInstance, pod string) (WorldState, error) {
	s := WorldState{MapInstance: mapInstance}
	err := scanWorld(p.db.QueryRowContext(ctx, `
INSERT INTO map_state AS m (map_instance, revision, payload, epoch, pod) VALUES ($1, 0, '', 1, $2)
ON CONFLICT (map_instance) DO UPDATE SET epoch = m.epoch + 1, pod = EXCLUDED.pod, released = false
RETURNING `+worldColumns, mapInstance, pod), &s)
	if err != nil {
		return WorldState{}, wrap("claim the world of "+mapInstance, err)
	}
	return s, checkWorld(s)
}

// LoadWorld returns the map's newest world checkpoint without claiming
// it: ErrNotFound when it has none, ErrCorrupt when the hash does not
// match.
func (p *Postgres) LoadWorld(ctx context.Context, mapInstance string) (WorldState, error) {
	s := WorldState{MapInstance: mapInstance}
	err := scanWorld(p.db.QueryRowContext(ctx, `SELECT `+worldColumns+` FROM map_state WHERE map_instance = $1`, mapInstance), &s)
	switch {
	case errors.Is(err, sql.ErrNoRows) || err == nil && s.Revision == 0:
		return WorldState{}, fmt.Errorf("store: world of %s: %w", mapInstance, ErrNotFound)
	case err != nil:
		return WorldState{}, wrap("load the world of "+mapInstance, err)
	}
	return s, checkWorld(s)
}

// checkWorld refuses a stored checkpoint whose hash does not match.
func checkWorld(s WorldState) error {
	if s.Revision > 0 && HashPayload(s.Payload) != s.StateHash {
		return fmt.Errorf("store: world of %s (revision %d): %w", s.MapInstance, s.Revision, ErrCorrupt)
	}
	return nil
}

// WorldClaimOf says who holds the map's world (a zero claim when nobody
// ever claimed it), without reading the checkpoint.
func (p *Postgres) WorldClaimOf(ctx context.Context, mapInstance string) (WorldClaim, error) {
	var c WorldClaim
	err := p.db.QueryRowContext(ctx, `SELECT epoch, pod, released FROM map_state WHERE map_instance = $1`, mapInstance).
		Scan(&c.Epoch, &c.Pod, &c.Released)
	if errors.Is(err, sql.ErrNoRows) {
		return WorldClaim{}, nil
	}
	return c, wrap("the claim on the world of "+mapInstance, err)
}

// saveWorldSQL writes a world checkpoint newer than the stored one under
// the newest epoch.
const saveWorldSQL = `
UPDATE map_state SET schema_version = $3, sim_core_version = $4, revision = $5, saved_tick = $6, payload = $7,
    state_hash = $8, released = $9, updated_at = now()
WHERE map_instance = $1 AND epoch = $2 AND revision < $5`

// SaveWorld writes a world checkpoint under its Epoch. It is idempotent
// by revision: one not newer than the stored one changes nothing and
// returns nil. A write under an epoch that is no longer the newest is
// ErrWorldFenced. An empty StateHash is computed; a wrong one is refused
// (ErrCorrupt) before anything is written.
func (p *Postgres) SaveWorld(ctx context.Context, s WorldState) error {
	hash := HashPayload(s.Payload)
	if s.StateHash != "" && s.StateHash != hash {
		return fmt.Errorf("store: save the world of %s: StateHash does not match Payload: %w", s.MapInstance, ErrCorrupt)
	}
	res, err := p.hot(ctx).ExecContext(ctx, saveWorldSQL, s.MapInstance, s.Epoch, s.SchemaVersion, s.SimCoreVersion, s.Revision, s.SavedTick, s.Payload, hash, s.Released)
	if err != nil {
		return wrap("save the world of "+s.MapInstance, err)
	}
	if n, err := res.RowsAffected(); err != nil || n == 1 {
		return wrap("save the world of "+s.MapInstance, err)
	}
	claim, err := p.WorldClaimOf(ctx, s.MapInstance)
	switch {
	case err != nil:
		return err
	case claim.Epoch != s.Epoch:
		return fmt.Errorf("store: save the world of %s under epoch %d (pod %s holds epoch %d): %w",
			s.MapInstance, s.Epoch, claim.Pod, claim.Epoch, ErrWorldFenced)
	}
	return nil // a revision already written: nothing to do
}
