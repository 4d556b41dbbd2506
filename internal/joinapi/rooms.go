package joinapi

import (
	"context"
	"errors"
	"math"
	"sync"
	"time"

	"golang.org/x/sync/singleflight"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	gamev1 "github.com/roomkeeper/roomkeeper/api/v1"
	"github.com/roomkeeper/roomkeeper/internal/roomdb"
	"github.com/roomkeeper/roomkeeper/internal/token"
)

// defaultDSNKey is the key of the database Secret when the room names none
// (the CRD's default).
const defaultDSNKey = gamev1.DefaultDatabaseKey

// dsnCacheTTL is how long a room's DSN is reused before its Secret is read
// again. Database Secrets are not in the manager's cache, and reading one
// per join would spend the manager's API rate limit, which its controllers
// share, on joins.
const dsnCacheTTL = 30 * time.Second

// dsnReadTimeout bounds one read of a database Secret, whoever waits for it.
const dsnReadTimeout = 10 * time.Second

// maxCachedDSNs bounds the DSN cache; past it, expired entries are dropped.
const maxCachedDSNs = 1024

// room fetches the GameRoom from the cache.
func (h *Handler) room(ctx context.Context, ns, name string) (*gamev1.GameRoom, error) {
	room := &gamev1.GameRoom{}
	err := h.cached.Get(ctx, types.NamespacedName{Namespace: ns, Name: name}, room)
	switch {
	case apierrors.IsNotFound(err):
		return nil, fail(CodeRoomNotFound, "no GameRoom %s in namespace %s", name, ns)
	case err != nil:
		return nil, err
	}
	return room, nil
}

// joinableMap is the map a join lands on: the requested one or the room's
// default. Instanced maps are entered through portals, never joined.
func joinableMap(room *gamev1.GameRoom, requested string) (gamev1.GameMap, error) {
	name := requested
	if name == "" {
		name = room.Spec.DefaultMap
	}
	m, ok := room.Spec.Map(name)
	switch {
	case !ok:
		return gamev1.GameMap{}, fail(CodeBadRequest, "room %s has no map %s", room.Name, name)
	case m.Instanced:
		return gamev1.GameMap{}, fail(CodeBadRequest, "map %s is instanced: enter it through a portal", name)
	}
	return m, nil
}

// instanceOf is the room's MapInstance called name, if players can enter
// it now.
func (h *Handler) instanceOf(ctx context.Context, room *gamev1.GameRoom, name string) (*gamev1.MapInstance, error) {
	mi := &gamev1.MapInstance{}
	err := h.cached.Get(ctx, types.NamespacedName{Namespace: room.Namespace, Name: name}, mi)
	switch {
	case apierrors.IsNotFound(err):
		return nil, fail(CodeRoomNotReady, "MapInstance %s does not exist (yet)", name)
	case err != nil:
		return nil, err
	case mi.Spec.RoomName != room.Name:
		return nil, fail(CodeRoomNotReady, "MapInstance %s serves map %s of room %s", name, mi.Spec.MapName, mi.Spec.RoomName)
	}
	if err := h.joinable(room, mi); err != nil {
		return nil, err
	}
	return mi, nil
}

// joinable refuses a MapInstance players cannot enter now: quarantined
// (map_quarantined, with the seconds left), or not Ready with an endpoint
// (room_not_ready), or not reachable by its exposure (room_not_ready, with
// the Exposed condition's reason and message).
func (h *Handler) joinable(room *gamev1.GameRoom, mi *gamev1.MapInstance) *apiError {
	mapName := mi.Spec.MapName
	if meta.IsStatusConditionTrue(mi.Status.Conditions, gamev1.ConditionQuarantined) {
		return fail(CodeMapQuarantined, "map %s crashed too often and is quarantined", mapName).
			retryIn(quarantineLeft(mi, room.Spec.RestartPolicy.Quarantine, h.clock()))
	}
	if exposed := meta.FindStatusCondition(mi.Status.Conditions, gamev1.ConditionExposed); exposed != nil &&
		exposed.Status != metav1.ConditionTrue {
		return fail(CodeRoomNotReady, "map %s cannot be reached yet (%s): %s", mapName, exposed.Reason, exposed.Message)
	}
	if !meta.IsStatusConditionTrue(mi.Status.Conditions, gamev1.ConditionReady) || mi.Status.Endpoint == "" {
		return fail(CodeRoomNotReady, "map %s is not ready", mapName)
	}
	return nil
}

// quarantineLeft is the whole seconds until the quarantine ends, rounded up;
// without a quarantinedUntil, the room's whole quarantine.
func quarantineLeft(mi *gamev1.MapInstance, quarantine *metav1.Duration, now time.Time) int {
	if until := mi.Status.QuarantinedUntil; until != nil {
		return int(math.Ceil(until.Sub(now).Seconds()))
	}
	return int(gamev1.DurationOr(quarantine, defaultQuarantine).Seconds())
}

