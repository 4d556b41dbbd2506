package attack

import (
	"context"
	"database/sql"
	"fmt"
	"net/url"
	"strings"
	"testing"
	"time"
)

// idleTimeout bounds the wait for a quiet room server to let its database
// connections go: a minute unused (internal/store's connMaxIdleTime) and
// up to a minute more for database/sql's cleaner to notice.
const idleTimeout = 4 * time.Minute

// TestAQuietMapLetsItsDatabaseGo: a map nobody plays on (a guest-made
// party instance whose guests went, a flood of them) holds no database
// connection once its pool has been idle a minute: it asks its database
// nothing on its own (the consumed tickets are pruned only when this pod
// recorded some that expired). So the maps a database serves need not
// fit its max_connections at once. A player who comes later is served:
// the pool opens again as needed.
func TestAQuietMapLetsItsDatabaseGo(t *testing.T) {
	dsn := newDatabase(t)
	r := startServer(t, dsn, townMap)
	auditor := openDB(t, dsn)
	auditor.SetMaxOpenConns(1)
	started := time.Now()
	eventually(t, idleTimeout, func() error {
		if n := connectionsOf(t, auditor); n > 0 {
			return fmt.Errorf("the quiet map still holds %d database connections after %s", n, time.Since(started).Round(time.Second))
		}
		return nil
	})
	record(t, "database connections closed after", "%s", time.Since(started).Round(time.Second))

	ctx := caseContext(t)
	player := join(t, ctx, r, newCharacter("later"))
	expectPlaying(t, ctx, player, "a player joining the quiet map")
	if n := connectionsOf(t, auditor); n == 0 {
		t.Error("the player joined without the map reading the database")
	}
}

// connectionsOf counts the sessions on the auditor's database but its own.
func connectionsOf(t testing.TB, auditor *sql.DB) int {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var n int
	if err := auditor.QueryRowContext(ctx, `SELECT count(*) FROM pg_stat_activity
		WHERE datname = current_database() AND pid <> pg_backend_pid()`).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

// TestADatabaseRefusingConnectionsAtStartIsWaitedFor: a room server whose
// Postgres answers but refuses it (too many clients, a database closed to
// connections) when its pod starts does not exit, which the operator would
// count toward quarantine: it stays up, not ready, saying why, and serves
// as soon as the database lets it in. Players who come then play.
func TestADatabaseRefusingConnectionsAtStartIsWaitedFor(t *testing.T) {
	dsn := newDatabase(t)
	admin := openDB(t, otherDatabase(t, dsn, "postgres"))
	database := databaseName(t, dsn)
	allow := func(yes bool) {
		t.Helper()
		if _, err := admin.Exec(fmt.Sprintf(`ALTER DATABASE %q WITH ALLOW_CONNECTIONS %t`, database, yes)); err != nil {
			t.Fatal(err)
		}
	}
	allow(false)
	t.Cleanup(func() { allow(true) })

	r := launchServer(t, dsn, townMap)
	var refusals int
	eventually(t, startTimeout, func() error {
		if r.hasExited() {
			t.Fatalf("the room server exited while its database refused it:\n%s", r.logTail())
		}
		err := r.get("/readyz")
		switch {
		case err == nil:
			t.Fatal("ready while its database refuses every connection")
		case strings.Contains(err.Error(), "not currently accepting connections"):
			refusals++
		}
		if refusals < 3 {
			return fmt.Errorf("readyz said the refusal %d times: %w", refusals, err)
		}
		return nil
	})

	allow(true)
	r.waitReady(startTimeout)
	// Nothing ran against a database without its tables: checkpoints,
	// leases and sweeps start once the schema is there.
	for series, n := range r.metrics() {
		if strings.HasPrefix(series, "roomkeeper_roomserver_background_failures_total") && n > 0 {
			t.Errorf("%s = %v: background work ran before the database let the map in", series, n)
		}
	}
	ctx := caseContext(t)
	player := join(t, ctx, r, newCharacter("patient"))
	expectPlaying(t, ctx, player, "a player once the database let the map in")
}

// databaseName is the database a DSN names.
func databaseName(t testing.TB, dsn string) string {
	t.Helper()
	u, err := url.Parse(dsn)
	if err != nil {
		t.Fatal(err)
	}
	return strings.TrimPrefix(u.Path, "/")
}

// otherDatabase is dsn naming another database of the same server.
func otherDatabase(t testing.TB, dsn, database string) string {
	t.Helper()
	u, err := url.Parse(dsn)
	if err != nil {
		t.Fatal(err)
	}
	u.Path = "/" + database
	return u.String()
}
