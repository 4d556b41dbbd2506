package main

import (
	"cmp"
	"context"
	"database/sql"
	"fmt"
	"io"
	"maps"
	"slices"
	"time"

	"github.com/lib/pq"

	"github.com/roomkeeper/roomkeeper/internal/playtest"
	"github.com/roomkeeper/roomkeeper/internal/protocol"
	"github.com/roomkeeper/roomkeeper/internal/store"
)

// What a soak checks at the end (docs/operations.md, "Soak and chaos").
// The database's side is read for the soak's characters and for the
// critical_events rows written since the soak started (seq above the
// highest before it), so earlier soaks on the same database do not count.
//
//   - Exactly once. An action is one command: one seq of one seat. The
//     server derives the event id from the seat and the seq, so an action
//     has at most one critical_events row, and picking an item up, dropping
//     it and picking it up again is three actions with three rows (two
//     loot.pickup, one inventory.drop). For every character and critical
//     kind (loot.pickup, inventory.drop, inventory.equip,
//     inventory.unequip), and for every character, kind and item the
//     command names (an unequip names a slot, not an item), the rows are
//     at least the ok acks and at most the ok acks plus the commands of
//     that character and kind whose ack never came (no_ack: the connection
//     dropped under them, so they may or may not have committed). A refusal
//     (ok false) commits nothing. No event id appears twice.
//   - Item history. Replayed in seq order, the soak's events never take an
//     item from a character that does not hold it: no pickup of an item a
//     character holds, no drop, equip or unequip by another character than
//     the holder. Where the replay knows an item's holder at the end,
//     item_ownership agrees.
//   - Views. What each player last saw in its inventory channel is what
//     item_ownership says its character owns, item for item and slot for
//     slot; no item is in two players' views or owned twice.
//   - Leases. A character holds its authority lease on the map its client
//     plays on, not in transfer, and on one map only.
//   - Every soak map is Ready; once the rooms are deleted, no pod of them
//     is left.
//
// The rows are read again, in one snapshot each time, for up to
// settleLimit until all of this holds: the inventory channel comes with
// the next snapshot after an ack, a transfer started before the end
// finishes after it, and an action whose commit was under way when play
// stopped commits after it.

// settleLimit bounds the wait for the checks to hold.
const settleLimit = 20 * time.Second

// checkReadLimit bounds one reading of the views' and leases' rows: a
// read that hangs (the 50-room soak's once stalled for many minutes on
// a full core, a query that takes 30 ms on the same data afterwards) is
// reported, not waited for.
const checkReadLimit = 2 * time.Minute

// soakReport is what a soak found.
type soakReport struct {
	cfg        soakConfig
	played     time.Duration
	actions    []action
	unsent     int
	faults     []fault
	bots       []*soakBot
	violations []string
}

func (r *soakReport) violate(format string, args ...any) {
	r.violations = append(r.violations, fmt.Sprintf(format, args...))
}

// eventRow is a critical_events row.
type eventRow struct {
	seq                       int64
	id, character, kind, item string
}

// ownerRow is an item_ownership row.
type ownerRow struct {
	item, ownerKind, owner, slot string
}

// leaseRow is a character_authority row.
type leaseRow struct {
	character, instance string
	inTransfer          bool
}

// finish checks the invariants with the players still connected (their
// last views and where they play), then stops them.
func (s *soak) finish(ctx context.Context, r *soakReport) {
	r.actions, r.unsent = s.all()
	r.faults, r.bots = s.faults, s.bots
	defer s.closeClients()
	for i, b := range s.bots {
		if b.err != nil {
			r.violate("player %d: %v", i, b.err)
		}
	}
	if err := s.waitReady(ctx, recoveryLimit); err != nil {
		r.violate("after the soak: %v", err)
	}
	characters := s.characters()
	var last []string
	_ = poll(ctx, settleLimit, func() error {
		reading, cancel := context.WithTimeout(ctx, checkReadLimit)
		defer cancel()
		last = s.checkSettled(reading, r.actions, characters)
		if len(last) > 0 {
			return fmt.Errorf("%d violations", len(last))
		}
		return nil
	})
	r.violations = append(r.violations, last...)
}

