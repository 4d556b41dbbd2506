package store

import (
	"context"
	"fmt"
	"regexp"
	"time"

	"github.com/lib/pq"
	"github.com/lib/pq/pqerror"
)

// The event log (docs/operations.md, "The event log"): every event of a
// map, appended in batches by its pod, in hourly partitions of event_log
// that retention drops whole. The critical actions among them keep their
// own exactly-once record in critical_events; this log is for replay,
// analytics and cheat hunting, and a pod drops (and counts) what it cannot
// write rather than wait.

// LoggedEvent is one row of event_log.
type LoggedEvent struct {
	At          time.Time
	MapInstance string
	Tick        int64
	// Seq is the event's place in its map's log: it only grows, across
	// the map's pods too (a pod numbers from its start time in
	// microseconds).
	Seq int64
	// EventID is the protocol's id of an event clients get (0 for one
	// they do not: hits, drops, transfers).
	EventID int64
	Type    string
	// Entity and By are the map's entity ids; Character and ByCharacter
	// name the players among them.
	Entity, By             int64
	Character, ByCharacter string
	ItemID                 string
	// Amount is what the event counts: a hit's damage, the phase a boss
	// entered, the id of a cleared room.
	Amount int32
	X, Y   float32
	Detail string
}

// eventLogPartition is an hour of event_log, named for the hour it starts
// (UTC): event_log_p2026112913.
const eventLogPartitionLayout = "2006010215"

var eventLogPartitionName = regexp.MustCompile(`^event_log_p(\d{10})$`)

// appendEventsSQL writes a batch in one statement, the columns as arrays.
const appendEventsSQL = `
INSERT INTO event_log (at, map_instance, tick, seq, event_id, type, entity, character, by_entity, by_character, item_id, amount, x, y, detail)
SELECT * FROM unnest($1::timestamptz[], $2::text[], $3::bigint[], $4::bigint[], $5::bigint[], $6::text[], $7::bigint[],
    $8::text[], $9::bigint[], $10::text[], $11::text[], $12::integer[], $13::real[], $14::real[], $15::text[])`

// AppendEvents writes the batch in one statement. An hour with no
// partition yet (the manager makes them ahead; a pod whose manager is away
// finds one missing) is created, and the batch written again.
func (p *Postgres) AppendEvents(ctx context.Context, events []LoggedEvent) error {
	if len(events) == 0 {
		return nil
	}
	args := eventColumns(events)
	_, err := p.hot(ctx).ExecContext(ctx, appendEventsSQL, args...)
	if hasCode(err, pqerror.CheckViolation) { // "no partition of relation found for row"
		first, last := events[0].At, events[0].At
		for _, ev := range events {
			first, last = minTime(first, ev.At), maxTime(last, ev.At)
		}
		if err = p.EnsureEventLogPartitions(ctx, first, last); err == nil {
			_, err = p.hot(ctx).ExecContext(ctx, appendEventsSQL, args...)
		}
	}
	return wrap("append events", err)
}

// eventColumns turns the batch into appendEventsSQL's arrays.
func eventColumns(events []LoggedEvent) []any {
	n := len(events)
	at := make([]time.Time, n)
	maps, types, chars, byChars, items, details := make([]string, n), make([]string, n), make([]string, n),
		make([]string, n), make([]string, n), make([]string, n)
	ticks, seqs, ids, entities, bys, amounts := make([]int64, n), make([]int64, n), make([]int64, n), make([]int64, n),
		make([]int64, n), make([]int64, n)
	xs, ys := make([]float64, n), make([]float64, n)
	for i, ev := range events {
		at[i], maps[i], ticks[i], seqs[i], ids[i], types[i] = ev.At, ev.MapInstance, ev.Tick, ev.Seq, ev.EventID, ev.Type
		entities[i], chars[i], bys[i], byChars[i] = ev.Entity, ev.Character, ev.By, ev.ByCharacter
		items[i], amounts[i], xs[i], ys[i], details[i] = ev.ItemID, int64(ev.Amount), float64(ev.X), float64(ev.Y), ev.Detail
	}
	return []any{pq.Array(timeStrings(at)), pq.Array(maps), pq.Array(ticks), pq.Array(seqs), pq.Array(ids), pq.Array(types),
		pq.Array(entities), pq.Array(chars), pq.Array(bys), pq.Array(byChars), pq.Array(items), pq.Array(amounts),
		pq.Array(xs), pq.Array(ys), pq.Array(details)}
}

// timeStrings formats times as Postgres reads timestamptz (pq.Array has no
// time.Time array).
func timeStrings(ts []time.Time) []string {
	out := make([]string, len(ts))
	for i, t := range ts {
		out[i] = t.UTC().Format("2006-01-02 15:04:05.999999Z07:00")
	}
	return out
}

