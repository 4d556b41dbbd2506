package store

import (
	"cmp"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"slices"

	"github.com/lib/pq/pqerror"
)

// insertEventSQL appends the event unless its id is stored already.
const insertEventSQL = `
INSERT INTO critical_events (event_id, character_id, map_instance, kind, item_id, tick, payload, moves)
SELECT $1, $2, $3, $4, $5, $6, $7, $8
FROM (SELECT 1 FROM (SELECT pg_advisory_xact_lock(1668442484, hashtext($2))) AS locked WHERE $2 <> ''
      UNION ALL SELECT 1 WHERE $2 = '') AS serialized
ON CONFLICT (event_id) DO NOTHING`

// The statement above first takes, for the character ($2, when there is
// one), a transaction advisory lock of class 1668442484 ("crit"): a
// character's critical events commit one at a time, the seq each gets
// (at insert, after the lock) in commit order, so every snapshot sees a
// prefix of them and a checkpoint's events_seq says exactly which it saw
// (audit.go). One statement, so the lock costs no round trip.

// The moves run fenced: each statement moves its item only while the
// acting map holds the character's lease with the epoch it acts under
// (fencedBy), and holds that row (FOR SHARE) until the commit, so no
// claim by another map can slip in between. The fence rides in the move
// instead of a statement of its own: one round trip less for every
// critical action (docs/design.md, "Density"). A move that matched
// nothing asks fenceSQL which of the two was missing.

// fencedBy is the lease condition of the moves: $11 character, $12 map
// instance, $13 epoch.
const fencedBy = `EXISTS (SELECT 1 FROM character_authority
    WHERE character_id = $11 AND map_instance = $12 AND epoch = $13 AND NOT in_transfer FOR SHARE)`

// moveFromMapSQL moves an item off a map. No row means the item is still
// at its generated spawn, i.e. on that map: insert it. A row must still be
// on the map the action saw, else the WHERE skips it. ON CONFLICT locks the
// row and re-reads it, so of two concurrent pickups only one matches.
const moveFromMapSQL = `
INSERT INTO item_ownership AS o (item_id, kind, owner_kind, owner_id, slot, x, y, revision, updated_at)
SELECT $1::text, $2::text, $3::text, $4::text, $9::text, $5::real, $6::real, 1, now()
WHERE ` + fencedBy + `
ON CONFLICT (item_id) DO UPDATE
SET kind = COALESCE(NULLIF(EXCLUDED.kind, ''), o.kind), owner_kind = EXCLUDED.owner_kind,
    owner_id = EXCLUDED.owner_id, slot = EXCLUDED.slot, x = EXCLUDED.x, y = EXCLUDED.y,
    revision = o.revision + 1, updated_at = now()
WHERE o.owner_kind = $7 AND o.owner_id = $8 AND o.slot = $10`

// moveFromOwnerSQL moves an item that must already be stored with its
// owner. Under READ COMMITTED a concurrent move re-evaluates the WHERE on
// the new row version, so it too matches at most once.
const moveFromOwnerSQL = `
UPDATE item_ownership
SET kind = COALESCE(NULLIF($2, ''), kind), owner_kind = $3, owner_id = $4, slot = $9, x = $5, y = $6,
    revision = revision + 1, updated_at = now()
WHERE item_id = $1 AND owner_kind = $7 AND owner_id = $8 AND slot = $10 AND ` + fencedBy

// fenceSQL checks the lease alone: after a move that matched nothing.
const fenceSQL = `
SELECT 1 FROM character_authority
WHERE character_id = $1 AND map_instance = $2 AND epoch = $3 AND NOT in_transfer
FOR SHARE`

// CommitCritical appends the event and applies the moves, in order, in one
// transaction. An event id already stored returns nil and changes nothing
// (a retry after a lost acknowledgement). A map that no longer holds the
// character's lease with ev.Epoch gets ErrLeaseLost; an item not at its
// move's From is ErrItemTaken. Either way nothing is recorded. The event
// names one of the moves' items.
func (p *Postgres) CommitCritical(ctx context.Context, ev CriticalEvent, moves ...Move) error {
	if err := checkCritical(&ev, moves); err != nil {
		return err
	}
	err := p.inTx(ctx, func(tx runner) error { return p.commitCriticalTx(ctx, tx, ev, moves) })
	return wrap("commit critical "+ev.EventID, err)
}

