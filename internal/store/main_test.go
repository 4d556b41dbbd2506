package store

import (
	"context"
	"errors"
	"fmt"
	"os"
	"regexp"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/roomkeeper/roomkeeper/internal/testenv"
)

// The package's Postgres, started once. When it cannot start, every test
// fails with pgErr (never skips: a skipped database test is a silent pass).
var (
	pg    *testenv.Postgres
	pgErr error
)

func TestMain(m *testing.M) {
	pg, pgErr = testenv.StartPostgres()
	code := m.Run()
	if pg != nil {
		if err := pg.Stop(); err != nil {
			fmt.Fprintln(os.Stderr, "stopping the test Postgres:", err)
		}
	}
	os.Exit(code)
}

var (
	dbSeq      atomic.Int64
	nonDBChars = regexp.MustCompile(`[^a-z0-9_]+`)
)

// newDatabase creates an empty database for one test and returns its DSN.
func newDatabase(t testing.TB) string {
	t.Helper()
	if pgErr != nil {
		t.Fatalf("no test Postgres: %v", pgErr)
	}
	name := nonDBChars.ReplaceAllString(strings.ToLower(t.Name()), "_")
	name = fmt.Sprintf("t%d_%s", dbSeq.Add(1), name)
	if len(name) > 60 {
		name = name[:60]
	}
	dsn, err := pg.NewDatabase(name)
	if err != nil {
		t.Fatal(err)
	}
	return dsn
}

// newStore opens a migrated store on a fresh database.
func newStore(t testing.TB) *Postgres {
	t.Helper()
	return openStore(t, newDatabase(t))
}

func openStore(t testing.TB, dsn string) *Postgres {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	s, err := Open(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s
}

// testCtx bounds a test's database calls so a hang fails instead of
// eating the whole test timeout.
func testCtx(t testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// mustEnsure creates characters owned by user "u-<id>".
func mustEnsure(t testing.TB, s *Postgres, ids ...string) {
	t.Helper()
	for _, id := range ids {
		if err := s.EnsureCharacter(testCtx(t), id, "u-"+id); err != nil {
			t.Fatal(err)
		}
	}
}

// count runs a SELECT count(*) query.
func count(t testing.TB, s *Postgres, query string, args ...any) int {
	t.Helper()
	var n int
	if err := s.DB().QueryRowContext(testCtx(t), query, args...).Scan(&n); err != nil {
		t.Fatalf("%s: %v", query, err)
	}
	return n
}

// leased claims, on instance, the lease of each state's character (those
// that exist) and returns the states with the epochs set: every write is
// fenced by its lease.
func leased(t testing.TB, s *Postgres, instance string, states ...CharacterState) []CharacterState {
	t.Helper()
	epochs := map[string]int64{}
	out := make([]CharacterState, len(states))
	for i, st := range states {
		if _, ok := epochs[st.CharacterID]; !ok {
			lease, err := s.ClaimLease(testCtx(t), st.CharacterID, instance, "pod", time.Hour, time.Now())
			if err != nil && !errors.Is(err, ErrNotFound) {
				t.Fatal(err)
			}
			epochs[st.CharacterID] = lease.Epoch
		}
		st.Epoch = epochs[st.CharacterID]
		out[i] = st
	}
	return out
}

// withLease creates the event's character if needed, claims its lease on
// the event's map and returns the event carrying that epoch.
func withLease(t testing.TB, s *Postgres, ev CriticalEvent) CriticalEvent {
	t.Helper()
	if err := s.EnsureCharacter(testCtx(t), ev.CharacterID, "u-"+ev.CharacterID); err != nil {
		t.Fatal(err)
	}
	lease, err := s.ClaimLease(testCtx(t), ev.CharacterID, ev.MapInstance, "pod", time.Hour, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	ev.Epoch = lease.Epoch
	return ev
}

// ownStore opens a store on a Postgres server of the test's own, for tests
// that take the database away: killing the shared one would break the
// other tests.
func ownStore(t *testing.T, database string) (*testenv.Postgres, *Postgres) {
	t.Helper()
	own, err := testenv.StartPostgres()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = own.Stop() })
	dsn, err := own.NewDatabase(database)
	if err != nil {
		t.Fatal(err)
	}
	return own, openStore(t, dsn)
}
