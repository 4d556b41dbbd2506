package e2e

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/roomkeeper/roomkeeper/internal/store"
)

// pruneDuringSoak prunes the dev cluster's database as the manager's
// retention does (store.Prune, the same statements) over and over while
// the soak plays, seeding old critical events for it to delete, and
// samples pg_locks for any wait the pruner causes or suffers. It returns
// a stop function that ends it and reports what it saw.
func pruneDuringSoak(t *testing.T, ctx context.Context) (stop func() (pruned int64, longest time.Duration)) {
	t.Helper()
	var secret corev1.Secret
	if err := k8s.Get(ctx, types.NamespacedName{Namespace: "default", Name: "roomkeeper-db"}, &secret); err != nil {
		t.Fatal(err)
	}
	pruner, err := store.OpenLazy(string(secret.Data["dsn"]), 1) // one connection: one backend pid to watch
	if err != nil {
		t.Fatal(err)
	}
	sampler, err := store.OpenLazy(string(secret.Data["dsn"]), 1)
	if err != nil {
		t.Fatal(err)
	}
	runCtx, cancel := context.WithCancel(ctx)
	var pid atomic.Int64
	var total atomic.Int64
	var longest time.Duration
	var wg sync.WaitGroup
	wg.Go(func() { // seed and prune, a round every 3 s (the manager's runs, sped up), through the soak's outages
		pace := time.NewTicker(3 * time.Second)
		defer pace.Stop()
		for round := 0; runCtx.Err() == nil; round++ {
			_, _ = pruner.DB().ExecContext(runCtx, `INSERT INTO critical_events (event_id, character_id, map_instance, kind, tick, created_at)
SELECT 'pruning-e2e-' || $1 || '-' || i, 'pruning-e2e', 'nowhere', 'loot.pickup', i, now() - interval '60 days'
FROM generate_series(1, 20000) i`, round)
			var p int64
			if pruner.DB().QueryRowContext(runCtx, `SELECT pg_backend_pid()`).Scan(&p) == nil {
				pid.Store(p)
			}
			pruned, err := pruner.Prune(runCtx, store.Retention{CriticalEvents: 30 * 24 * time.Hour}, store.PruneOptions{Now: time.Now()})
			total.Add(pruned.Rows[store.TableCriticalEvents])
			if err != nil && !errors.Is(err, store.ErrUnavailable) && !errors.Is(err, store.ErrLockBusy) && runCtx.Err() == nil {
				t.Logf("pruning round %d: %v", round, err)
			}
			select {
			case <-runCtx.Done():
			case <-pace.C:
			}
		}
	})
	wg.Go(func() { // sample every 10 ms: a wait of 50 ms cannot slip between two samples
		sample := time.NewTicker(10 * time.Millisecond)
		defer sample.Stop()
		for runCtx.Err() == nil {
			select {
			case <-runCtx.Done():
				return
			case <-sample.C:
			}
			var waited float64
			err := sampler.DB().QueryRowContext(runCtx, `SELECT COALESCE(max(extract(epoch FROM now() - l.waitstart)), 0)
FROM pg_locks l WHERE NOT l.granted AND l.waitstart IS NOT NULL
AND (l.pid = $1 OR $1 = ANY(pg_blocking_pids(l.pid)))`, pid.Load()).Scan(&waited)
			if err == nil {
				longest = max(longest, time.Duration(waited*float64(time.Second)))
			}
		}
	})
	return func() (int64, time.Duration) {
		cancel()
		wg.Wait()
		_, _ = sampler.Close(), pruner.Close()
		return total.Load(), longest
	}
}

// replayEveryCharacter runs the replay check (store.ReplayCharacter, what
// `roomctl audit replay` asks the admin API for) over every character the
// dev database has checkpoints of, and says how many checkpoint pairs it
// checked and which characters diverged.
func replayEveryCharacter(t *testing.T, ctx context.Context) (checked int, diverged []store.ReplayReport) {
	t.Helper()
	var secret corev1.Secret
	if err := k8s.Get(ctx, types.NamespacedName{Namespace: "default", Name: "roomkeeper-db"}, &secret); err != nil {
		t.Fatal(err)
	}
	db, err := store.OpenLazy(string(secret.Data["dsn"]), 2)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	rows, err := db.DB().QueryContext(ctx, `SELECT DISTINCT character_id FROM checkpoint_history`)
	if err != nil {
		t.Fatal(err)
	}
	var characters []string
	for rows.Next() {
		var id string
		if err := rows.Scan(&id); err != nil {
			t.Fatal(err)
		}
		characters = append(characters, id)
	}
	if err := rows.Close(); err != nil {
		t.Fatal(err)
	}
	for _, id := range characters {
		r, err := db.ReplayCharacter(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		checked += r.Checked
		if len(r.Divergences) > 0 {
			diverged = append(diverged, r)
		}
	}
	return checked, diverged
}
