package store

import (
	"cmp"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/lib/pq"
)

// TransferState is a step of a transfer's state machine (docs/design.md
// section 3.5). States only move forward; aborted and completed are final.
type TransferState string

// The transfer states, in order.
const (
	// TransferRequested: the source committed the character's checkpoint
	// and handed its lease to the destination, in one transaction.
	TransferRequested TransferState = "requested"
	// TransferTokenIssued: the source signed the transfer token; the
	// player may now present it to the destination.
	TransferTokenIssued TransferState = "token_issued"
	// TransferDestinationAccepted: the destination consumed the token and
	// claimed the lease; from here on only it may write the character.
	TransferDestinationAccepted TransferState = "destination_accepted"
	// TransferSourceReleased: the source's copy is gone for good: the
	// destination loaded the character's state under its own lease, which
	// fences out any late write of the source.
	TransferSourceReleased TransferState = "source_released"
	// TransferCompleted: the character plays in the destination.
	TransferCompleted TransferState = "completed"
	// TransferAborted: the transfer ended without the destination taking
	// the character (returned to the source, token expired, destination
	// down); Reason says why.
	TransferAborted TransferState = "aborted"
)

// ErrTransferSettled: the transfer is no longer in the state the caller
// needs (completed, aborted, or taken by the other side first).
var ErrTransferSettled = errors.New("transfer is no longer pending")

// Transfer is one row of the transfers table.
type Transfer struct {
	ID           string
	CharacterID  string
	FromInstance string
	ToInstance   string
	ToMap        string
	State        TransferState
	// FromX, FromY is where the character stood on the source map; an
	// aborted transfer returns it there.
	FromX, FromY float32
	// ExpiresAt is when the character's lease in transfer runs out if the
	// destination never claims it.
	ExpiresAt time.Time
	Reason    string
	CreatedAt time.Time
	UpdatedAt time.Time
}

// Arrival is what ArriveByTransfer did: the lease the arriving map now
// holds, the transfer as it was, and whether the character came back to
// its source (the transfer was aborted) rather than arriving.
type Arrival struct {
	Lease    Lease
	Transfer Transfer
	Returned bool
}

// handOverSQL moves the source's leases to their destinations, in
// transfer: a new epoch each (so every later write of the source is fenced
// out), bound to the destination instance and the transfer, until the
// token expires. It returns the characters it moved; one whose lease the
// source no longer holds under its epoch is not.
const handOverSQL = `
UPDATE character_authority AS a
SET map_instance = b.to_instance, pod = '', epoch = nextval('character_authority_epoch_seq'),
    expires_at = to_timestamp(b.expires_ms / 1000.0), in_transfer = true, transfer_id = b.id
FROM unnest($1::text[], $2::text[], $3::bigint[], $4::bigint[], $5::text[])
    AS b(character_id, to_instance, epoch, expires_ms, id)
WHERE a.character_id = b.character_id AND a.map_instance = $6 AND a.epoch = b.epoch AND NOT a.in_transfer
RETURNING a.character_id`

const insertTransfersSQL = `
INSERT INTO transfers (id, character_id, from_instance, to_instance, to_map, state, from_x, from_y, expires_at)
SELECT b.id, b.character_id, $9, b.to_instance, b.to_map, b.state, b.from_x, b.from_y, to_timestamp(b.expires_ms / 1000.0)
FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::text[], $6::real[], $7::real[], $8::bigint[])
    AS b(id, character_id, to_instance, to_map, state, from_x, from_y, expires_ms)`

// BeginTransfer is the source's commit point: in one transaction it saves
// the character's checkpoint (fenced by its Epoch, the source's lease),
// hands the lease to t.ToInstance in transfer until t.ExpiresAt, and
// records t as requested. A source that no longer holds the lease gets
// ErrLeaseLost and nothing changes.
func (p *Postgres) BeginTransfer(ctx context.Context, t Transfer, checkpoint CharacterState) error {
	t.State = TransferRequested
	return p.BeginTransfers(ctx, []Transfer{t}, []CharacterState{checkpoint})
}

