package retention

import (
	"context"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/prometheus/client_golang/prometheus/testutil"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"

	gamev1 "github.com/roomkeeper/roomkeeper/api/v1"
	"github.com/roomkeeper/roomkeeper/internal/store"
	"github.com/roomkeeper/roomkeeper/internal/testenv"
)

// The pruner runs against a real kube-apiserver and etcd (the CRDs
// installed: the rooms and map instances are real objects, defaulted by
// the CRD schema) and a real Postgres.
var (
	k8s      client.Client
	pg       *testenv.Postgres
	setupErr error
)

func TestMain(m *testing.M) {
	os.Exit(runSuite(m))
}

func runSuite(m *testing.M) int {
	scheme := runtime.NewScheme()
	utilruntime.Must(clientgoscheme.AddToScheme(scheme))
	utilruntime.Must(gamev1.AddToScheme(scheme))
	var cp *testenv.ControlPlane
	var stop func()
	pg, cp, stop, setupErr = testenv.StartWithPostgres()
	defer stop()
	if setupErr != nil {
		return m.Run()
	}
	k8s, setupErr = client.New(cp.Config, client.Options{Scheme: scheme})
	return m.Run()
}

func ctxFor(t *testing.T) context.Context {
	t.Helper()
	if setupErr != nil {
		t.Fatalf("no test environment: %v", setupErr)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	t.Cleanup(cancel)
	return ctx
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// roomOn is a GameRoom whose database is the Secret secret; retention
// sets spec.database.retention.transfers ("" leaves the default).
func roomOn(ns, name, secret, transfers string) *gamev1.GameRoom {
	room := &gamev1.GameRoom{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}
	room.Spec.Image = "roomkeeper/roomserver:dev"
	room.Spec.DefaultMap = "town"
	room.Spec.Maps = []gamev1.GameMap{{Name: "town", Config: gamev1.MapConfig{Seed: 1, Width: 128, Height: 128}}}
	room.Spec.Database = &gamev1.DatabaseRef{SecretRef: gamev1.SecretKeyRef{Name: secret}}
	if transfers != "" {
		d, _ := time.ParseDuration(transfers)
		room.Spec.Database.Retention.Transfers = &metav1.Duration{Duration: d}
	}
	return room
}

// TestThePrunerKeepsTheLongestRetentionOfADatabasesRooms: two rooms on one
// database, one keeping transfers for an hour and one for two, keep them
// two hours; a third room's database, kept for ever, loses nothing; rows
// of a map instance that exists stay, a deleted one's go; the event log's
// next hours are made; the metrics say what went and how big each table is.
func TestThePrunerKeepsTheLongestRetentionOfADatabasesRooms(t *testing.T) {
	ctx := ctxFor(t)
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "pruner"}}
	must(t, k8s.Create(ctx, ns))
	shared, err := pg.NewDatabase("pruner_shared")
	must(t, err)
	kept, err := pg.NewDatabase("pruner_kept")
	must(t, err)
	for name, dsn := range map[string]string{"db-shared": shared, "db-kept": kept} {
		must(t, k8s.Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns.Name, Name: name},
			StringData: map[string]string{"dsn": dsn}}))
	}
	oneHour := roomOn(ns.Name, "one-hour", "db-shared", "1h")
	must(t, k8s.Create(ctx, oneHour))
	must(t, k8s.Create(ctx, roomOn(ns.Name, "two-hours", "db-shared", "2h")))
	must(t, k8s.Create(ctx, roomOn(ns.Name, "for-ever", "db-kept", "0s")))
	must(t, k8s.Create(ctx, roomOn(ns.Name, "no-secret", "db-missing", ""))) // skipped, not fatal
	live := gamev1.NewMapInstance(oneHour, oneHour.Spec.Maps[0], "one-hour-town")
	must(t, k8s.Create(ctx, live))

	now := time.Now()
	seed := func(dsn string) *store.Postgres {
		s, err := store.Open(ctx, dsn)
		must(t, err)
		t.Cleanup(func() { _ = s.Close() })
		must(t, s.EnsureCharacter(ctx, "ann", "u-ann"))
		for i, age := range []time.Duration{90 * time.Minute, 3 * time.Hour} {
			_, err := s.DB().ExecContext(ctx, `INSERT INTO transfers (id, character_id, from_instance, to_instance, to_map, state, expires_at, created_at)
VALUES ($1, 'ann', 'one-hour-town', 'x', 'x', 'completed', $2, $2)`, fmt.Sprint("t", i), now.Add(-age))
			must(t, err)
		}
		for _, owner := range []string{"one-hour-town", "one-hour-crypt-gone"} {
			_, err := s.DB().ExecContext(ctx, `INSERT INTO item_ownership (item_id, kind, owner_kind, owner_id, revision, updated_at)
VALUES ($1, 'gem', 'map', $2, 1, $3)`, "gem-on-"+owner, owner, now.Add(-30*24*time.Hour))
			must(t, err)
		}
		return s
	}
	sharedDB, keptDB := seed(shared), seed(kept)
	before := testutil.ToFloat64(prunedRows.WithLabelValues(store.TableTransfers))

	p := &Pruner{Rooms: k8s, Secrets: k8s, Clock: func() time.Time { return now }, Log: logr.Discard()}
	defer p.pool.Close()
	if err := p.RunOnce(ctx); err != nil {
		t.Fatal(err)
	}

	countOf := func(s *store.Postgres, query string) int {
		var n int
		must(t, s.DB().QueryRowContext(ctx, query).Scan(&n))
		return n
	}
	if n := countOf(sharedDB, `SELECT count(*) FROM transfers`); n != 1 {
		t.Errorf("shared database: %d transfers left, want the 90-minute one (two hours kept)", n)
	}
	if n := countOf(keptDB, `SELECT count(*) FROM transfers`); n != 2 {
		t.Errorf("kept database: %d transfers left, want both (kept for ever)", n)
	}
	for name, s := range map[string]*store.Postgres{"shared": sharedDB, "kept": keptDB} {
		if n := countOf(s, `SELECT count(*) FROM item_ownership WHERE owner_id = 'one-hour-town'`); n != 1 {
			t.Errorf("%s: the live instance's item was pruned", name)
		}
		if n := countOf(s, `SELECT count(*) FROM item_ownership WHERE owner_id = 'one-hour-crypt-gone'`); n != 0 {
			t.Errorf("%s: the deleted instance's item is still there", name)
		}
		if n := countOf(s, `SELECT count(*) FROM pg_inherits WHERE inhparent = 'event_log'::regclass`); n != 4 {
			t.Errorf("%s: %d event log hours made, want this one and the next three", name, n)
		}
	}
	if got := testutil.ToFloat64(prunedRows.WithLabelValues(store.TableTransfers)) - before; got != 1 {
		t.Errorf("roomkeeper_retention_pruned_rows_total{table=transfers} rose by %v, want 1", got)
	}
	for _, db := range []string{"pruner/db-shared", "pruner/db-kept"} {
		if b := testutil.ToFloat64(tableBytes.WithLabelValues(db, store.TableTransfers)); b <= 0 {
			t.Errorf("roomkeeper_database_table_bytes{database=%q,table=transfers} = %v", db, b)
		}
	}

	// A database no room names any more is closed and its gauges go.
	series := testutil.CollectAndCount(tableBytes)
	for _, name := range []string{"one-hour", "two-hours"} {
		must(t, k8s.Delete(ctx, &gamev1.GameRoom{ObjectMeta: metav1.ObjectMeta{Namespace: ns.Name, Name: name}}))
	}
	if err := p.RunOnce(ctx); err != nil {
		t.Fatal(err)
	}
	if n := testutil.CollectAndCount(tableBytes); n != series/2 {
		t.Errorf("after its rooms went: %d table_bytes series, want db-kept's %d", n, series/2)
	}
	if n := p.pool.Len(); n != 1 {
		t.Errorf("%d databases open, want 1", n)
	}
}
