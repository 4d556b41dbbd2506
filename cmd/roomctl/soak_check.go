package main

import (
	"context"
	"database/sql"
	"fmt"
	"io"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/lib/pq"

	"github.com/roomkeeper/roomkeeper/internal/protocol"
)

// What a soak checks at the end (docs/operations.md, "Soak and chaos"):
//
//   - Every acknowledged critical action is in the database, and none more
//     often than it was sent: for each player and kind (loot.pickup,
//     inventory.drop), the critical_events rows are at least the ok acks
//     and at most the commands sent (a command whose ack was lost in a
//     crash may or may not have committed; none commits twice); and each
//     item a pickup was acknowledged for has an event.
//   - What each player last saw in its inventory is what item_ownership
//     says it owns.
//   - No item is owned twice: item_ownership has one row per item, and no
//     two players saw the same item in their inventories.
//   - No character is authoritative in two maps: each player's lease, if
//     it still has one, is on the map its client plays on, not in transfer.
//   - Every soak map is Ready; once the rooms are deleted, no pod is left.

// soakReport is what a soak found.
type soakReport struct {
	cfg        soakConfig
	played     time.Duration
	actions    []action
	faults     []fault
	bots       []*soakBot
	violations []string
}

func (r *soakReport) violate(format string, args ...any) {
	r.violations = append(r.violations, fmt.Sprintf(format, args...))
}

// finish stops the players, waits for the maps, and checks the invariants.
func (s *soak) finish(ctx context.Context, r *soakReport) {
	r.actions, r.faults, r.bots = s.all(), s.faults, s.bots
	for i, b := range s.bots {
		if b.err != nil {
			r.violate("player %d: %v", i, b.err)
		}
	}
	if err := s.waitReady(ctx, recoveryLimit); err != nil {
		r.violate("after the soak: %v", err)
	}
	db, err := sql.Open("postgres", s.cfg.databaseURL)
	if err != nil {
		r.violate("opening the database: %v", err)
		return
	}
	defer db.Close()
	views := s.finalViews(ctx)
	checkEvents(ctx, db, r)
	checkOwnership(ctx, db, views, r)
	checkLeases(ctx, db, s.bots, r)
	for _, b := range s.bots {
		if c := b.client(); c != nil {
			_ = c.Close()
		}
	}
}

// finalViews waits until each player's inventory channel has settled and
// returns it by character.
func (s *soak) finalViews(ctx context.Context) map[string][]protocol.ItemView {
	views := map[string][]protocol.ItemView{}
	for _, b := range s.bots {
		c := b.client()
		if c == nil || b.character == "" {
			continue
		}
		var last []protocol.ItemView
		_ = poll(ctx, 10*time.Second, func() error {
			st := c.Snapshot()
			if st.Inventory == nil {
				return fmt.Errorf("no inventory yet")
			}
			// Settled when two looks a poll apart agree: the ack of the
			// last action may come before its channel update.
			now := st.Inventory.Items
			if last == nil || !slices.Equal(now, last) {
				last = now
				return fmt.Errorf("changing")
			}
			return nil
		})
		views[b.character] = last
	}
	return views
}

// checkEvents holds the players' actions against critical_events.
func checkEvents(ctx context.Context, db *sql.DB, r *soakReport) {
	type key struct{ character, kind string }
	acked, sent := map[key]int{}, map[key]int{}
	var items []string
	for _, a := range r.actions {
		if a.kind != "loot.pickup" && a.kind != "inventory.drop" {
			continue
		}
		k := key{a.character, a.kind}
		sent[k]++
		if a.ok {
			acked[k]++
			if a.kind == "loot.pickup" && a.item != "" {
				items = append(items, a.character+"\x00"+a.item)
			}
		}
	}
	for k, n := range sent {
		var rows int
		if err := db.QueryRowContext(ctx, `SELECT count(*) FROM critical_events WHERE character_id = $1 AND kind = $2`,
			k.character, k.kind).Scan(&rows); err != nil {
			r.violate("reading critical_events: %v", err)
			return
		}
		if rows < acked[k] || rows > n {
			r.violate("character %s: %d %s events, %d acknowledged, %d sent", k.character, rows, k.kind, acked[k], n)
		}
	}
	for _, ci := range items {
		character, item, _ := strings.Cut(ci, "\x00")
		var rows int
		if err := db.QueryRowContext(ctx, `SELECT count(*) FROM critical_events WHERE character_id = $1 AND kind = 'loot.pickup' AND item_id = $2`,
			character, item).Scan(&rows); err != nil || rows == 0 {
			r.violate("character %s: the acknowledged pickup of %s has no event (%v)", character, item, err)
		}
	}
}