// BeginTransfers is BeginTransfer for several characters leaving one map
// at once (a pod handing its players over), in one transaction: each
// transfer is recorded in its State (requested, or token_issued when its
// tokens are signed already). If any character's lease is lost, nothing
// changes and the error (ErrLeaseLost, a *LeaseLostError) names them.
func (p *Postgres) BeginTransfers(ctx context.Context, ts []Transfer, checkpoints []CharacterState) error {
	rows, err := transferBatch(ts, checkpoints)
	if err != nil {
		return err
	}
	cols, err := stateColumns(checkpoints)
	if err != nil {
		return err
	}
	err = p.inTx(ctx, func(tx runner) error {
		if _, err := saveStatesTx(ctx, tx, saveStatesForHandOverSQL, rows.from, cols); err != nil {
			return err
		}
		moved, err := queryAll(ctx, tx, scanString, handOverSQL, pq.Array(rows.characters), pq.Array(rows.toInstances),
			pq.Array(rows.epochs), pq.Array(rows.expires), pq.Array(rows.ids), rows.from)
		if err != nil {
			return err
		}
		if err := lostLeases(rows.characters, moved); err != nil {
			return err
		}
		_, err = tx.ExecContext(ctx, insertTransfersSQL, pq.Array(rows.ids), pq.Array(rows.characters), pq.Array(rows.toInstances),
			pq.Array(rows.toMaps), pq.Array(rows.states), pq.Array(rows.xs), pq.Array(rows.ys), pq.Array(rows.expires), rows.from)
		return err
	})
	return wrap(fmt.Sprintf("begin %d transfers", len(ts)), err)
}

// transferRows are transfers as column arrays, sorted by character so
// that concurrent batches lock leases in one order.
type transferRows struct {
	from                                         string
	ids, characters, toInstances, toMaps, states []string
	xs, ys                                       []float64
	epochs, expires                              []int64
}

// transferBatch checks a batch (one source, a checkpoint per transfer,
// of the same character, no character twice) and turns it into columns.
func transferBatch(ts []Transfer, checkpoints []CharacterState) (*transferRows, error) {
	if len(ts) == 0 || len(ts) != len(checkpoints) {
		return nil, fmt.Errorf("store: begin transfers: %d transfers and %d checkpoints", len(ts), len(checkpoints))
	}
	order := make([]int, len(ts))
	for i := range order {
		order[i] = i
	}
	slices.SortFunc(order, func(a, b int) int { return cmp.Compare(ts[a].CharacterID, ts[b].CharacterID) })
	r := &transferRows{from: ts[0].FromInstance}
	for n, i := range order {
		t, c := ts[i], checkpoints[i]
		switch {
		case t.ID == "" || t.CharacterID == "" || t.CharacterID != c.CharacterID:
			return nil, fmt.Errorf("store: begin transfer: needs an id and a checkpoint of the same character")
		case t.FromInstance != r.from:
			return nil, fmt.Errorf("store: begin transfers: from %s and %s in one batch", r.from, t.FromInstance)
		case n > 0 && t.CharacterID == r.characters[n-1]:
			return nil, fmt.Errorf("store: begin transfers: character %s twice", t.CharacterID)
		case t.State != TransferRequested && t.State != TransferTokenIssued:
			return nil, fmt.Errorf("store: begin transfer %s in state %q", t.ID, t.State)
		}
		r.ids, r.characters = append(r.ids, t.ID), append(r.characters, t.CharacterID)
		r.toInstances, r.toMaps, r.states = append(r.toInstances, t.ToInstance), append(r.toMaps, t.ToMap), append(r.states, string(t.State))
		r.xs, r.ys = append(r.xs, float64(t.FromX)), append(r.ys, float64(t.FromY))
		r.epochs, r.expires = append(r.epochs, c.Epoch), append(r.expires, t.ExpiresAt.UnixMilli())
	}
	return r, nil
}

