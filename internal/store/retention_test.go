package store

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"
)

// ageRows sets the time column of the rows a query selects back by age.
func ageRows(t *testing.T, s *Postgres, query string, age time.Duration, args ...any) {
	t.Helper()
	if _, err := s.DB().ExecContext(testCtx(t), query, append([]any{time.Now().Add(-age)}, args...)...); err != nil {
		t.Fatal(err)
	}
}

// TestPruneKeepsWhatIsNewerThanItsRetention: each table loses the rows
// older than its retention and keeps the newer ones; a transfer still
// under way, a character's newest checkpoint and what lies on a map
// instance that exists stay whatever their age.
func TestPruneKeepsWhatIsNewerThanItsRetention(t *testing.T) {
	t.Parallel()
	s := newStore(t)
	ctx := testCtx(t)
	commit := committer(t, s)
	mustEnsure(t, s, "ann", "bob")
	for i := range 6 {
		if err := commit(pickup(fmt.Sprint("old-", i), "ann", "town-1", fmt.Sprint("old-item-", i))); err != nil {
			t.Fatal(err)
		}
	}
	ageRows(t, s, `UPDATE critical_events SET created_at = $1`, 40*24*time.Hour)
	if err := commit(pickup("new", "ann", "town-1", "new-item")); err != nil {
		t.Fatal(err)
	}
	for rev := int64(1); rev <= 3; rev++ {
		if _, err := s.SaveStates(ctx, "town-1", leased(t, s, "town-1", state("ann", rev), state("bob", rev))); err != nil {
			t.Fatal(err)
		}
	}
	ageRows(t, s, `UPDATE checkpoint_history SET at = $1`, 10*24*time.Hour)
	if _, err := s.SaveStates(ctx, "town-1", leased(t, s, "town-1", state("ann", 4))); err != nil {
		t.Fatal(err)
	}
	for i, st := range []string{"completed", "aborted", "requested"} {
		mustExec(t, s, `INSERT INTO transfers (id, character_id, from_instance, to_instance, to_map, state, expires_at, created_at)
VALUES ($1, 'ann', 'town-1', 'crypt-1', 'crypt', $2, $3, $3)`, fmt.Sprint("t", i), st, time.Now().Add(-10*24*time.Hour))
	}
	mustExec(t, s, `UPDATE transfers SET expires_at = $1 WHERE state = 'requested'`, time.Now().Add(time.Hour))
	for _, owner := range []string{"town-1", "party-gone", "party-new"} {
		mustExec(t, s, `INSERT INTO item_ownership (item_id, kind, owner_kind, owner_id, revision, updated_at)
VALUES ($1, 'gem', 'map', $2, 1, $3)`, "gem-on-"+owner, owner, time.Now().Add(-10*24*time.Hour))
		mustExec(t, s, `INSERT INTO map_state (map_instance, revision, payload, updated_at) VALUES ($1, 1, '', $2)`,
			owner, time.Now().Add(-10*24*time.Hour))
	}
	mustExec(t, s, `UPDATE item_ownership SET updated_at = now() WHERE owner_id = 'party-new'`)
	mustExec(t, s, `UPDATE map_state SET updated_at = now() WHERE map_instance = 'party-new'`)

	r := Retention{Transfers: 7 * 24 * time.Hour, CriticalEvents: 30 * 24 * time.Hour,
		CheckpointHistory: 7 * 24 * time.Hour, DeletedInstances: 7 * 24 * time.Hour}
	pruned, err := s.Prune(ctx, r, PruneOptions{Now: time.Now(), Batch: 4, LiveInstances: []string{"town-1"}})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]int64{TableCriticalEvents: 6, TableTransfers: 2, TableCheckpointHistory: 5,
		TableItemOwnership: 1, TableMapState: 1}
	for table, n := range want {
		if pruned.Rows[table] != n {
			t.Errorf("%s: pruned %d rows, want %d (all: %v)", table, pruned.Rows[table], n, pruned.Rows)
		}
	}
	if events, _ := s.EventsOf(ctx, "ann"); len(events) != 1 || events[0].EventID != "new" {
		t.Errorf("ann's events after pruning: %+v, want the new one", events)
	}
	if h := history(t, s, "bob"); len(h) != 1 || h[0] != 3 {
		t.Errorf("bob's history %v: his newest checkpoint must stay", h)
	}
	if h := history(t, s, "ann"); len(h) != 1 || h[0] != 4 {
		t.Errorf("ann's history %v, want only the recent 4", h)
	}
	if n := count(t, s, `SELECT count(*) FROM transfers WHERE state = 'requested'`); n != 1 {
		t.Error("a transfer under way was pruned")
	}
	for _, table := range []string{"item_ownership WHERE owner_kind = 'map' AND owner_id", "map_state WHERE map_instance"} {
		if n := count(t, s, `SELECT count(*) FROM `+table+` = ANY('{town-1,party-new}')`); n != 2 {
			t.Errorf("%s: a live or recent instance's rows were pruned (%d left of 2)", table, n)
		}
	}

	// Without the live instances nothing of a map's is touched; a zero
	// retention keeps its table.
	mustExec(t, s, `UPDATE item_ownership SET updated_at = $1 WHERE owner_id = 'party-new'`, time.Now().Add(-30*24*time.Hour))
	again, err := s.Prune(ctx, Retention{DeletedInstances: time.Hour}, PruneOptions{Now: time.Now()})
	if err != nil || len(again.Rows) != 0 {
		t.Errorf("without live instances: %+v, %v; want nothing pruned", again, err)
	}
}