// checkOwnership holds the players' last inventories against
// item_ownership, and looks for items owned twice.
func checkOwnership(ctx context.Context, db *sql.DB, views map[string][]protocol.ItemView, r *soakReport) {
	var twice int
	if err := db.QueryRowContext(ctx, `SELECT count(*) FROM (SELECT item_id FROM item_ownership GROUP BY item_id HAVING count(*) > 1) d`).
		Scan(&twice); err != nil || twice > 0 {
		r.violate("items with two owners in item_ownership: %d (%v)", twice, err)
	}
	holder := map[string]string{}
	for character, items := range views {
		var owned []string
		rows, err := db.QueryContext(ctx, `SELECT item_id FROM item_ownership WHERE owner_kind = 'character' AND owner_id = $1`, character)
		if err != nil {
			r.violate("reading item_ownership: %v", err)
			return
		}
		for rows.Next() {
			var id string
			_ = rows.Scan(&id)
			owned = append(owned, id)
		}
		_ = rows.Close()
		var seen []string
		for _, it := range items {
			seen = append(seen, it.ID)
			if other, ok := holder[it.ID]; ok {
				r.violate("item %s seen by %s and %s", it.ID, other, character)
			}
			holder[it.ID] = character
		}
		sort.Strings(owned)
		sort.Strings(seen)
		if !slices.Equal(owned, seen) {
			r.violate("character %s: the client shows %v, the database %v", character, seen, owned)
		}
	}
}

// checkLeases holds the players' leases against where their clients play.
func checkLeases(ctx context.Context, db *sql.DB, bots []*soakBot, r *soakReport) {
	where := map[string]string{}
	var ids []string
	for _, b := range bots {
		if c := b.client(); c != nil && b.character != "" {
			where[b.character] = c.Welcome().Instance
			ids = append(ids, b.character)
		}
	}
	rows, err := db.QueryContext(ctx, `SELECT character_id, map_instance, in_transfer FROM character_authority WHERE character_id = ANY($1)`, pq.Array(ids))
	if err != nil {
		r.violate("reading character_authority: %v", err)
		return
	}
	defer rows.Close()
	for rows.Next() {
		var character, instance string
		var inTransfer bool
		if err := rows.Scan(&character, &instance, &inTransfer); err != nil {
			r.violate("reading character_authority: %v", err)
			return
		}
		if inTransfer || instance != where[character] {
			r.violate("character %s: lease on %s (in transfer %v), its client plays on %s", character, instance, inTransfer, where[character])
		}
	}
}

// print writes the summary.
func (r *soakReport) print(w io.Writer) {
	fmt.Fprintf(w, "soak: %d rooms, %d players, %s", r.cfg.rooms, r.cfg.bots, r.played.Round(time.Second))
	if r.played > 0 {
		fmt.Fprintf(w, ", %d actions, %.1f actions/s (target %.1f)", len(r.actions), float64(len(r.actions))/r.played.Seconds(), r.cfg.rate)
	}
	fmt.Fprintln(w)
	byKind := map[string][]time.Duration{}
	codes := map[string]int{}
	for _, a := range r.actions {
		if a.ok {
			byKind[a.kind] = append(byKind[a.kind], a.latency)
		} else {
			codes[string(a.code)]++
		}
	}
	for _, kind := range sortedKeys(byKind) {
		l := byKind[kind]
		slices.Sort(l)
		fmt.Fprintf(w, "  %-15s %5d ok  ack p50 %s  p99 %s\n", kind, len(l), pct(l, 0.5), pct(l, 0.99))
	}
	if len(codes) > 0 {
		fmt.Fprintf(w, "  refused: %v\n", codes)
	}
	var reconnects, resumes, rejoins, transfers int
	for _, b := range r.bots {
		if c := b.client(); c != nil {
			st := c.Snapshot()
			reconnects, resumes, rejoins, transfers = reconnects+st.Reconnects, resumes+st.Resumes, rejoins+st.Rejoins, transfers+st.Transfers
		}
	}
	fmt.Fprintf(w, "  players: %d reconnects (%d resumed, %d joined again), %d transfers\n", reconnects, resumes, rejoins, transfers)
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

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
