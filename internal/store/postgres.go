package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/lib/pq"
)

// DefaultPodConnections is a map pod's pool when its room sets no
// database.maxConnectionsPerPod: checkpoints from one goroutine, critical
// actions from a few, each a millisecond or so.
const DefaultPodConnections = 4

// Pool limits. A map pod checkpoints from one goroutine and commits critical
// actions from a few; each takes a millisecond or so, so a handful of
// connections carries 1,000 actions/s, and many pods share one server.
const (
	maxOpenConns    = 16
	connMaxLifetime = 30 * time.Minute
	// connMaxIdleTime lets a quiet pool go: a map whose players went (or
	// that only ever had guests) holds no connection a minute or two later,
	// so maps x connections need not fit the database at once.
	connMaxIdleTime = time.Minute
	// connectTimeout bounds a dial to a black-holed server when the DSN
	// sets no connect_timeout; the caller's context may be longer.
	connectTimeout = 5 * time.Second
)

// Postgres is the Store on PostgreSQL through lib/pq. It is safe for
// concurrent use.
type Postgres struct {
	db       *sql.DB
	prepared preparedStatements
}

var _ Store = (*Postgres)(nil)

// Open connects to the database at dsn, applies the migrations (see Migrate)
// and returns the store. A database that cannot be reached is ErrUnavailable.
func Open(ctx context.Context, dsn string) (*Postgres, error) {
	p, err := OpenLazy(dsn, maxOpenConns)
	if err != nil {
		return nil, err
	}
	if err := p.Migrate(ctx); err != nil {
		return nil, errors.Join(err, p.Close())
	}
	return p, nil
}

// OpenLazy returns the store on dsn, with at most maxConns connections,
// without connecting: nothing is dialled until the first statement, so a
// process can start while its database is away and call Migrate (retrying)
// before it relies on the schema. Only a malformed DSN is an error.
func OpenLazy(dsn string, maxConns int) (*Postgres, error) {
	db, err := openDB(dsn, maxConns)
	if err != nil {
		return nil, err
	}
	return &Postgres{db: db}, nil
}

// Migrate applies the migrations the database lacks (see the package's
// Migrate); safe to call again, and from several processes at once.
func (p *Postgres) Migrate(ctx context.Context) error {
	return Migrate(ctx, p.db)
}

// OpenDB returns a lib/pq pool on dsn with the store's limits, without
// connecting or migrating. Parameters always go in binary
// (binary_parameters=yes): one round trip per statement instead of two,
// which is most of a critical action's latency on a real network. The store
// only passes []byte for bytea columns, which that mode requires.
func OpenDB(dsn string) (*sql.DB, error) {
	return openDB(dsn, maxOpenConns)
}

// openDB is OpenDB with at most maxConns connections (and as many idle).
func openDB(dsn string, maxConns int) (*sql.DB, error) {
	if maxConns < 1 {
		return nil, fmt.Errorf("store: a pool of %d connections", maxConns)
	}
	cfg, err := pq.NewConfig(dsn)
	if err != nil {
		return nil, fmt.Errorf("store: parsing the DSN: %w", err)
	}
	if cfg.ConnectTimeout == 0 {
		cfg.ConnectTimeout = connectTimeout
	}
	cfg.BinaryParameters = true
	connector, err := pq.NewConnectorConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("store: %w", err)
	}
	db := sql.OpenDB(connector)
	db.SetMaxOpenConns(maxConns)
	db.SetMaxIdleConns(maxConns)
	db.SetConnMaxLifetime(connMaxLifetime)
	db.SetConnMaxIdleTime(connMaxIdleTime)
	return db, nil
}

// DB is the underlying pool, for tests and tools that need raw SQL.
func (p *Postgres) DB() *sql.DB { return p.db }

// Ping checks the database is reachable.
func (p *Postgres) Ping(ctx context.Context) error {
	return wrap("ping", p.db.PingContext(ctx))
}

// Close closes the pool.
func (p *Postgres) Close() error {
	p.prepared.close()
	return p.db.Close()
}
