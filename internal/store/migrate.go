package store

import (
	"context"
	"database/sql"
	"embed"
	"fmt"
	"io/fs"

	"github.com/pressly/goose/v3"
	"github.com/pressly/goose/v3/lock"
)

// migrations holds the schema, one goose SQL file per version.
//
//go:embed migrations/*.sql
var migrations embed.FS

// Waiting for another pod's migration: poll the advisory lock every second
// (goose's minimum) for up to five minutes.
const (
	migrateLockPollSeconds = 1
	migrateLockPolls       = 300
)

// Migrate brings the schema up to date. It holds a Postgres session
// advisory lock while it works, so any number of pods starting at once
// apply each migration exactly once; the others wait, then find nothing to
// do.
func Migrate(ctx context.Context, db *sql.DB) error {
	provider, err := newMigrationProvider(db)
	if err != nil {
		return fmt.Errorf("store: migrations: %w", err)
	}
	// Nearly always the schema is current already: reading the version
	// table, without the lock, says so. Up takes the lock first, and goose
	// polls it once a second, so a hundred map pods starting at once (and
	// the join API opening the room's database among them) queued for it
	// a minute only to find nothing to do. Any doubt (no version table
	// yet, a migration missing) goes to Up, which applies or explains.
	if pending, err := provider.HasPending(ctx); err == nil && !pending {
		return nil
	}
	if _, err := provider.Up(ctx); err != nil {
		return wrap("migrating", err)
	}
	return nil
}

// newMigrationProvider is goose's Provider over the embedded files.
func newMigrationProvider(db *sql.DB) (*goose.Provider, error) {
	files, err := fs.Sub(migrations, "migrations")
	if err != nil {
		return nil, err
	}
	locker, err := lock.NewPostgresSessionLocker(lock.WithLockTimeout(migrateLockPollSeconds, migrateLockPolls))
	if err != nil {
		return nil, err
	}
	return goose.NewProvider(goose.DialectPostgres, db, files,
		goose.WithSessionLocker(locker),
		goose.WithLogger(goose.NopLogger()),
		// Only our files: a Go migration registered globally by some
		// other package must not leak into this schema.
		goose.WithDisableGlobalRegistry(true),
	)
}
