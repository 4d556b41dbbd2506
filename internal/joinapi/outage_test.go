package joinapi

import (
	"net/http"
	"testing"

	"github.com/roomkeeper/roomkeeper/internal/testenv"
)

// TestPersistenceUnavailable: with the room's database down, keyed joins
// and the characters API answer persistence_unavailable, guests still
// join, and everything works again once the database is back.
func TestPersistenceUnavailable(t *testing.T) {
	t.Parallel()
	own, err := testenv.StartPostgres() // its own server: killing the suite's would break the other tests
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = own.Stop() })
	e := newEnv(t)
	if e.dsn, err = own.NewDatabase("outage"); err != nil {
		t.Fatal(err)
	}
	e.readyRoom("demo", "ws://10.0.0.7:7350/ws", withDatabase())
	const key = "alice-auth-key-0123456789"
	want(t, "before the outage", e.join("demo", JoinRequest{AuthKey: key}), http.StatusOK, "")

	if err := own.Kill(); err != nil {
		t.Fatal(err)
	}
	want(t, "keyed join", e.join("demo", JoinRequest{AuthKey: key}), http.StatusServiceUnavailable, CodePersistenceUnavailable)
	want(t, "list", e.do(http.MethodGet, e.roomPath("demo")+"/characters", key, nil), http.StatusServiceUnavailable, CodePersistenceUnavailable)
	want(t, "create", e.do(http.MethodPost, e.roomPath("demo")+"/characters", key, CreateCharacterRequest{Name: "x"}),
		http.StatusServiceUnavailable, CodePersistenceUnavailable)
	want(t, "guest join", e.join("demo", JoinRequest{}), http.StatusOK, "")

	if err := own.Restart(); err != nil {
		t.Fatal(err)
	}
	want(t, "after the restart", e.join("demo", JoinRequest{AuthKey: key}), http.StatusOK, "")
}

// TestPersistenceUnavailableBeforeFirstOpen: a database that was never
// reachable, or a room whose database Secret is missing, is
// persistence_unavailable too.
func TestPersistenceUnavailableBeforeFirstOpen(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.dsn = "postgres://postgres@127.0.0.1:1/nothing?sslmode=disable" // nothing listens on port 1
	e.readyRoom("demo", "ws://10.0.0.7:7350/ws", withDatabase())
	e.readyRoom("nosecret", "ws://10.0.0.7:7350/ws", withDatabaseSecret("missing"))
	const key = "alice-auth-key-0123456789"
	want(t, "unreachable database", e.join("demo", JoinRequest{AuthKey: key}), http.StatusServiceUnavailable, CodePersistenceUnavailable)
	want(t, "no database Secret", e.join("nosecret", JoinRequest{AuthKey: key}), http.StatusServiceUnavailable, CodePersistenceUnavailable)
	want(t, "guest", e.join("nosecret", JoinRequest{}), http.StatusOK, "")
}