// checkSettled reads the players' views and where they play, and the
// database's events, owners and leases, and checks them. The rows are
// one snapshot (a repeatable-read transaction): an action still
// committing when play stopped is in all of them or in none, never in
// the owners and not yet in the history read a moment before.
func (s *soak) checkSettled(ctx context.Context, actions []action, characters []string) []string {
	views, where := s.views()
	var viewed []string
	for _, items := range views {
		for _, it := range items {
			viewed = append(viewed, it.ID)
		}
	}
	snap, err := s.readRows(ctx, characters, viewed)
	if err != nil {
		return []string{err.Error()}
	}
	out := checkExactlyOnce(actions, snap.events)
	out = append(out, checkItemHistory(snap.history, snap.owners)...)
	out = append(out, checkViews(views, snap.owners)...)
	return append(out, checkLeases(where, snap.leases)...)
}

// soakRows is what the checks read of the database, in one snapshot.
type soakRows struct {
	events, history []eventRow
	owners          []ownerRow
	leases          []leaseRow
}

// readRows reads the characters' events since the soak started, the
// history of every item they touched, the owners of those items and of
// the viewed ones, and the characters' leases, in one snapshot.
func (s *soak) readRows(ctx context.Context, characters, viewed []string) (*soakRows, error) {
	tx, err := s.db.BeginTx(ctx, &sql.TxOptions{Isolation: sql.LevelRepeatableRead, ReadOnly: true})
	if err != nil {
		return nil, fmt.Errorf("reading the database: %w", err)
	}
	defer func() { _ = tx.Rollback() }()
	var rows soakRows
	if rows.events, err = loadEvents(ctx, tx, s.startSeq, characters); err != nil {
		return nil, fmt.Errorf("reading critical_events: %w", err)
	}
	if rows.history, err = loadItemHistory(ctx, tx, s.startSeq, eventItems(rows.events)); err != nil {
		return nil, fmt.Errorf("reading critical_events: %w", err)
	}
	if rows.owners, err = loadOwners(ctx, tx, characters, append(viewed, eventItems(rows.history)...)); err != nil {
		return nil, fmt.Errorf("reading item_ownership: %w", err)
	}
	if rows.leases, err = loadLeases(ctx, tx, characters); err != nil {
		return nil, fmt.Errorf("reading character_authority: %w", err)
	}
	return &rows, nil
}

// characters are the ids of the players' characters.
func (s *soak) characters() []string {
	var ids []string
	for _, b := range s.bots {
		if b.character != "" {
			ids = append(ids, b.character)
		}
	}
	return ids
}

// views are, by character, what each player's inventory channel last
// showed (its welcome's before the first), and the map each plays on. A
// player who stopped playing (a violation of its own) plays nowhere: its
// last welcome names the map it was on before it gave up, not where its
// character went since (a crossing whose welcome never came).
func (s *soak) views() (views map[string][]protocol.ItemView, where map[string]string) {
	views, where = map[string][]protocol.ItemView{}, map[string]string{}
	for _, b := range s.bots {
		c := b.client()
		if c == nil || b.character == "" {
			continue
		}
		items := c.Welcome().Inventory
		if inv := c.Snapshot().Inventory; inv != nil {
			items = inv.Items
		}
		views[b.character] = items
		if b.err == nil {
			where[b.character] = c.Welcome().Instance
		}
	}
	return views, where
}

func (s *soak) closeClients() {
	for _, b := range s.bots {
		if c := b.client(); c != nil {
			_ = c.Close()
		}
	}
}

// lastSeq is the highest critical_events seq so far.
func lastSeq(ctx context.Context, db *sql.DB) (int64, error) {
	var seq int64
	err := db.QueryRowContext(ctx, `SELECT coalesce(max(seq), 0) FROM critical_events`).Scan(&seq)
	return seq, err
}

// loadEvents reads the characters' player actions after seq.
func loadEvents(ctx context.Context, db querier, after int64, characters []string) ([]eventRow, error) {
	return queryEvents(ctx, db, `SELECT seq, event_id, character_id, kind, item_id FROM critical_events
		WHERE seq > $1 AND character_id = ANY($2) AND kind = ANY($3) ORDER BY seq`,
		after, pq.Array(characters), pq.Array([]string{kindPickup, kindDrop, kindEquip, kindUnequip}))
}

