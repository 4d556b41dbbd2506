package store

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/lib/pq"
)

// Critical items (docs/design.md section 5): the policies a map's content
// declares, where the items are for a recovery pass, and the recoveries
// themselves, each with its audit row in the same transaction.

// EventRecovered is the critical_events kind of a recovery.
const EventRecovered = "item.recovered"

// OwnerDestroyed is the owner kind of an item that was consumed or
// destroyed: its row stays, so a recovery knows it is gone.
const OwnerDestroyed = "destroyed"

// HeldItem is a critical item where it is, and for one a character holds,
// whether the character plays and for how long it has not.
type HeldItem struct {
	Item
	// Online: the holder has an unexpired authority lease.
	Online bool
	// OfflineFor is how long the holder has been away: since the latest of
	// its lease's expiry, its last checkpoint and the item's last move.
	OfflineFor time.Duration
}

// Recovery is one decision of a recovery pass: item ItemID goes from its
// old place (FromKind "" for an item with no row yet) to the ground of
// MapInstance at ToX, ToY.
type Recovery struct {
	EventID, ItemID, Kind, MapInstance string
	Tick                               int64
	Reason                             string
	FromKind, FromID                   string
	FromX, FromY                       float32
	ToX, ToY                           float32
	// Now is the pass's time: an item is not taken from a character that
	// holds a lease unexpired at Now (it came back meanwhile).
	Now time.Time
}

// AuditRow is one row of item_recovery_audit.
type AuditRow struct {
	ID                                         int64
	EventID, ItemID, Kind, MapInstance, Reason string
	Tick                                       int64
	OldOwnerKind, OldOwnerID                   string
	OldX, OldY                                 float32
	NewOwnerKind, NewOwnerID                   string
	NewX, NewY                                 float32
	DecidedAt                                  time.Time
}

// criticalItemsSQL lists the items of some kinds with, for a character's,
// its lease expiry and last checkpoint.
const criticalItemsSQL = `
SELECT o.item_id, o.kind, o.owner_kind, o.owner_id, o.slot, o.x, o.y, o.revision, o.updated_at,
       COALESCE(a.expires_at > $2, false),
       GREATEST(a.expires_at, s.updated_at, o.updated_at)
FROM item_ownership o
LEFT JOIN character_authority a ON o.owner_kind = 'character' AND a.character_id = o.owner_id
LEFT JOIN character_state s ON o.owner_kind = 'character' AND s.character_id = o.owner_id
WHERE o.kind = ANY($1)
ORDER BY o.item_id`

// CriticalItems lists every stored item of the kinds, by id, with its
// holder's standing at now.
func (p *Postgres) CriticalItems(ctx context.Context, kinds []string, now time.Time) ([]HeldItem, error) {
	items, err := queryAll(ctx, p.db, func(row rowScanner) (h HeldItem, err error) {
		var lastSeen time.Time
		err = row.Scan(&h.ItemID, &h.Kind, &h.OwnerKind, &h.OwnerID, &h.Slot, &h.X, &h.Y, &h.Revision, &h.UpdatedAt,
			&h.Online, &lastSeen)
		if h.OwnerKind == OwnerCharacter && !h.Online {
			h.OfflineFor = max(0, now.Sub(lastSeen))
		}
		return h, err
	}, criticalItemsSQL, pq.Array(kinds), now)
	return items, wrap("critical items", err)
}

// insertAuditSQL records a recovery once: a second insert of the same
// event id does nothing.
const insertAuditSQL = `
INSERT INTO item_recovery_audit (event_id, item_id, kind, reason, tick, map_instance,
    old_owner_kind, old_owner_id, old_x, old_y, new_owner_kind, new_owner_id, new_x, new_y)
VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14)
ON CONFLICT (event_id) DO NOTHING`

// recoverNewSQL puts an item that has no row yet on the map; a row made
// meanwhile (a pickup from its spawn) wins.
const recoverNewSQL = `
INSERT INTO item_ownership (item_id, kind, owner_kind, owner_id, slot, x, y, revision, updated_at)
VALUES ($1, $2, 'map', $3, '', $4, $5, 1, now())
ON CONFLICT (item_id) DO NOTHING`

// recoverMovedSQL moves an item still where the pass saw it: held by the
// same character (who has not come back since), or lying at the same spot.
const recoverMovedSQL = `
UPDATE item_ownership
SET owner_kind = 'map', owner_id = $2, slot = '', x = $3, y = $4, revision = revision + 1, updated_at = now()
WHERE item_id = $1 AND owner_kind = $5 AND owner_id = $6
  AND (owner_kind <> 'map' OR (x = $7 AND y = $8))
  AND NOT EXISTS (SELECT 1 FROM character_authority a
                  WHERE owner_kind = 'character' AND a.character_id = $6 AND a.expires_at > $9)`

