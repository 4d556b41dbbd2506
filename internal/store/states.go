package store

import (
	"cmp"
	"context"
	"crypto/sha256"
	"database/sql"
	"encoding/hex"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/lib/pq"
)

// HashPayload is the StateHash of a payload: hex SHA-256.
func HashPayload(payload []byte) string {
	sum := sha256.Sum256(payload)
	return hex.EncodeToString(sum[:])
}

// LoadState returns the character's latest state, ErrNotFound for a new
// character, ErrCorrupt when the stored hash does not match the payload.
// Schema versions are the caller's to check.
func (p *Postgres) LoadState(ctx context.Context, characterID string) (CharacterState, error) {
	s, err := scanState(p.db.QueryRowContext(ctx, `SELECT `+storedStateColumns+` FROM character_state WHERE character_id = $1`, characterID))
	switch {
	case errors.Is(err, sql.ErrNoRows):
		return CharacterState{}, fmt.Errorf("store: state of character %s: %w", characterID, ErrNotFound)
	case err != nil:
		return CharacterState{}, wrap("load state", err)
	}
	if err := checkStateHash(s); err != nil {
		return CharacterState{}, err
	}
	return s, nil
}

// storedStateColumns are a stored state's columns, as scanState reads
// them.
const storedStateColumns = `character_id, schema_version, sim_core_version, revision, saved_tick, payload, state_hash, updated_at`

// scanState reads one row of storedStateColumns.
func scanState(row rowScanner) (s CharacterState, err error) {
	err = row.Scan(&s.CharacterID, &s.SchemaVersion, &s.SimCoreVersion, &s.Revision, &s.SavedTick, &s.Payload, &s.StateHash, &s.UpdatedAt)
	return s, err
}

// checkStateHash refuses a state whose payload is not what was hashed.
func checkStateHash(s CharacterState) error {
	if HashPayload(s.Payload) != s.StateHash {
		return fmt.Errorf("store: state of character %s (revision %d): %w", s.CharacterID, s.Revision, ErrCorrupt)
	}
	return nil
}

// saveStatesSQL upserts a whole batch in one statement: the columns arrive
// as arrays and unnest turns them back into rows. The payloads arrive as one
// bytea ($6) cut with substring at the given offsets: sent in binary, that
// is a plain copy, where a bytea[] goes as hex text that both sides spend
// half the checkpoint encoding and parsing. A row only overwrites an
// older revision. The join on character_authority is the fence: a row is
// written only while this map ($11) still holds the character's lease
// with the epoch the state was made under, and FOR SHARE holds that lease
// until the commit, so a claim by another map waits for it or wins first.
// Rows for characters that no longer exist have no lease and are dropped
// rather than failing the batch.
//
// The same statement appends each state it wrote (the upsert's RETURNING:
// stale and fenced states are not among them) to checkpoint_history, with
// the items the character holds and the newest of its critical events, as
// this statement's snapshot sees them: so a history row and the events
// after its events_seq re-derive the next row's items (`roomctl audit
// replay`). The manager's retention prunes the table (docs/operations.md,
// "Data retention"). RowsAffected counts the states written (one history
// row each).
const saveStatesSQL = `
WITH written AS (
INSERT INTO character_state AS s
    (character_id, schema_version, sim_core_version, revision, saved_tick, payload, state_hash, updated_at)
SELECT b.character_id, b.schema_version, b.sim_core_version, b.revision, b.saved_tick,
    substring($6::bytea FROM b.payload_at FOR b.payload_len), b.state_hash, now()
FROM unnest($1::text[], $2::integer[], $3::text[], $4::bigint[], $5::bigint[], $7::integer[], $8::integer[], $9::text[], $10::bigint[])
    AS b(character_id, schema_version, sim_core_version, revision, saved_tick, payload_at, payload_len, state_hash, epoch)
JOIN character_authority a ON a.character_id = b.character_id AND a.map_instance = $11
    AND a.epoch = b.epoch AND NOT a.in_transfer
ORDER BY b.character_id
FOR SHARE OF a
ON CONFLICT (character_id) DO UPDATE
SET schema_version = EXCLUDED.schema_version, sim_core_version = EXCLUDED.sim_core_version,
    revision = EXCLUDED.revision, saved_tick = EXCLUDED.saved_tick, payload = EXCLUDED.payload,
    state_hash = EXCLUDED.state_hash, updated_at = EXCLUDED.updated_at
WHERE s.revision < EXCLUDED.revision
RETURNING s.character_id, s.revision, s.saved_tick, s.state_hash, s.updated_at)
INSERT INTO checkpoint_history (character_id, revision, saved_tick, state_hash, map_instance, at, items, events_seq)
SELECT w.character_id, w.revision, w.saved_tick, w.state_hash, $11, w.updated_at,
    ARRAY(SELECT o.item_id || CASE WHEN o.slot = '' THEN '' ELSE '@' || o.slot END
          FROM item_ownership o WHERE o.owner_kind = 'character' AND o.owner_id = w.character_id ORDER BY 1),
    COALESCE((SELECT max(e.seq) FROM critical_events e WHERE e.character_id = w.character_id), 0)
FROM written w ORDER BY w.character_id`

