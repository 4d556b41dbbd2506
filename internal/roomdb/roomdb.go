// Package roomdb is how the manager's parts (the join API, retention,
// the admin API) read what a GameRoom's Secrets hold: its database's DSN
// and its signing keys; and, for retention and the admin API, one store
// per DSN, opened and migrated on first use and kept.
package roomdb

// +kubebuilder:rbac:groups=core,resources=secrets,verbs=get

import (
	"context"
	"errors"
	"fmt"
	"sync"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	gamev1 "github.com/roomkeeper/roomkeeper/api/v1"
	"github.com/roomkeeper/roomkeeper/internal/podenv"
	"github.com/roomkeeper/roomkeeper/internal/store"
	"github.com/roomkeeper/roomkeeper/internal/token"
)

// ErrNoDatabase: the room names no database; ErrNoDSN: its Secret lacks
// the key that should hold the DSN.
var (
	ErrNoDatabase = errors.New("the room has no database")
	ErrNoDSN      = errors.New("the database Secret has no DSN")
)

// DSN reads the room's DSN from its database Secret (through secrets: the
// manager's API reader, its cache holds no such Secret).
func DSN(ctx context.Context, secrets client.Reader, room *gamev1.GameRoom) (string, error) {
	if room.Spec.Database == nil {
		return "", ErrNoDatabase
	}
	ref := room.Spec.Database.SecretRef
	key := ref.Key
	if key == "" {
		key = gamev1.DefaultDatabaseKey
	}
	var secret corev1.Secret
	if err := secrets.Get(ctx, types.NamespacedName{Namespace: room.Namespace, Name: ref.Name}, &secret); err != nil {
		return "", err
	}
	dsn := podenv.DatabaseURL(string(secret.Data[key]))
	if dsn == "" {
		return "", fmt.Errorf("%w: Secret %s/%s, key %s", ErrNoDSN, room.Namespace, ref.Name, key)
	}
	return dsn, nil
}

// Keys reads the room's token signing keys from its key Secret (which the
// operator labels, so the manager's cache holds it). A room whose keys do
// not exist yet is a NotFound.
func Keys(ctx context.Context, cached client.Reader, room *gamev1.GameRoom) (token.KeySet, error) {
	var secret corev1.Secret
	if err := cached.Get(ctx, types.NamespacedName{Namespace: room.Namespace, Name: gamev1.KeySecretName(room.Name)}, &secret); err != nil {
		return token.KeySet{}, err
	}
	return token.KeySetFromData(secret.Data)
}

// Pool keeps one store per DSN, each with at most Conns connections (0:
// 2). It is safe for concurrent use.
type Pool struct {
	Conns int

	mu  sync.Mutex
	dbs map[string]*store.Postgres
}

// Open returns the DSN's store, opened and migrated (a database no map
// pod used yet has no tables) on first use.
func (p *Pool) Open(ctx context.Context, dsn string) (*store.Postgres, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if pg, ok := p.dbs[dsn]; ok {
		return pg, nil
	}
	pg, err := store.OpenLazy(dsn, max(p.Conns, 2))
	if err != nil {
		return nil, err
	}
	if err := pg.Migrate(ctx); err != nil {
		return nil, errors.Join(err, pg.Close())
	}
	if p.dbs == nil {
		p.dbs = map[string]*store.Postgres{}
	}
	p.dbs[dsn] = pg
	return pg, nil
}

// Keep closes the stores of every DSN but these.
func (p *Pool) Keep(dsns []string) {
	keep := map[string]bool{}
	for _, dsn := range dsns {
		keep[dsn] = true
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	for dsn, pg := range p.dbs {
		if !keep[dsn] {
			_ = pg.Close()
			delete(p.dbs, dsn)
		}
	}
}

// Len is how many stores are open.
func (p *Pool) Len() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.dbs)
}

// Close closes every store.
func (p *Pool) Close() { p.Keep(nil) }