func mustExec(t *testing.T, s *Postgres, query string, args ...any) {
	t.Helper()
	if _, err := s.DB().ExecContext(testCtx(t), query, args...); err != nil {
		t.Fatalf("%s: %v", query, err)
	}
}

// TestPruningWaitsForNoLock: a pruning run over many old rows, while maps
// commit critical actions and checkpoints as fast as they can, holds
// nobody up: sampled all along, pg_locks shows no lock wait of 50 ms or
// more (in its database: the server's other tests have theirs), and
// every action commits. And when a pruning batch meets a lock
// held by someone else, it gives up (ErrLockBusy) instead of queueing.
func TestPruningWaitsForNoLock(t *testing.T) {
	t.Parallel()
	s := newStore(t)
	ctx := testCtx(t)
	mustEnsure(t, s, "ann", "bob")
	mustExec(t, s, `INSERT INTO critical_events (event_id, character_id, map_instance, kind, tick, created_at)
SELECT 'old-' || i, 'ann', 'town-1', 'loot.pickup', i, now() - interval '60 days' FROM generate_series(1, 50000) i`)

	workCtx, stopWork := context.WithCancel(ctx)
	var wg sync.WaitGroup
	var workErr error
	actions := 0
	wg.Go(func() { // a map's critical actions and checkpoints
		lease, err := s.ClaimLease(ctx, "bob", "town-1", "pod", time.Hour, time.Now())
		if err != nil {
			workErr = err
			return
		}
		for rev := int64(1); workCtx.Err() == nil; rev++ {
			ev, move := pickup(fmt.Sprint("w-", rev), "bob", "town-1", fmt.Sprint("item-", rev))
			ev.Epoch = lease.Epoch
			cp := state("bob", rev)
			cp.Epoch = lease.Epoch
			if err := s.CommitCritical(ctx, ev, move); err != nil {
				workErr = err
				return
			}
			if _, err := s.SaveStates(ctx, "town-1", []CharacterState{cp}); err != nil {
				workErr = err
				return
			}
			actions++
		}
	})
	var longest time.Duration
	samples := 0
	sampleCtx, stopSampling := context.WithCancel(ctx)
	wg.Go(func() {
		for sampleCtx.Err() == nil {
			var waited float64
			err := s.DB().QueryRowContext(ctx, `SELECT COALESCE(max(extract(epoch FROM now() - waitstart)), 0)
FROM pg_locks WHERE NOT granted AND waitstart IS NOT NULL
AND database = (SELECT oid FROM pg_database WHERE datname = current_database())`).Scan(&waited)
			if err == nil {
				longest = max(longest, time.Duration(waited*float64(time.Second)))
				samples++
			}
		}
	})
	pruned, err := s.Prune(ctx, Retention{CriticalEvents: 30 * 24 * time.Hour}, PruneOptions{Now: time.Now()})
	stopWork()
	stopSampling()
	wg.Wait()
	if err != nil {
		t.Fatal(err)
	}
	if workErr != nil {
		t.Fatalf("a map's work failed during pruning: %v", workErr)
	}
	if pruned.Rows[TableCriticalEvents] != 50000 {
		t.Errorf("pruned %d events, want 50000", pruned.Rows[TableCriticalEvents])
	}
	if longest >= pruneLockTimeout || samples == 0 {
		t.Errorf("longest lock wait %s in %d samples, want under %s", longest, samples, pruneLockTimeout)
	}
	t.Logf("%d actions and checkpoints during pruning, %d pg_locks samples, longest wait %s", actions, samples, longest)

	// A batch that meets a held lock gives up at once.
	mustExec(t, s, `INSERT INTO critical_events (event_id, character_id, map_instance, kind, tick, created_at)
VALUES ('locked', 'ann', 'town-1', 'loot.pickup', 1, now() - interval '60 days')`)
	tx, err := s.DB().BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = tx.Rollback() }()
	if _, err := tx.ExecContext(ctx, `SELECT 1 FROM critical_events WHERE event_id = 'locked' FOR UPDATE`); err != nil {
		t.Fatal(err)
	}
	_, err = s.Prune(ctx, Retention{CriticalEvents: time.Hour}, PruneOptions{Now: time.Now()})
	if !errors.Is(err, ErrLockBusy) {
		t.Fatalf("pruning a locked row: %v, want ErrLockBusy", err)
	}
}

// TestTableSizes reports every table retention watches, event_log as the
// sum of its partitions.
func TestTableSizes(t *testing.T) {
	t.Parallel()
	s := newStore(t)
	ctx := testCtx(t)
	now := time.Now()
	if err := s.AppendEvents(ctx, []LoggedEvent{{At: now, MapInstance: "town-1", Seq: 1, Type: "join"}}); err != nil {
		t.Fatal(err)
	}
	sizes, err := s.TableSizes(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, table := range []string{TableTransfers, TableCriticalEvents, TableEventLog, TableCheckpointHistory, TableItemOwnership} {
		if sizes[table].Bytes <= 0 {
			t.Errorf("%s: %+v, want its bytes", table, sizes[table])
		}
	}
}