// saveStatesForHandOverSQL is saveStatesSQL in a transaction that moves
// the leases next (BeginTransfers): it takes their locks for that update
// at once. Under FOR SHARE, a checkpoint of the same characters in
// between shared the leases, then waited on the state rows this
// transaction had written, while this one waited to update the leases
// the checkpoint shared: a deadlock, seen under load.
var saveStatesForHandOverSQL = strings.Replace(saveStatesSQL, "FOR SHARE OF a", "FOR NO KEY UPDATE OF a", 1)

// auditCheckpointSQL records the batch and, in the same statement, prunes
// audit rows older than a day: a few at a time through the index on at, so
// each checkpoint pays for about one checkpoint's worth of old rows.
const auditCheckpointSQL = `
WITH pruned AS (
    DELETE FROM checkpoint_audit WHERE id IN (
        SELECT id FROM checkpoint_audit WHERE at < now() - interval '24 hours' ORDER BY at LIMIT 100))
INSERT INTO checkpoint_audit (map_instance, saved, stale, duration_ms) VALUES ($1, $2, $3, $4)`

// SaveStates writes a checkpoint batch in one transaction. A state whose
// revision is not newer than the stored one is skipped and counted Stale;
// so is a state for a character that no longer exists, one whose lease
// this map no longer holds with the state's Epoch (fenced), and all but
// the newest of several states for one character. An empty StateHash is
// computed; a wrong one is refused (ErrCorrupt) before anything is written.
// It records one checkpoint_audit row for the batch and one
// checkpoint_history row for each state it wrote (see CheckpointHistory).
func (p *Postgres) SaveStates(ctx context.Context, mapInstance string, states []CharacterState) (SaveResult, error) {
	if len(states) == 0 {
		return SaveResult{}, nil
	}
	start := time.Now()
	cols, err := stateColumns(states)
	if err != nil {
		return SaveResult{}, err
	}
	var saved int
	err = p.inTx(ctx, func(tx runner) error {
		n, err := saveStatesTx(ctx, tx, saveStatesSQL, mapInstance, cols)
		if err != nil {
			return err
		}
		saved = n
		ms := float64(time.Since(start)) / float64(time.Millisecond)
		_, err = tx.ExecContext(ctx, auditCheckpointSQL, mapInstance, saved, len(states)-saved, ms)
		return err
	})
	if err != nil {
		return SaveResult{}, wrap("save states", err)
	}
	return SaveResult{Saved: saved, Stale: len(states) - saved}, nil
}

// CheckpointRecord is one checkpoint of a character as checkpoint_history
// keeps it: which revision was written, of which tick, with which hash, by
// which map, and when (the writing transaction's time: the newest record's
// At equals character_state's UpdatedAt); the items the character held
// then, and the newest of its critical events the checkpoint saw.
type CheckpointRecord struct {
	CharacterID string
	Revision    int64
	SavedTick   int64
	StateHash   string
	MapInstance string
	At          time.Time
	// Items are the item ids the character held, sorted, a worn one as
	// "id@slot"; nil for a row written before items were recorded.
	Items []string
	// EventsSeq is the seq of the newest critical event of the character
	// the checkpoint's snapshot saw (0: none).
	EventsSeq int64
}