// advanceTransferSQL moves a transfer from $2 to $3 and returns its state
// after: $3, or the state it was in if that was not $2.
const advanceTransferSQL = `
WITH moved AS (UPDATE transfers SET state = $3, updated_at = now() WHERE id = $1 AND state = $2 RETURNING state)
SELECT state FROM moved UNION ALL SELECT state FROM transfers WHERE id = $1 AND NOT EXISTS (SELECT 1 FROM moved)`

// AdvanceTransfer moves transfer id from one state to the next. It is
// idempotent: a transfer already in to returns nil. In any other state it
// returns ErrTransferSettled; an unknown id ErrNotFound.
func (p *Postgres) AdvanceTransfer(ctx context.Context, id string, from, to TransferState) error {
	var state TransferState
	err := p.hot(ctx).QueryRowContext(ctx, advanceTransferSQL, id, from, to).Scan(&state)
	switch {
	case errors.Is(err, sql.ErrNoRows):
		return fmt.Errorf("store: transfer %s: %w", id, ErrNotFound)
	case err != nil:
		return wrap("advance transfer "+id, err)
	case state != to:
		return fmt.Errorf("store: transfer %s is %s, not %s: %w", id, state, from, ErrTransferSettled)
	}
	return nil
}

// CompleteTransfers ends the destination side of the transfers ids in one
// statement: each accepted one (destination_accepted, or source_released)
// becomes completed, passing source_released on the way, as the
// destination that loaded the character under its own lease may say. A
// transfer in another state is left alone (settled by then, or not this
// destination's). It returns how many it completed. A destination that
// admits a handover's players at once completes them in one round trip
// instead of two each on its small pool.
func (p *Postgres) CompleteTransfers(ctx context.Context, ids []string) (int64, error) {
	if len(ids) == 0 {
		return 0, nil
	}
	res, err := p.hot(ctx).ExecContext(ctx, completeTransfersSQL, pq.Array(ids), TransferCompleted, TransferDestinationAccepted, TransferSourceReleased)
	if err != nil {
		return 0, wrap("complete transfers", err)
	}
	n, err := res.RowsAffected()
	return n, wrap("complete transfers", err)
}

const transferColumns = `id, character_id, from_instance, to_instance, to_map, state, from_x, from_y, expires_at, reason, created_at, updated_at`

const completeTransfersSQL = `UPDATE transfers SET state = $2, updated_at = now() WHERE id = ANY($1) AND state IN ($3, $4)`

// The statements of an arrival (ArriveByTransfers): lock the transfers,
// move them on, load the characters that arrived.
const (
	lockTransfersSQL   = `SELECT ` + transferColumns + ` FROM transfers WHERE id = ANY($1) ORDER BY id FOR UPDATE`
	advanceArrivalsSQL = `UPDATE transfers AS t SET state = b.state, reason = b.reason, updated_at = now()
FROM unnest($1::text[], $2::text[], $3::text[]) AS b(id, state, reason) WHERE t.id = b.id`
	loadStatesSQL  = `SELECT ` + storedStateColumns + ` FROM character_state WHERE character_id = ANY($1)`
	loadItemsOfSQL = `SELECT ` + itemColumns + ` FROM item_ownership WHERE owner_kind = $1 AND owner_id = ANY($2) ORDER BY item_id`
)

func scanTransfer(row rowScanner) (Transfer, error) {
	var t Transfer
	err := row.Scan(&t.ID, &t.CharacterID, &t.FromInstance, &t.ToInstance, &t.ToMap, &t.State,
		&t.FromX, &t.FromY, &t.ExpiresAt, &t.Reason, &t.CreatedAt, &t.UpdatedAt)
	return t, err
}

// GetTransfer reads one transfer.
func (p *Postgres) GetTransfer(ctx context.Context, id string) (Transfer, error) {
	t, err := scanTransfer(p.db.QueryRowContext(ctx, `SELECT `+transferColumns+` FROM transfers WHERE id = $1`, id))
	if errors.Is(err, sql.ErrNoRows) {
		return Transfer{}, fmt.Errorf("store: transfer %s: %w", id, ErrNotFound)
	}
	return t, wrap("get transfer "+id, err)
}

