package attack

import (
	"context"
	"database/sql"
	"fmt"
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