// Recover carries a recovery out in one transaction, the durable path of
// a pickup: its audit row, its critical event, then the move. The same event id again returns nil and changes nothing (a
// pass re-applied after a crash); an item no longer where the pass saw it
// returns ErrItemTaken and records nothing.
func (p *Postgres) Recover(ctx context.Context, r Recovery) error {
	if r.EventID == "" || r.ItemID == "" || r.MapInstance == "" {
		return fmt.Errorf("store: recover: event id, item and map are required (%q, %q, %q)", r.EventID, r.ItemID, r.MapInstance)
	}
	err := p.inTx(ctx, func(tx runner) error {
		fresh, err := execOne(ctx, tx, insertAuditSQL, r.EventID, r.ItemID, r.Kind, r.Reason, r.Tick, r.MapInstance,
			r.FromKind, r.FromID, r.FromX, r.FromY, OwnerMap, r.MapInstance, r.ToX, r.ToY)
		if err != nil || !fresh {
			return err // recorded before: the move was made then
		}
		if err := appendRecoveryEvent(ctx, tx, r); err != nil {
			return err
		}
		var moved bool
		if r.FromKind == "" {
			moved, err = execOne(ctx, tx, recoverNewSQL, r.ItemID, r.Kind, r.MapInstance, r.ToX, r.ToY)
		} else {
			moved, err = execOne(ctx, tx, recoverMovedSQL, r.ItemID, r.MapInstance, r.ToX, r.ToY,
				r.FromKind, r.FromID, r.FromX, r.FromY, r.Now)
		}
		if err == nil && !moved {
			err = fmt.Errorf("item %s is no longer at %s %s: %w", r.ItemID, r.FromKind, r.FromID, ErrItemTaken)
		}
		return err
	})
	return wrap("recover "+r.ItemID, err)
}

// appendRecoveryEvent logs the recovery in critical_events beside the
// player actions, so a character's history shows the item taken from it
// (character_id is the old holder, "" for an item nobody held).
func appendRecoveryEvent(ctx context.Context, tx runner, r Recovery) error {
	holder := ""
	if r.FromKind == OwnerCharacter {
		holder = r.FromID
	}
	payload, _ := json.Marshal(map[string]string{"reason": r.Reason, "kind": r.Kind}) // plain map: cannot fail
	moves := moveRecords([]Move{{FromKind: r.FromKind, FromID: r.FromID,
		To: Item{ItemID: r.ItemID, OwnerKind: OwnerMap, OwnerID: r.MapInstance}}})
	_, err := tx.ExecContext(ctx, insertEventSQL, r.EventID, holder, r.MapInstance, EventRecovered, r.ItemID, r.Tick, payload, moves)
	return err
}

// destroySQL marks an item destroyed and records why, in one statement:
// the audit row takes the item's old place from the row it replaces, and
// the item changes only when the audit row is new, so the same event id
// again does nothing (not even after a recovery brought the item back).
const destroySQL = `
WITH old AS (
    SELECT item_id, kind, owner_kind, owner_id, x, y FROM item_ownership WHERE item_id = $1 FOR UPDATE
), audit AS (
    INSERT INTO item_recovery_audit (event_id, item_id, kind, reason, map_instance, old_owner_kind, old_owner_id, old_x, old_y, new_owner_kind)
    SELECT $2, item_id, kind, $4, $3, owner_kind, owner_id, x, y, 'destroyed' FROM old
    ON CONFLICT (event_id) DO NOTHING
    RETURNING item_id
)
UPDATE item_ownership o SET owner_kind = 'destroyed', owner_id = '', slot = '', revision = o.revision + 1, updated_at = now()
FROM audit WHERE o.item_id = audit.item_id`

// Destroy marks a stored item destroyed (consumed, or lost with its
// owner) with an audit row giving the reason; eventID makes it
// idempotent. An item with no row is ErrNotFound.
func (p *Postgres) Destroy(ctx context.Context, itemID, eventID, mapInstance, reason string) error {
	err := p.inTx(ctx, func(tx runner) error {
		var exists bool
		if err := tx.QueryRowContext(ctx, `SELECT EXISTS (SELECT 1 FROM item_ownership WHERE item_id = $1)`, itemID).Scan(&exists); err != nil {
			return err
		}
		if !exists {
			return fmt.Errorf("item %s: %w", itemID, ErrNotFound)
		}
		_, err := tx.ExecContext(ctx, destroySQL, itemID, eventID, mapInstance, reason)
		return err
	})
	return wrap("destroy "+itemID, err)
}

// RecoveryAudit lists the item's audit rows, oldest first.
func (p *Postgres) RecoveryAudit(ctx context.Context, itemID string) ([]AuditRow, error) {
	rows, err := queryAll(ctx, p.db, func(row rowScanner) (a AuditRow, err error) {
		err = row.Scan(&a.ID, &a.EventID, &a.ItemID, &a.Kind, &a.MapInstance, &a.Reason, &a.Tick, &a.OldOwnerKind, &a.OldOwnerID,
			&a.OldX, &a.OldY, &a.NewOwnerKind, &a.NewOwnerID, &a.NewX, &a.NewY, &a.DecidedAt)
		return a, err
	}, `
SELECT id, COALESCE(event_id, ''), item_id, kind, map_instance, reason, tick, old_owner_kind, old_owner_id,
       old_x, old_y, new_owner_kind, new_owner_id, new_x, new_y, decided_at
FROM item_recovery_audit WHERE item_id = $1 ORDER BY id`, itemID)
	return rows, wrap("recovery audit of "+itemID, err)
}
