package store

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/pressly/goose/v3/lock"
)

func TestMigrateConcurrently(t *testing.T) {
	t.Parallel()
	dsn := newDatabase(t)
	const pods = 5
	errs := make([]error, pods)
	var wg sync.WaitGroup
	for i := range pods {
		wg.Go(func() {
			db, err := OpenDB(dsn)
			if err != nil {
				errs[i] = err
				return
			}
			defer db.Close()
			errs[i] = Migrate(testCtx(t), db)
		})
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Errorf("pod %d: Migrate: %v", i, err)
		}
	}

	s := openStore(t, dsn) // migrating once more is a no-op
	if n := count(t, s, `SELECT count(*) FROM goose_db_version WHERE version_id = 1`); n != 1 {
		t.Errorf("migration 1 recorded %d times, want once", n)
	}
	want := []string{"characters", "character_state", "character_authority", "consumed_tokens",
		"critical_events", "item_ownership", "item_recovery_audit",
		"checkpoint_audit", "map_state", "transfers", "checkpoint_history", "event_log", "admin_actions", "bans"}
	for _, table := range want {
		if n := count(t, s, `SELECT count(*) FROM pg_tables WHERE schemaname = 'public' AND tablename = $1`, table); n != 1 {
			t.Errorf("table %s: found %d times", table, n)
		}
	}
}

// TestMigrateDownAndUp: every migration's Down undoes its Up, so a
// rollback to version 2 drops checkpoint_history, and event_log,
// admin_actions and bans (8), and brings back critical_item_policy
// (dropped by 7), leaving the rest, and going up
// again restores today's tables.
func TestMigrateDownAndUp(t *testing.T) {
	t.Parallel()
	s := newStore(t)
	ctx := testCtx(t)
	provider, err := newMigrationProvider(s.DB())
	if err != nil {
		t.Fatal(err)
	}
	tables := func() int {
		return count(t, s, `SELECT count(*) FROM pg_tables WHERE schemaname = 'public' AND tablename <> 'goose_db_version'`)
	}
	hasTable := func(name string) bool {
		return count(t, s, `SELECT count(*) FROM pg_tables WHERE schemaname = 'public' AND tablename = $1`, name) == 1
	}
	all := tables()
	if _, err := provider.DownTo(ctx, 2); err != nil {
		t.Fatalf("down to 2: %v", err)
	}
	if hasTable("checkpoint_history") || hasTable("event_log") || !hasTable("critical_item_policy") || !hasTable("checkpoint_audit") || !hasTable("transfers") || tables() != all-3 {
		t.Fatalf("after down to 2: %d tables (want %d), checkpoint_history or event_log still there or others gone", tables(), all-3)
	}
	if _, err := provider.DownTo(ctx, 0); err != nil {
		t.Fatalf("down to 0: %v", err)
	}
	if n := tables(); n != 0 {
		t.Fatalf("after down to 0: %d tables left", n)
	}
	if err := Migrate(ctx, s.DB()); err != nil {
		t.Fatal(err)
	}
	if !hasTable("checkpoint_history") || hasTable("critical_item_policy") || tables() != all {
		t.Fatalf("after up again: %d tables, want %d", tables(), all)
	}
	// And the checkpoint works on the schema it rebuilt.
	mustEnsure(t, s, "a")
	if _, err := s.SaveStates(ctx, "town-1", leased(t, s, "town-1", state("a", 1))); err != nil {
		t.Fatal(err)
	}
	if n := count(t, s, `SELECT count(*) FROM checkpoint_history WHERE character_id = 'a'`); n != 1 {
		t.Fatalf("%d history rows after a checkpoint, want 1", n)
	}
}

// TestMigratingACurrentSchemaTakesNoLock: a pod starting on a schema that
// is up to date reads the version table and goes on, even while another
// session holds the migration lock (a pod migrating, or a hundred
// queueing for the lock at once): it does not wait its turn.
func TestMigratingACurrentSchemaTakesNoLock(t *testing.T) {
	t.Parallel()
	s := newStore(t) // migrated
	ctx := testCtx(t)
	holder, err := s.DB().Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = holder.Close() }()
	if _, err := holder.ExecContext(ctx, `SELECT pg_advisory_lock($1)`, lock.DefaultLockID); err != nil {
		t.Fatal(err)
	}
	// Waiting for the lock would take goose's five minutes of polls.
	bounded, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	if err := Migrate(bounded, s.DB()); err != nil {
		t.Fatalf("Migrate on a current schema while the lock is held: %v", err)
	}
}