// defaultQuarantine is the CRD's default restartPolicy.quarantine.
const defaultQuarantine = time.Minute

// roomKeys reads the room's signing keys from the cached key Secret.
func (h *Handler) roomKeys(ctx context.Context, room *gamev1.GameRoom) (token.KeySet, error) {
	keys, err := roomdb.Keys(ctx, h.cached, room)
	if apierrors.IsNotFound(err) {
		return token.KeySet{}, fail(CodeRoomNotReady, "room %s has no signing keys yet", room.Name)
	}
	return keys, err
}

// dsnKey names one key of one Secret.
type dsnKey struct {
	secret types.NamespacedName
	key    string
}

type dsnEntry struct {
	dsn     string
	fetched time.Time
}

// dsnCache remembers DSNs read from database Secrets for dsnCacheTTL.
type dsnCache struct {
	mu      sync.Mutex
	entries map[dsnKey]dsnEntry
}

// get is the DSN of k read less than dsnCacheTTL ago, or (fresh false)
// an older one, or none.
func (c *dsnCache) get(k dsnKey, now time.Time) (dsn string, fresh, ok bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.entries[k]
	return e.dsn, ok && now.Sub(e.fetched) <= dsnCacheTTL, ok
}

// forget drops k: its Secret or key is gone.
func (c *dsnCache) forget(k dsnKey) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.entries, k)
}

func (c *dsnCache) put(k dsnKey, dsn string, now time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.entries == nil {
		c.entries = map[dsnKey]dsnEntry{}
	}
	if len(c.entries) >= maxCachedDSNs {
		for old, e := range c.entries {
			if now.Sub(e.fetched) > dsnCacheTTL {
				delete(c.entries, old)
			}
		}
	}
	c.entries[k] = dsnEntry{dsn: dsn, fetched: now}
}

// roomDSN is the room's Postgres DSN, from its database Secret. That Secret
// is not labelled, so the cache does not hold it: it is read through the
// API reader, and remembered for dsnCacheTTL. Past that, the DSN known is
// used at once while one read refreshes it off the requests' way: a busy
// API server (minutes of it while a hundred maps start on a full core)
// then delays no join, and a Secret changed or gone is seen once that
// read succeeds. A missing Secret or key is persistence_unavailable: the
// room's maps cannot reach the database either, and the platform team
// has to create it. With no DSN known, requests wait for one shared read
// (not one each); a read that fails is persistence_unavailable, worth a
// retry.
func (h *Handler) roomDSN(ctx context.Context, room *gamev1.GameRoom) (string, error) {
	ref := room.Spec.Database.SecretRef
	k := dsnKey{secret: types.NamespacedName{Namespace: room.Namespace, Name: ref.Name}, key: ref.Key}
	if k.key == "" {
		k.key = defaultDSNKey
	}
	known, fresh, ok := h.dsns.get(k, h.clock())
	switch {
	case fresh:
		return known, nil
	case ok:
		h.startDSNRead(k, room) // its answer is for the requests after this one
		return known, nil
	}
	dsn, err := h.readDSN(ctx, k, room)
	switch {
	case missingDSN(err):
		return "", fail(CodePersistenceUnavailable, "the room's database is not configured").because(err)
	case err != nil:
		return "", unavailable("the room's database settings could not be read: try again later", err)
	}
	return dsn, nil
}

// readDSN waits for a read of k's Secret for room (startDSNRead) until
// ctx ends.
func (h *Handler) readDSN(ctx context.Context, k dsnKey, room *gamev1.GameRoom) (string, error) {
	select {
	case r := <-h.startDSNRead(k, room):
		dsn, _ := r.Val.(string)
		return dsn, r.Err
	case <-ctx.Done():
		return "", ctx.Err()
	}
}

// missingDSN tells a read that found no Secret or no key in it.
func missingDSN(err error) bool {
	return apierrors.IsNotFound(err) || errors.Is(err, roomdb.ErrNoDSN)
}

// startDSNRead reads k's Secret for room unless a read of it is under way
// (then its answer is shared), and remembers the DSN; a Secret or key
// found missing forgets it. The read has dsnReadTimeout of its own,
// whoever waits for it.
func (h *Handler) startDSNRead(k dsnKey, room *gamev1.GameRoom) <-chan singleflight.Result {
	return h.dsnReads.DoChan(k.secret.String()+"\x00"+k.key, func() (any, error) {
		ctx, cancel := context.WithTimeout(context.Background(), dsnReadTimeout)
		defer cancel()
		dsn, err := roomdb.DSN(ctx, h.live, room)
		switch {
		case err == nil:
			h.dsns.put(k, dsn, h.clock())
		case missingDSN(err):
			h.dsns.forget(k)
		}
		return dsn, err
	})
}
