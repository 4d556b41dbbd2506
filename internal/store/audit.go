package store

import (
	"context"
	"slices"
	"time"
)

// The replay check (docs/operations.md, "Answering a player's support
// ticket"): every checkpoint_history row records the items the character
// held and the newest of its critical events its snapshot saw. A
// character's events commit one at a time in seq order (the advisory lock
// of CommitCritical and Recover), so a snapshot sees a prefix of them:
// checkpoint N's items, with the moves of the events after its
// events_seq up to checkpoint N+1's applied, must be N+1's items. A
// difference means something changed the character's items around the
// critical path (a row edited by hand, a bug).

// Divergence is a checkpoint whose items are not what the one before it
// and the events between them re-derive.
type Divergence struct {
	From, To CheckpointRecord
	// Events are the seqs of the critical events replayed between them.
	Events []int64
	// Derived is what the replay gives; Missing what it has that To lacks,
	// Unexpected what To has that it does not.
	Derived, Missing, Unexpected []string
}

// ReplayReport is the replay of one character's kept history.
type ReplayReport struct {
	CharacterID string
	// Checked counts the pairs of checkpoints replayed; Skipped those that
	// could not be (a row from before items were recorded, an event from
	// before moves were, or an event pruned since).
	Checked, Skipped int
	Divergences      []Divergence
}

// ReplayCharacter replays the character's kept checkpoints (oldest
// first) against its critical events.
func (p *Postgres) ReplayCharacter(ctx context.Context, characterID string) (ReplayReport, error) {
	history, err := p.CheckpointHistory(ctx, characterID, 0)
	if err != nil {
		return ReplayReport{}, err
	}
	events, err := p.EventsOf(ctx, characterID)
	if err != nil {
		return ReplayReport{}, err
	}
	slices.Reverse(history)
	return Replay(characterID, history, events), nil
}

// Replay checks each checkpoint of history (oldest first) against the one
// before it and the character's events (by seq) between them.
func Replay(characterID string, history []CheckpointRecord, events []CriticalEvent) ReplayReport {
	r := ReplayReport{CharacterID: characterID}
	for i := 1; i < len(history); i++ {
		from, to := history[i-1], history[i]
		between := eventsBetween(events, from.EventsSeq, to.EventsSeq)
		if from.Items == nil || to.Items == nil || !replayable(between, from.EventsSeq, to.EventsSeq) {
			r.Skipped++
			continue
		}
		r.Checked++
		derived := applyMoves(characterID, from.Items, between)
		if slices.Equal(derived, to.Items) {
			continue
		}
		d := Divergence{From: from, To: to, Derived: derived,
			Missing: difference(derived, to.Items), Unexpected: difference(to.Items, derived)}
		for _, ev := range between {
			d.Events = append(d.Events, ev.Seq)
		}
		r.Divergences = append(r.Divergences, d)
	}
	return r
}

// eventsBetween are the events with from < seq <= to.
func eventsBetween(events []CriticalEvent, from, to int64) []CriticalEvent {
	var out []CriticalEvent
	for _, ev := range events {
		if ev.Seq > from && ev.Seq <= to {
			out = append(out, ev)
		}
	}
	return out
}

// replayable: every event between has its moves, and none is missing
// (pruned) where events are known to be.
func replayable(between []CriticalEvent, from, to int64) bool {
	if to > from && len(between) == 0 {
		return false // pruned: seqs are not dense, but an event was there
	}
	return !slices.ContainsFunc(between, func(ev CriticalEvent) bool { return ev.Moves == nil })
}

// applyMoves applies the events' moves to items (sorted, "id" or
// "id@slot") as the character sees them, and returns them sorted.
func applyMoves(characterID string, items []string, events []CriticalEvent) []string {
	held := slices.Clone(items)
	for _, ev := range events {
		for _, m := range ev.Moves {
			if m.FromKind == OwnerCharacter && m.FromID == characterID {
				held = slices.DeleteFunc(held, func(it string) bool { return it == heldItem(m.Item, m.FromSlot) })
			}
			if m.ToKind == OwnerCharacter && m.ToID == characterID {
				held = append(held, heldItem(m.Item, m.ToSlot))
			}
		}
	}
	slices.Sort(held)
	return held
}

// heldItem is an item as checkpoint_history.items names it.
func heldItem(id, slot string) string {
	if slot == "" {
		return id
	}
	return id + "@" + slot
}

// difference is what a has that b lacks.
func difference(a, b []string) []string {
	var out []string
	for _, x := range a {
		if !slices.Contains(b, x) {
			out = append(out, x)
		}
	}
	return out
}

// TimelineEntry is one thing that happened to a character, for
// `roomctl history character`.
type TimelineEntry struct {
	At time.Time
	// What: checkpoint, transfer, event (a critical action) or recovery
	// (one of its items brought back to its anchor).
	What string
	// Map is the map instance it happened on (a transfer's source).
	Map    string
	Detail string
}

// Timeline kinds.
const (
	TimelineCheckpoint = "checkpoint"
	TimelineTransfer   = "transfer"
	TimelineEvent      = "event"
	TimelineRecovery   = "recovery"
)

// timelineSQL merges what the database keeps of a character, by time.
const timelineSQL = `
SELECT at, 'checkpoint', map_instance,
    format('revision %s, tick %s, items [%s]', revision, saved_tick, COALESCE(array_to_string(items, ' '), 'not recorded'))
FROM checkpoint_history WHERE character_id = $1 AND at >= $2
UNION ALL
SELECT created_at, 'transfer', from_instance,
    format('%s -> %s (%s), %s%s', from_instance, to_instance, to_map, state, CASE WHEN reason <> '' THEN ': ' || reason ELSE '' END)
FROM transfers WHERE character_id = $1 AND created_at >= $2
UNION ALL
SELECT created_at, 'event', map_instance, format('%s %s (tick %s, event %s)', kind, item_id, tick, event_id)
FROM critical_events WHERE character_id = $1 AND created_at >= $2 AND kind <> 'item.recovered'
UNION ALL
SELECT decided_at, 'recovery', map_instance,
    format('%s %s: from %s %s to %s %s at (%s, %s)', reason, item_id, old_owner_kind, old_owner_id, new_owner_kind, new_owner_id, new_x, new_y)
FROM item_recovery_audit WHERE old_owner_kind = 'character' AND old_owner_id = $1 AND decided_at >= $2
ORDER BY 1, 2 LIMIT $3`

// CharacterTimeline lists what happened to the character since since, in
// time order, at most limit entries (0: 1,000): its checkpoints, its
// transfers, its critical actions and the recoveries of its items.
func (p *Postgres) CharacterTimeline(ctx context.Context, characterID string, since time.Time, limit int) ([]TimelineEntry, error) {
	if limit <= 0 {
		limit = 1000
	}
	entries, err := queryAll(ctx, p.db, func(row rowScanner) (e TimelineEntry, err error) {
		err = row.Scan(&e.At, &e.What, &e.Map, &e.Detail)
		return e, err
	}, timelineSQL, characterID, since, limit)
	return entries, wrap("timeline of "+characterID, err)
}
