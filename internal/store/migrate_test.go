package store

import (
	"sync"
	"testing"
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
		"critical_events", "item_ownership", "critical_item_policy", "item_recovery_audit",
		"checkpoint_audit", "map_state"}
	for _, table := range want {
		if n := count(t, s, `SELECT count(*) FROM pg_tables WHERE schemaname = 'public' AND tablename = $1`, table); n != 1 {
			t.Errorf("table %s: found %d times", table, n)
		}
	}
}