// EnsureEventLogPartitions creates the hourly partitions of event_log that
// cover from through to, those missing. Creators (the manager, pods) take
// turns under an advisory lock, each waiting at most pruneLockTimeout for
// the table's lock, so a busy log is not held up.
func (p *Postgres) EnsureEventLogPartitions(ctx context.Context, from, to time.Time) error {
	from, to = from.UTC().Truncate(time.Hour), to.UTC().Truncate(time.Hour)
	for hour := from; !hour.After(to); hour = hour.Add(time.Hour) {
		if err := p.tryTx(ctx, func(tx runner) error { return createEventLogPartition(ctx, tx, hour) }); err != nil {
			return wrap("event log partition", lockBusy(err))
		}
	}
	return nil
}

// eventLogLock is the advisory lock of partition changes ("eventlog").
const eventLogLock = 0x6576656e746c6f67

func createEventLogPartition(ctx context.Context, tx runner, hour time.Time) error {
	if _, err := tx.ExecContext(ctx, `SELECT pg_advisory_xact_lock($1)`, int64(eventLogLock)); err != nil {
		return err
	}
	name := "event_log_p" + hour.Format(eventLogPartitionLayout)
	var exists bool
	if err := tx.QueryRowContext(ctx, `SELECT to_regclass($1) IS NOT NULL`, name).Scan(&exists); err != nil || exists {
		return err
	}
	if err := setLockTimeout(ctx, tx); err != nil {
		return err
	}
	_, err := tx.ExecContext(ctx, fmt.Sprintf(`CREATE TABLE %s PARTITION OF event_log FOR VALUES FROM ('%s') TO ('%s')`,
		pq.QuoteIdentifier(name), hour.Format(time.RFC3339), hour.Add(time.Hour).Format(time.RFC3339)))
	return err
}

// DropEventLogBefore drops the partitions of event_log whose hour ended
// before cutoff, oldest first, and says how many it dropped.
func (p *Postgres) DropEventLogBefore(ctx context.Context, cutoff time.Time) (int, error) {
	names, err := queryAll(ctx, p.db, scanString, `
SELECT c.relname FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid
WHERE i.inhparent = 'event_log'::regclass ORDER BY c.relname`)
	if err != nil {
		return 0, wrap("event log partitions", err)
	}
	dropped := 0
	for _, name := range names {
		m := eventLogPartitionName.FindStringSubmatch(name)
		if m == nil {
			continue // not ours: someone attached it by hand
		}
		hour, err := time.Parse(eventLogPartitionLayout, m[1])
		if err != nil || hour.Add(time.Hour).After(cutoff) {
			continue
		}
		err = p.tryTx(ctx, func(tx runner) error {
			if err := setLockTimeout(ctx, tx); err != nil {
				return err
			}
			_, err := tx.ExecContext(ctx, "DROP TABLE "+pq.QuoteIdentifier(name))
			return err
		})
		if err != nil {
			return dropped, wrap("dropping "+name, lockBusy(err))
		}
		dropped++
	}
	return dropped, nil
}

// EventFilter selects event_log rows: a time range, and optionally one
// map instance and one character (as the actor or the one acted upon).
type EventFilter struct {
	From, To    time.Time
	MapInstance string
	Character   string
	Limit       int
}

// Events reads the event log in order: by time, then map, then the map's
// own order (seq).
func (p *Postgres) Events(ctx context.Context, f EventFilter) ([]LoggedEvent, error) {
	if f.Limit <= 0 {
		f.Limit = 1000
	}
	events, err := queryAll(ctx, p.db, scanLoggedEvent, `
SELECT at, map_instance, tick, seq, event_id, type, entity, character, by_entity, by_character, item_id, amount, x, y, detail
FROM event_log WHERE at >= $1 AND at < $2
AND ($3 = '' OR map_instance = $3) AND ($4 = '' OR character = $4 OR by_character = $4)
ORDER BY at, map_instance, seq LIMIT $5`, f.From, f.To, f.MapInstance, f.Character, f.Limit)
	return events, wrap("events", err)
}

func scanLoggedEvent(row rowScanner) (e LoggedEvent, err error) {
	err = row.Scan(&e.At, &e.MapInstance, &e.Tick, &e.Seq, &e.EventID, &e.Type, &e.Entity, &e.Character, &e.By,
		&e.ByCharacter, &e.ItemID, &e.Amount, &e.X, &e.Y, &e.Detail)
	return e, err
}

func minTime(a, b time.Time) time.Time {
	if b.Before(a) {
		return b
	}
	return a
}

func maxTime(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}