// loadItemHistory reads every event of the items after seq, whoever
// caused it (recoveries too).
func loadItemHistory(ctx context.Context, db querier, after int64, items []string) ([]eventRow, error) {
	return queryEvents(ctx, db, `SELECT seq, event_id, character_id, kind, item_id FROM critical_events
		WHERE seq > $1 AND item_id = ANY($2) ORDER BY seq`, after, pq.Array(items))
}

func queryEvents(ctx context.Context, db querier, query string, args ...any) ([]eventRow, error) {
	return queryRows(ctx, db, func(rows *sql.Rows, e *eventRow) error {
		return rows.Scan(&e.seq, &e.id, &e.character, &e.kind, &e.item)
	}, query, args...)
}

// loadOwners reads the rows of what the characters own and of the items.
func loadOwners(ctx context.Context, db querier, characters, items []string) ([]ownerRow, error) {
	return queryRows(ctx, db, func(rows *sql.Rows, o *ownerRow) error {
		return rows.Scan(&o.item, &o.ownerKind, &o.owner, &o.slot)
	}, `SELECT item_id, owner_kind, owner_id, slot FROM item_ownership
		WHERE (owner_kind = $1 AND owner_id = ANY($2)) OR item_id = ANY($3)`,
		store.OwnerCharacter, pq.Array(characters), pq.Array(items))
}

// loadLeases reads the characters' authority leases.
func loadLeases(ctx context.Context, db querier, characters []string) ([]leaseRow, error) {
	return queryRows(ctx, db, func(rows *sql.Rows, l *leaseRow) error {
		return rows.Scan(&l.character, &l.instance, &l.inTransfer)
	}, `SELECT character_id, map_instance, in_transfer FROM character_authority
		WHERE character_id = ANY($1)`, pq.Array(characters))
}

// querier runs queries: the database, or one transaction of it.
type querier interface {
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
}