// commitCriticalTx is CommitCritical's work in tx.
func (p *Postgres) commitCriticalTx(ctx context.Context, tx runner, ev CriticalEvent, moves []Move) error {
	fresh, err := execOne(ctx, tx, insertEventSQL,
		ev.EventID, ev.CharacterID, ev.MapInstance, ev.Kind, ev.ItemID, ev.Tick, ev.Payload, moveRecords(moves))
	if err != nil || !fresh {
		return err // !fresh: committed before, the move was applied then
	}
	for _, m := range moves {
		if err := applyMove(ctx, tx, m, ev); err != nil {
			return err
		}
	}
	return saveActorState(ctx, tx, ev)
}

// saveActorState writes the event's State, if any, as a checkpoint of
// the acting map would: fenced by the lease (checked above), never over a
// newer revision.
func saveActorState(ctx context.Context, tx runner, ev CriticalEvent) error {
	if ev.State == nil {
		return nil
	}
	cols, err := stateColumns([]CharacterState{*ev.State})
	if err != nil {
		return err
	}
	_, err = saveStatesTx(ctx, tx, saveStatesSQL, ev.MapInstance, cols)
	return err
}

// checkFence returns ErrLeaseLost unless mapInstance holds the
// character's lease with epoch.
func checkFence(ctx context.Context, tx runner, characterID, mapInstance string, epoch int64) error {
	var one int
	err := tx.QueryRowContext(ctx, fenceSQL, characterID, mapInstance, epoch).Scan(&one)
	if errors.Is(err, sql.ErrNoRows) {
		return fmt.Errorf("character %s is not held by %s with epoch %d: %w", characterID, mapInstance, epoch, ErrLeaseLost)
	}
	return err
}

// applyMove changes the item's owner if it is still at move.From and the
// acting map still holds ev's character with ev's epoch.
func applyMove(ctx context.Context, tx runner, move Move, ev CriticalEvent) error {
	to := move.To
	query := moveFromOwnerSQL
	if move.FromKind == OwnerMap {
		query = moveFromMapSQL
	}
	moved, err := execOne(ctx, tx, query,
		to.ItemID, to.Kind, to.OwnerKind, to.OwnerID, to.X, to.Y, move.FromKind, move.FromID, to.Slot, move.FromSlot,
		ev.CharacterID, ev.MapInstance, ev.Epoch)
	switch {
	case hasCode(err, pqerror.UniqueViolation): // item_ownership_worn_idx: the slot holds another item
		return fmt.Errorf("slot %s of %s is taken: %w", to.Slot, to.OwnerID, ErrItemTaken)
	case err == nil && !moved:
		if err := checkFence(ctx, tx, ev.CharacterID, ev.MapInstance, ev.Epoch); err != nil {
			return err
		}
		return fmt.Errorf("item %s is not at %s %s: %w", to.ItemID, move.FromKind, move.FromID, ErrItemTaken)
	}
	return err
}

// checkCritical refuses malformed requests before they reach the database.
// With one move the item id may be given in either the event or the move;
// with several, the event's item must be one of theirs.
func checkCritical(ev *CriticalEvent, moves []Move) error {
	if ev.EventID == "" {
		return fmt.Errorf("store: commit critical: empty event id")
	}
	if len(moves) == 0 {
		return fmt.Errorf("store: commit critical %s: no move", ev.EventID)
	}
	if ev.State != nil && ev.State.CharacterID != ev.CharacterID {
		return fmt.Errorf("store: commit critical %s: the state of %q is not the actor %q's", ev.EventID, ev.State.CharacterID, ev.CharacterID)
	}
	if len(moves) == 1 {
		moves[0].To.ItemID = cmp.Or(moves[0].To.ItemID, ev.ItemID)
		ev.ItemID = cmp.Or(ev.ItemID, moves[0].To.ItemID)
	}
	if !slices.ContainsFunc(moves, func(m Move) bool { return m.To.ItemID == ev.ItemID }) {
		return fmt.Errorf("store: commit critical %s: event item %q is not moved", ev.EventID, ev.ItemID)
	}
	for _, m := range moves {
		switch {
		case m.To.ItemID == "":
			return fmt.Errorf("store: commit critical %s: a move without an item", ev.EventID)
		case !validOwnerKind(m.FromKind) || !validDestination(m.To.OwnerKind):
			return fmt.Errorf("store: commit critical %s: owner kinds must be %q or %q (or, to use an item up, %q)", ev.EventID,
				OwnerCharacter, OwnerMap, OwnerDestroyed)
		case m.To.OwnerKind != OwnerCharacter && m.To.Slot != "":
			return fmt.Errorf("store: commit critical %s: only a character wears an item in a slot", ev.EventID)
		}
	}
	return nil
}

