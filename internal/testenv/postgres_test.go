package testenv

import (
	"context"
	"database/sql"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/lib/pq"
)

// query runs SELECT $1 on a fresh connection of dsn and returns the answer.
func query(t *testing.T, dsn string) error {
	t.Helper()
	connector, err := pq.NewConnector(dsn)
	if err != nil {
		t.Fatal(err)
	}
	db := sql.OpenDB(connector)
	defer db.Close()
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	var got int
	if err := db.QueryRowContext(ctx, "SELECT $1::int", 42).Scan(&got); err != nil {
		return err
	}
	if got != 42 {
		t.Fatalf("SELECT 42 = %d", got)
	}
	return nil
}

func TestPostgresLifecycle(t *testing.T) {
	pg, err := StartPostgres()
	if err != nil {
		t.Fatal(err)
	}
	stopped := false
	defer func() {
		if !stopped {
			_ = pg.Stop()
		}
	}()
	if err := query(t, pg.DSN); err != nil {
		t.Fatalf("fresh server: %v", err)
	}

	dsn, err := pg.NewDatabase("lifecycle")
	if err != nil {
		t.Fatal(err)
	}
	if err := query(t, dsn); err != nil {
		t.Fatalf("new database: %v", err)
	}

	if err := pg.Kill(); err != nil {
		t.Fatal(err)
	}
	if err := query(t, dsn); err == nil {
		t.Fatal("query after Kill succeeded")
	}
	if err := pg.Restart(); err != nil {
		t.Fatal(err)
	}
	if err := query(t, dsn); err != nil {
		t.Fatalf("after Kill and Restart: %v", err)
	}

	if err := pg.Halt(); err != nil {
		t.Fatal(err)
	}
	if err := query(t, dsn); err == nil {
		t.Fatal("query after Halt succeeded")
	}
	if err := pg.Restart(); err != nil {
		t.Fatal(err)
	}
	if err := query(t, dsn); err != nil {
		t.Fatalf("after Halt and Restart: %v", err)
	}

	dir := pg.Dir()
	stopped = true
	if err := pg.Stop(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Fatalf("directory %s still there after Stop (stat: %v)", dir, err)
	}
	if err := pg.Restart(); err == nil {
		t.Fatal("Restart after Stop succeeded")
	}
}

func TestFindPostgresBinNamesThePackage(t *testing.T) {
	t.Setenv("ROOMKEEPER_PG_BIN", t.TempDir())
	_, err := findPostgresBin()
	if err == nil {
		t.Fatal("an empty ROOMKEEPER_PG_BIN was accepted")
	}
	if want := "apt-get install postgresql-15"; !strings.Contains(err.Error(), want) {
		t.Fatalf("error %q does not say %q", err, want)
	}
}