// queryRows runs query and scans each row into a T.
func queryRows[T any](ctx context.Context, db querier, scan func(*sql.Rows, *T) error, query string, args ...any) ([]T, error) {
	rows, err := db.QueryContext(ctx, query, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []T
	for rows.Next() {
		var row T
		if err := scan(rows, &row); err != nil {
			return nil, err
		}
		out = append(out, row)
	}
	return out, rows.Err()
}

// eventItems are the distinct items of events.
func eventItems(events []eventRow) []string {
	seen := map[string]bool{}
	for _, e := range events {
		if e.item != "" {
			seen[e.item] = true
		}
	}
	return slices.Sorted(maps.Keys(seen))
}

// tally counts per character, kind and item; item "" counts the
// character's and kind's total.
type tally map[[3]string]int

func (t tally) add(character, kind, item string) {
	t[[3]string{character, kind, ""}]++
	if item != "" {
		t[[3]string{character, kind, item}]++
	}
}

// itemNamed is the item of an action or event as its command named it: an unequip
// names a slot, and moves whatever the slot holds, which the player's view
// may not know (an equip whose ack was lost), so it is counted per
// character and kind only. The item history checks where it went.
func itemNamed(kind, item string) string {
	if kind == kindUnequip {
		return ""
	}
	return item
}

// checkExactlyOnce holds the acknowledged critical actions against their
// events (see the top of this file).
//
// An acknowledged pickup whose item the player could not name (its view
// still held the item it had just dropped, so the ack's inventory gained
// nothing new to it) counts in the character's total as acknowledged,
// and may be any item's: like an unanswered one, it lets a row of each
// item stand beyond what was acknowledged by name.
func checkExactlyOnce(actions []action, events []eventRow) []string {
	acked, unanswered, unnamed, rows := tally{}, tally{}, tally{}, tally{}
	for _, a := range actions {
		switch {
		case !isCritical(a.kind) || a.character == "":
		case a.ok:
			item := itemNamed(a.kind, a.item)
			acked.add(a.character, a.kind, item)
			if item == "" && a.kind != kindUnequip {
				unnamed.add(a.character, a.kind, "")
			}
		case a.code == codeNoAck:
			unanswered.add(a.character, a.kind, "")
		}
	}
	var out []string
	ids := map[string]bool{}
	for _, e := range events {
		if ids[e.id] {
			out = append(out, fmt.Sprintf("event %s is in critical_events twice", e.id))
		}
		ids[e.id] = true
		rows.add(e.character, e.kind, itemNamed(e.kind, e.item))
	}
	keys := slices.SortedFunc(maps.Keys(merge(acked, rows)), func(a, b [3]string) int {
		return cmp.Or(cmp.Compare(a[0], b[0]), cmp.Compare(a[1], b[1]), cmp.Compare(a[2], b[2]))
	})
	for _, k := range keys {
		character, kind, item := k[0], k[1], k[2]
		what := kind
		if item != "" {
			what += " of " + item
		}
		most := acked[k] + unanswered[[3]string{character, kind, ""}]
		if item != "" {
			most += unnamed[[3]string{character, kind, ""}]
		}
		switch {
		case rows[k] < acked[k]:
			out = append(out, fmt.Sprintf("character %s: %d %s acknowledged, %d in critical_events: lost", character, acked[k], what, rows[k]))
		case rows[k] > most:
			out = append(out, fmt.Sprintf("character %s: %d %s in critical_events, more than the %d acknowledged and %d unanswered or unnamed",
				character, rows[k], what, acked[k], most-acked[k]))
		}
	}
	return out
}

// merge is the union of the keys of a and b (values do not matter).
func merge(a, b tally) tally {
	out := maps.Clone(a)
	maps.Copy(out, b)
	return out
}

// checkItemHistory replays the events in seq order and checks that each
// moved an item from where it was; where the replay knows an item's
// holder at the end, owners must agree ("" holder: not a character's).
func checkItemHistory(events []eventRow, owners []ownerRow) []string {
	var out []string
	holder := map[string]string{} // item -> character, "" on the ground; absent: not known
	for _, e := range slices.SortedFunc(slices.Values(events), func(a, b eventRow) int { return cmp.Compare(a.seq, b.seq) }) {
		h, known := holder[e.item]
		switch e.kind {
		case kindPickup:
			if known && h != "" {
				out = append(out, fmt.Sprintf("item %s: picked up by %s (event seq %d) while %s held it", e.item, e.character, e.seq, h))
			}
			holder[e.item] = e.character
		case kindDrop, kindEquip, kindUnequip:
			if known && h != e.character {
				out = append(out, fmt.Sprintf("item %s: %s by %s (event seq %d) while %q held it", e.item, e.kind, e.character, e.seq, h))
			}
			holder[e.item] = e.character
			if e.kind == kindDrop {
				holder[e.item] = ""
			}
		case store.EventRecovered: // laid on a map's ground
			holder[e.item] = ""
		default:
			delete(holder, e.item)
		}
	}
	byItem := map[string]ownerRow{}
	for _, o := range owners {
		byItem[o.item] = o
	}
	for _, item := range slices.Sorted(maps.Keys(holder)) {
		h, o := holder[item], byItem[item]
		isCharacter := o.ownerKind == store.OwnerCharacter
		switch {
		case o.ownerKind == store.OwnerDestroyed:
		case h != "" && (!isCharacter || o.owner != h):
			out = append(out, fmt.Sprintf("item %s: the events leave it with %s, item_ownership with %s %q", item, h, o.ownerKind, o.owner))
		case h == "" && isCharacter:
			out = append(out, fmt.Sprintf("item %s: the events leave it on the ground, item_ownership with %s", item, o.owner))
		}
	}
	return out
}

// checkViews holds the players' views (by character) against
// item_ownership, and looks for items owned or seen twice.
func checkViews(views map[string][]protocol.ItemView, owners []ownerRow) []string {
	var out []string
	owned := map[string]map[string]string{} // character -> item -> slot
	seen := map[string]bool{}
	for _, o := range owners {
		if seen[o.item] {
			out = append(out, fmt.Sprintf("item %s has two rows in item_ownership", o.item))
		}
		seen[o.item] = true
		if o.ownerKind == store.OwnerCharacter {
			if owned[o.owner] == nil {
				owned[o.owner] = map[string]string{}
			}
			owned[o.owner][o.item] = o.slot
		}
	}
	holder := map[string]string{}
	for _, character := range slices.Sorted(maps.Keys(views)) {
		shown := map[string]string{}
		for _, it := range views[character] {
			if other, ok := holder[it.ID]; ok && other != character {
				out = append(out, fmt.Sprintf("item %s is in the views of %s and %s", it.ID, other, character))
			}
			holder[it.ID] = character
			shown[it.ID] = it.Slot
		}
		if db := owned[character]; !maps.Equal(shown, db) {
			out = append(out, fmt.Sprintf("character %s: its player sees %v, item_ownership says %v (item: slot)", character, shown, db))
		}
	}
	return out
}

// checkLeases holds the characters' leases against where their players
// play (by character).
func checkLeases(where map[string]string, leases []leaseRow) []string {
	var out []string
	count := map[string]int{}
	for _, l := range leases {
		if count[l.character]++; count[l.character] == 2 {
			out = append(out, fmt.Sprintf("character %s holds leases on two maps", l.character))
		}
		playing, ok := where[l.character]
		if ok && (l.inTransfer || l.instance != playing) {
			out = append(out, fmt.Sprintf("character %s: lease on %s (in transfer: %v), its player plays on %s", l.character, l.instance, l.inTransfer, playing))
		}
	}
	return out
}

// duringAFault reports whether t falls in a fault's window: from its
// injection until it recovered (a fault that did not recover lasts to the
// end). The summary gives the acks outside them apart, to tell what the
// faults cost from what the load does.
func (r *soakReport) duringAFault(t time.Time) bool {
	for _, f := range r.faults {
		if !t.Before(f.at) && (f.err != nil || t.Before(f.at.Add(f.recovery))) {
			return true
		}
	}
	return false
}

// print writes the summary.
func (r *soakReport) print(w io.Writer) {
	fmt.Fprintf(w, "soak: %d rooms, %d players, %s", r.cfg.rooms, r.cfg.bots, r.played.Round(time.Second))
	if r.played > 0 {
		fmt.Fprintf(w, ", %d actions, %.1f actions/s (target %.1f)", len(r.actions), float64(len(r.actions))/r.played.Seconds(), r.cfg.rate)
	}
	fmt.Fprintln(w)
	byKind, calmByKind := map[string][]time.Duration{}, map[string][]time.Duration{}
	codes := map[string]int{}
	for _, a := range r.actions {
		if !a.ok {
			codes[string(a.code)]++
			continue
		}
		byKind[a.kind] = append(byKind[a.kind], a.latency)
		if !r.duringAFault(a.sent) {
			calmByKind[a.kind] = append(calmByKind[a.kind], a.latency)
		}
	}
	for _, kind := range slices.Sorted(maps.Keys(byKind)) {
		l, calm := byKind[kind], calmByKind[kind]
		slices.Sort(l)
		slices.Sort(calm)
		fmt.Fprintf(w, "  %-17s %5d ok  ack p50 %s  p99 %s;  %5d sent outside the faults: p50 %s  p99 %s\n", kind, len(l),
			playtest.Percentile(l, 0.5), playtest.Percentile(l, 0.99), len(calm), playtest.Percentile(calm, 0.5), playtest.Percentile(calm, 0.99))
	}
	if len(codes) > 0 {
		fmt.Fprintf(w, "  refused or unanswered, by code: %v\n", codes)
	}
	if r.unsent > 0 {
		fmt.Fprintf(w, "  not sent (the client was reconnecting): %d\n", r.unsent)
	}
	var reconnects, resumes, rejoins, transfers, joinRetries int
	for _, b := range r.bots {
		if c := b.client(); c != nil {
			st := c.Snapshot()
			reconnects, resumes, rejoins, transfers = reconnects+st.Reconnects, resumes+st.Resumes, rejoins+st.Rejoins, transfers+st.Transfers
			joinRetries += st.JoinTries - 1
		}
	}
	fmt.Fprintf(w, "  players: %d first joins tried again, %d reconnects (%d resumed, %d joined again), %d transfers\n",
		joinRetries, reconnects, resumes, rejoins, transfers)
	for _, f := range r.faults {
		status := "recovered in " + f.recovery.Round(100*time.Millisecond).String()
		if f.err != nil {
			status = "FAILED: " + f.err.Error()
		}
		fmt.Fprintf(w, "  fault %-17s %-28s %s\n", f.kind, f.target, status)
	}
	if len(r.violations) == 0 {
		fmt.Fprintln(w, "  invariants: all held")
		return
	}
	for _, v := range r.violations {
		fmt.Fprintln(w, "  VIOLATION:", v)
	}
}
