package joinapi

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/roomkeeper/roomkeeper/internal/store"
)

// closingAccounts is an Accounts that counts its closing.
type closingAccounts struct {
	Accounts
	closed *int
}

func (a closingAccounts) Close() error { *a.closed++; return nil }

// TestUnusedDatabasesCloseAndTheirNumberIsBounded: tenants write the
// DSNs, so the join API closes a pool nobody used for closeUnusedAfter
// (opening it again when asked) and opens at most maxDatabases at once.
func TestUnusedDatabasesCloseAndTheirNumberIsBounded(t *testing.T) {
	t.Parallel()
	opened, closed := map[string]int{}, 0
	d := newDatabases(func(_ context.Context, dsn string) (Accounts, error) {
		opened[dsn]++
		return closingAccounts{closed: &closed}, nil
	})
	now := time.Date(2026, 11, 27, 12, 0, 0, 0, time.UTC)
	d.now = func() time.Time { return now }
	ctx := context.Background()
	get := func(dsn string) error {
		_, err := d.get(ctx, dsn)
		return err
	}
	for range 3 {
		if err := get("a"); err != nil {
			t.Fatal(err)
		}
		now = now.Add(time.Minute)
	}
	if opened["a"] != 1 || closed != 0 {
		t.Fatalf("a used every minute: opened %d, closed %d; want 1, 0", opened["a"], closed)
	}
	now = now.Add(closeUnusedAfter)
	if err := get("b"); err != nil {
		t.Fatal(err)
	}
	if closed != 1 {
		t.Fatalf("a unused for %s: closed %d, want 1", closeUnusedAfter, closed)
	}
	if err := get("a"); err != nil || opened["a"] != 2 {
		t.Fatalf("a asked for again: %v, opened %d times, want 2", err, opened["a"])
	}
	for i := range maxDatabases - 2 {
		if err := get(fmt.Sprint("tenant-", i)); err != nil {
			t.Fatal(err)
		}
	}
	if err := get("one too many"); !errors.Is(err, store.ErrUnavailable) {
		t.Fatalf("DSN %d: %v, want ErrUnavailable", maxDatabases+1, err)
	}
	now = now.Add(closeUnusedAfter)
	if err := get("one too many"); err != nil {
		t.Fatalf("once the others went unused: %v", err)
	}
}