// claimTransferLeasesSQL takes the leases of characters in transfer: each
// only with its transfer's id while it is in transfer, or once it expired.
// It returns the characters whose lease it took, with their new epochs.
const claimTransferLeasesSQL = `
UPDATE character_authority AS a
SET map_instance = $3, pod = $4, epoch = nextval('character_authority_epoch_seq'),
    expires_at = $5, in_transfer = false, transfer_id = NULL
FROM unnest($1::text[], $2::text[]) AS b(character_id, transfer_id)
WHERE a.character_id = b.character_id AND ((a.in_transfer AND a.transfer_id = b.transfer_id) OR a.expires_at <= $6)
RETURNING a.character_id, a.epoch`

// ArrivalRequest is a character arriving on a map by its transfer.
type ArrivalRequest struct {
	TransferID, CharacterID string
}

// ArrivalResult is one request's part of ArriveByTransfers: its Arrival
// and the character as the arriving map loads it (its last checkpoint,
// or StateErr: ErrNotFound for a character never saved, ErrCorrupt; and
// the items it holds), or Err, its own refusal, when it did not arrive.
type ArrivalResult struct {
	Arrival
	State    CharacterState
	StateErr error
	Items    []Item
	Err      error
}

// ArriveByTransfer admits the character of transfer id on mapInstance, in
// one transaction. On the destination the transfer must be token_issued:
// it becomes destination_accepted. On the source (the player comes back
// because the destination could not take it) it must still be pending:
// it becomes aborted and Returned is set. Either way mapInstance claims
// the lease with a new epoch. An unknown transfer, or one of another
// character or between other maps, is ErrNotFound; one already settled
// ErrTransferSettled; a lease someone else holds ErrLeaseHeld.
func (p *Postgres) ArriveByTransfer(ctx context.Context, id, characterID, mapInstance, pod string, ttl time.Duration, now time.Time) (Arrival, error) {
	results, err := p.ArriveByTransfers(ctx, []ArrivalRequest{{TransferID: id, CharacterID: characterID}}, mapInstance, pod, ttl, now)
	if err != nil {
		return Arrival{}, err
	}
	return results[0].Arrival, results[0].Err
}

// ArriveByTransfers is ArriveByTransfer for characters arriving together
// (a handover's players), in one transaction of seven round trips
// whatever their number, which also loads what each needs to be seated.
// Each request gets its result, in order; one refused (its Err, as
// ArriveByTransfer would return it) changes nothing and holds back none
// of the others. The requests must name distinct transfers and
// characters. The error is the database's: then nothing changed.
func (p *Postgres) ArriveByTransfers(ctx context.Context, reqs []ArrivalRequest, mapInstance, pod string, ttl time.Duration, now time.Time) ([]ArrivalResult, error) {
	var results []ArrivalResult
	err := p.inTx(ctx, func(tx runner) error {
		results = make([]ArrivalResult, len(reqs)) // afresh on a retried attempt
		steps, err := arrivalSteps(ctx, tx, reqs, results, mapInstance)
		if err != nil {
			return err
		}
		if err := claimArrivalLeases(ctx, tx, steps, results, mapInstance, pod, now.Add(ttl), now); err != nil {
			return err
		}
		if err := advanceArrivals(ctx, tx, steps, results); err != nil {
			return err
		}
		return loadArrivals(ctx, tx, results)
	})
	if err != nil {
		return nil, wrap(fmt.Sprintf("arrive by %d transfers", len(reqs)), err)
	}
	for i := range results {
		if results[i].Err != nil {
			results[i].Err = fmt.Errorf("store: arrive by transfer %s: %w", reqs[i].TransferID, results[i].Err)
		}
	}
	return results, nil
}

// arrivalStep is one admissible arrival: the request's index and the state
// its transfer moves to.
type arrivalStep struct {
	index  int
	next   TransferState
	reason string
}

