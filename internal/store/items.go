package store

import (
	"cmp"
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"slices"

	"github.com/lib/pq"
	"github.com/lib/pq/pqerror"
)

// insertEventSQL appends the event unless its id is stored already: a
// recovery's (critical.go). A critical action's goes through
// roomkeeper_critical_action (below), which takes the same lock.
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

// A critical action's event and moves run as one call of the function
// roomkeeper_critical_action (migration 00009): the event unless its id
// is stored already, then each move, fenced by the acting map's lease.
// An action alone is three round trips to the database (BEGIN, the call,
// COMMIT) where the event and the move as statements of their own took
// four (docs/design.md, "Density"). It is not the call alone as its own
// implicit transaction (one round trip): a deadline passing while that
// statement ran would leave the commit unknown, where a transaction
// whose COMMIT was never sent is rolled back, and under load deadlines
// pass (docs/benchmarks.md, "Thirteenth session").
const criticalActionSQL = `SELECT roomkeeper_critical_action($1, $2, $3, $4, $5, $6, $7, $8, $9,
    $10, $11, $12, $13, $14, $15, $16, $17, $18, $19)`

// The SQLSTATEs roomkeeper_critical_action raises for a move that matched
// nothing.
const (
	codeLeaseLost pqerror.Code = "RK001"
	codeItemTaken pqerror.Code = "RK002"
)

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
	_ = p.prepare(ctx)
	err := p.inTx(ctx, func(tx *sql.Tx) error { return p.commitCriticalTx(ctx, tx, ev, moves) })
	return wrap("commit critical "+ev.EventID, err)
}

// commitCriticalTx is CommitCritical's work in tx, its statement
// prepared (prepared.go) when it can be.
func (p *Postgres) commitCriticalTx(ctx context.Context, sqlTx *sql.Tx, ev CriticalEvent, moves []Move) error {
	fresh, err := runCriticalAction(ctx, p.withPrepared(sqlTx), ev, moves)
	if err != nil || !fresh {
		return err // !fresh: committed before, the moves were applied then
	}
	return saveActorState(ctx, sqlTx, ev)
}

// saveActorState writes the event's State, if any, as a checkpoint of
// the acting map would: fenced by the lease (checked above), never over a
// newer revision.
func saveActorState(ctx context.Context, tx *sql.Tx, ev CriticalEvent) error {
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

// runCriticalAction runs the action's statement and reports whether it
// recorded the event now (false: recorded before).
func runCriticalAction(ctx context.Context, q txRunner, ev CriticalEvent, moves []Move) (bool, error) {
	var fresh bool
	err := q.QueryRowContext(ctx, criticalActionSQL, criticalArgs(ev, moves)...).Scan(&fresh)
	return fresh, criticalError(err)
}

// criticalArgs are criticalActionSQL's arguments: the event, its epoch,
// and the moves a column each.
func criticalArgs(ev CriticalEvent, moves []Move) []any {
	n := len(moves)
	items, kinds, ownerKinds, ownerIDs := make([]string, n), make([]string, n), make([]string, n), make([]string, n)
	xs, ys := make([]float64, n), make([]float64, n)
	fromKinds, fromIDs, slots, fromSlots := make([]string, n), make([]string, n), make([]string, n), make([]string, n)
	for i, m := range moves {
		items[i], kinds[i], ownerKinds[i], ownerIDs[i] = m.To.ItemID, m.To.Kind, m.To.OwnerKind, m.To.OwnerID
		xs[i], ys[i] = float64(m.To.X), float64(m.To.Y)
		fromKinds[i], fromIDs[i], slots[i], fromSlots[i] = m.FromKind, m.FromID, m.To.Slot, m.FromSlot
	}
	return []any{ev.EventID, ev.CharacterID, ev.MapInstance, ev.Kind, ev.ItemID, ev.Tick, ev.Payload, moveRecords(moves), ev.Epoch,
		pq.Array(items), pq.Array(kinds), pq.Array(ownerKinds), pq.Array(ownerIDs), pq.Array(xs), pq.Array(ys),
		pq.Array(fromKinds), pq.Array(fromIDs), pq.Array(slots), pq.Array(fromSlots)}
}

// criticalError names the refusals of a critical action's statement.
func criticalError(err error) error {
	pqErr := pq.As(err)
	switch {
	case pqErr == nil:
		return err
	case pqErr.Code == codeLeaseLost:
		return fmt.Errorf("%s: %w", pqErr.Message, ErrLeaseLost)
	case pqErr.Code == codeItemTaken:
		return fmt.Errorf("%s: %w", pqErr.Message, ErrItemTaken)
	case pqErr.Code == pqerror.UniqueViolation: // item_ownership_worn_idx: the slot holds another item
		return fmt.Errorf("a slot is taken (%s): %w", pqErr.Detail, ErrItemTaken)
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