// CheckpointHistory returns the character's checkpoints still kept (the
// retention window, docs/operations.md "Data retention"), newest first,
// at most limit of them (0: all); none for a character never
// checkpointed or unknown. The newest has character_state's revision,
// tick and hash, unless character_state was set back by hand.
func (p *Postgres) CheckpointHistory(ctx context.Context, characterID string, limit int) ([]CheckpointRecord, error) {
	records, err := queryAll(ctx, p.db, scanCheckpointRecord, `
SELECT character_id, revision, saved_tick, state_hash, map_instance, at, items, events_seq
FROM checkpoint_history WHERE character_id = $1 ORDER BY id DESC LIMIT NULLIF($2, 0)`, characterID, limit)
	return records, wrap("checkpoint history of "+characterID, err)
}

func scanCheckpointRecord(row rowScanner) (r CheckpointRecord, err error) {
	var items pq.StringArray
	err = row.Scan(&r.CharacterID, &r.Revision, &r.SavedTick, &r.StateHash, &r.MapInstance, &r.At, &items, &r.EventsSeq)
	if items != nil {
		r.Items = []string(items)
	}
	return r, err
}

// saveStatesTx writes the batch inside tx with statement (saveStatesSQL,
// or saveStatesForHandOverSQL), with its checkpoint_history rows, and
// says how many states it wrote.
func saveStatesTx(ctx context.Context, tx runner, statement, mapInstance string, cols *stateBatch) (int, error) {
	res, err := tx.ExecContext(ctx, statement, append(cols.args(), mapInstance)...)
	if err != nil {
		return 0, err
	}
	n, err := res.RowsAffected()
	return int(n), err
}

// stateBatch is a checkpoint batch as column arrays for saveStatesSQL.
type stateBatch struct {
	ids, simCores, hashes []string
	schemas, revs, ticks  []int64
	epochs                []int64
	payloads              []byte  // all payloads, back to back
	at, lens              []int64 // where each payload starts (1-based, for substring) and its length
}

func (b *stateBatch) args() []any {
	return []any{pq.Array(b.ids), pq.Array(b.schemas), pq.Array(b.simCores), pq.Array(b.revs),
		pq.Array(b.ticks), b.payloads, pq.Array(b.at), pq.Array(b.lens), pq.Array(b.hashes), pq.Array(b.epochs)}
}

// stateColumns turns the batch into columns, one row per character (the
// newest revision: Postgres refuses to upsert one row twice in a
// statement), sorted by id so concurrent batches lock rows in the same
// order and cannot deadlock. It fills in missing hashes and refuses wrong
// ones.
func stateColumns(states []CharacterState) (*stateBatch, error) {
	newest := make(map[string]int, len(states))
	for i, s := range states {
		if j, ok := newest[s.CharacterID]; !ok || states[j].Revision < s.Revision {
			newest[s.CharacterID] = i
		}
	}
	order := make([]int, 0, len(newest))
	size := 0
	for _, i := range newest {
		order = append(order, i)
		size += len(states[i].Payload)
	}
	slices.SortFunc(order, func(a, b int) int { return cmp.Compare(states[a].CharacterID, states[b].CharacterID) })
	n := len(order)
	b := &stateBatch{
		ids: make([]string, n), simCores: make([]string, n), hashes: make([]string, n),
		schemas: make([]int64, n), revs: make([]int64, n), ticks: make([]int64, n), epochs: make([]int64, n),
		at: make([]int64, n), lens: make([]int64, n), payloads: make([]byte, 0, size),
	}
	for k, i := range order {
		s := states[i]
		hash := HashPayload(s.Payload)
		if s.StateHash != "" && !strings.EqualFold(s.StateHash, hash) {
			return nil, fmt.Errorf("store: save states: character %s: StateHash does not match Payload: %w", s.CharacterID, ErrCorrupt)
		}
		b.at[k], b.lens[k] = int64(len(b.payloads)+1), int64(len(s.Payload))
		b.payloads = append(b.payloads, s.Payload...)
		b.ids[k], b.simCores[k], b.hashes[k] = s.CharacterID, s.SimCoreVersion, hash
		b.schemas[k], b.revs[k], b.ticks[k] = int64(s.SchemaVersion), s.Revision, s.SavedTick
		b.epochs[k] = s.Epoch
	}
	return b, nil
}