// arrivalSteps locks the requests' transfers and decides each arrival:
// the admissible ones are returned, the others get their Err.
func arrivalSteps(ctx context.Context, tx runner, reqs []ArrivalRequest, results []ArrivalResult, mapInstance string) ([]arrivalStep, error) {
	ids := make([]string, len(reqs))
	for i, r := range reqs {
		ids[i] = r.TransferID
	}
	found, err := queryAll(ctx, tx, scanTransfer, lockTransfersSQL, pq.Array(ids))
	if err != nil {
		return nil, err
	}
	byID := make(map[string]Transfer, len(found))
	for _, t := range found {
		byID[t.ID] = t
	}
	var steps []arrivalStep
	for i, r := range reqs {
		t, ok := byID[r.TransferID]
		switch {
		case !ok:
			results[i].Err = fmt.Errorf("transfer %s: %w", r.TransferID, ErrNotFound)
			continue
		case t.CharacterID != r.CharacterID:
			results[i].Err = fmt.Errorf("transfer %s is not of character %s: %w", r.TransferID, r.CharacterID, ErrNotFound)
			continue
		}
		next, reason, err := nextArrivalState(t, mapInstance)
		if err != nil {
			results[i].Err = err
			continue
		}
		results[i].Transfer, results[i].Returned = t, next == TransferAborted
		steps = append(steps, arrivalStep{index: i, next: next, reason: reason})
	}
	return steps, nil
}

// claimArrivalLeases gives mapInstance the leases of the admissible
// arrivals; one whose lease someone else holds gets ErrLeaseHeld.
func claimArrivalLeases(ctx context.Context, tx runner, steps []arrivalStep, results []ArrivalResult,
	mapInstance, pod string, expires, now time.Time) error {
	characters, transfers := make([]string, len(steps)), make([]string, len(steps))
	for j, st := range steps {
		characters[j], transfers[j] = results[st.index].Transfer.CharacterID, results[st.index].Transfer.ID
	}
	rows, err := tx.QueryContext(ctx, claimTransferLeasesSQL, pq.Array(characters), pq.Array(transfers), mapInstance, pod, expires, now)
	if err != nil {
		return err
	}
	epochs, err := scanEpochs(rows)
	if err != nil {
		return err
	}
	for _, st := range steps {
		r := &results[st.index]
		epoch, ok := epochs[r.Transfer.CharacterID]
		if !ok {
			r.Err = fmt.Errorf("character %s: %w", r.Transfer.CharacterID, ErrLeaseHeld)
			continue
		}
		r.Lease = Lease{CharacterID: r.Transfer.CharacterID, MapInstance: mapInstance, Pod: pod, Epoch: epoch, ExpiresAt: expires}
	}
	return nil
}

// scanEpochs reads rows of (character, epoch).
func scanEpochs(rows *sql.Rows) (map[string]int64, error) {
	defer rows.Close()
	epochs := make(map[string]int64)
	for rows.Next() {
		var character string
		var epoch int64
		if err := rows.Scan(&character, &epoch); err != nil {
			return nil, err
		}
		epochs[character] = epoch
	}
	return epochs, rows.Err()
}

// advanceArrivals moves the transfers of the arrivals that took their
// lease to their next state.
func advanceArrivals(ctx context.Context, tx runner, steps []arrivalStep, results []ArrivalResult) error {
	var ids, states, reasons []string
	for _, st := range steps {
		if results[st.index].Err == nil {
			ids, states, reasons = append(ids, results[st.index].Transfer.ID), append(states, string(st.next)), append(reasons, st.reason)
		}
	}
	if len(ids) == 0 {
		return nil
	}
	_, err := tx.ExecContext(ctx, advanceArrivalsSQL, pq.Array(ids), pq.Array(states), pq.Array(reasons))
	return err
}