func validOwnerKind(kind string) bool { return kind == OwnerCharacter || kind == OwnerMap }

// validDestination is where a critical action may move an item: to an
// owner, or used up (destroyed).
func validDestination(kind string) bool { return validOwnerKind(kind) || kind == OwnerDestroyed }

// itemColumns is the SELECT list scanItem reads.
const itemColumns = `item_id, kind, owner_kind, owner_id, slot, x, y, revision, updated_at`

// ItemsOf lists the items a character holds, by item id.
func (p *Postgres) ItemsOf(ctx context.Context, characterID string) ([]Item, error) {
	items, err := p.itemsOwnedBy(ctx, OwnerCharacter, characterID)
	return items, wrap("items of "+characterID, err)
}

// ItemsOn lists the stored items lying on a map instance, by item id.
// Items never picked up are still at their generated spawn and not stored.
func (p *Postgres) ItemsOn(ctx context.Context, mapInstance string) ([]Item, error) {
	items, err := p.itemsOwnedBy(ctx, OwnerMap, mapInstance)
	return items, wrap("items on "+mapInstance, err)
}

func (p *Postgres) itemsOwnedBy(ctx context.Context, kind, id string) ([]Item, error) {
	return queryAll(ctx, p.db, scanItem,
		`SELECT `+itemColumns+` FROM item_ownership WHERE owner_kind = $1 AND owner_id = $2 ORDER BY item_id`, kind, id)
}

// scanItem reads one row of itemColumns.
func scanItem(row rowScanner) (it Item, err error) {
	err = row.Scan(&it.ItemID, &it.Kind, &it.OwnerKind, &it.OwnerID, &it.Slot, &it.X, &it.Y, &it.Revision, &it.UpdatedAt)
	return it, err
}

// EventsOf lists a character's critical events, oldest first.
func (p *Postgres) EventsOf(ctx context.Context, characterID string) ([]CriticalEvent, error) {
	events, err := queryAll(ctx, p.db, scanEvent, `
SELECT event_id, seq, character_id, map_instance, kind, item_id, tick, payload, moves, created_at
FROM critical_events WHERE character_id = $1 ORDER BY seq`, characterID)
	return events, wrap("events of "+characterID, err)
}

func scanEvent(row rowScanner) (ev CriticalEvent, err error) {
	var moves []byte
	err = row.Scan(&ev.EventID, &ev.Seq, &ev.CharacterID, &ev.MapInstance, &ev.Kind, &ev.ItemID, &ev.Tick, &ev.Payload, &moves, &ev.CreatedAt)
	if err == nil && moves != nil {
		err = json.Unmarshal(moves, &ev.Moves)
	}
	return ev, err
}

// MoveRecord is a move as critical_events.moves records it.
type MoveRecord struct {
	Item     string `json:"item"`
	FromKind string `json:"fromKind"`
	FromID   string `json:"fromId"`
	FromSlot string `json:"fromSlot,omitempty"`
	ToKind   string `json:"toKind"`
	ToID     string `json:"toId"`
	ToSlot   string `json:"toSlot,omitempty"`
}

// moveRecords is the moves as the event's moves column, JSON text (a
// []byte would go as binary, which jsonb does not read).
func moveRecords(moves []Move) string {
	out := make([]MoveRecord, len(moves))
	for i, m := range moves {
		out[i] = MoveRecord{Item: m.To.ItemID, FromKind: m.FromKind, FromID: m.FromID, FromSlot: m.FromSlot,
			ToKind: m.To.OwnerKind, ToID: m.To.OwnerID, ToSlot: m.To.Slot}
	}
	data, _ := json.Marshal(out) // plain strings: cannot fail
	return string(data)
}