// loadArrivals reads the last checkpoint and the items of every character
// that arrived.
func loadArrivals(ctx context.Context, tx runner, results []ArrivalResult) error {
	at := make(map[string]*ArrivalResult)
	var characters []string
	for i := range results {
		if r := &results[i]; r.Err == nil {
			at[r.Transfer.CharacterID] = r
			characters = append(characters, r.Transfer.CharacterID)
			r.StateErr = fmt.Errorf("store: state of character %s: %w", r.Transfer.CharacterID, ErrNotFound)
		}
	}
	if len(characters) == 0 {
		return nil
	}
	states, err := queryAll(ctx, tx, scanState, loadStatesSQL, pq.Array(characters))
	if err != nil {
		return err
	}
	for _, s := range states {
		at[s.CharacterID].State, at[s.CharacterID].StateErr = s, checkStateHash(s)
	}
	items, err := queryAll(ctx, tx, scanItem, loadItemsOfSQL, OwnerCharacter, pq.Array(characters))
	if err != nil {
		return err
	}
	for _, it := range items {
		at[it.OwnerID].Items = append(at[it.OwnerID].Items, it)
	}
	return nil
}

// nextArrivalState is the state a transfer moves to when its character
// arrives on mapInstance, or why it cannot.
func nextArrivalState(t Transfer, mapInstance string) (TransferState, string, error) {
	switch mapInstance {
	case t.ToInstance:
		if t.State != TransferTokenIssued {
			return "", "", fmt.Errorf("transfer %s is %s: %w", t.ID, t.State, ErrTransferSettled)
		}
		return TransferDestinationAccepted, "", nil
	case t.FromInstance:
		if t.State != TransferRequested && t.State != TransferTokenIssued {
			return "", "", fmt.Errorf("transfer %s is %s: %w", t.ID, t.State, ErrTransferSettled)
		}
		return TransferAborted, "returned to the source", nil
	}
	return "", "", fmt.Errorf("transfer %s is not between %s and another map: %w", t.ID, mapInstance, ErrNotFound)
}

// AbortTransfer ends a pending transfer (requested or token_issued) with
// reason and frees the character's lease if it is still the transfer's,
// so the character can join any map again. A settled transfer is
// ErrTransferSettled, an unknown one ErrNotFound.
func (p *Postgres) AbortTransfer(ctx context.Context, id, reason string) error {
	err := p.inTx(ctx, func(tx runner) error {
		var character string
		err := tx.QueryRowContext(ctx, `
UPDATE transfers SET state = 'aborted', reason = $2, updated_at = now()
WHERE id = $1 AND state IN ('requested', 'token_issued') RETURNING character_id`, id, reason).Scan(&character)
		if errors.Is(err, sql.ErrNoRows) {
			var state TransferState
			err := tx.QueryRowContext(ctx, `SELECT state FROM transfers WHERE id = $1`, id).Scan(&state)
			if errors.Is(err, sql.ErrNoRows) {
				return fmt.Errorf("transfer %s: %w", id, ErrNotFound)
			}
			if err != nil {
				return err
			}
			return fmt.Errorf("transfer %s is %s: %w", id, state, ErrTransferSettled)
		}
		if err != nil {
			return err
		}
		_, err = tx.ExecContext(ctx,
			`DELETE FROM character_authority WHERE character_id = $1 AND in_transfer AND transfer_id = $2`, character, id)
		return err
	})
	return wrap("abort transfer "+id, err)
}

// ExpiredTransfersPage is the most transfers ExpiredTransfers returns at
// once; a caller that gets this many asks again.
const ExpiredTransfersPage = 100

const expiredTransfersSQL = `SELECT ` + transferColumns + ` FROM transfers
WHERE from_instance = $1 AND state IN ('requested', 'token_issued') AND expires_at < $2 ORDER BY created_at LIMIT $3`

// ExpiredTransfers lists the transfers from fromInstance still pending
// whose lease expired before now: the player never reached the
// destination, and the source aborts them.
func (p *Postgres) ExpiredTransfers(ctx context.Context, fromInstance string, now time.Time) ([]Transfer, error) {
	out, err := queryAll(ctx, p.hot(ctx), scanTransfer, expiredTransfersSQL, fromInstance, now, ExpiredTransfersPage)
	return out, wrap("expired transfers", err)
}
