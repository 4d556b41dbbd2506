package controllers

import (
	"context"
	"sync"

	"golang.org/x/time/rate"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/resourceversion"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// What the reconcilers keep in memory, all of it here. Every piece is a
// hint that spares the API server a read or a write; none decides
// anything the API server does not also say. The invariant: a process
// that starts with all of it empty (a restarted operator, a new leader)
// reaches the same state from what the API server holds (the statuses,
// the pods, the RBAC objects), at the cost of a few more requests. The
// restart tests hold it (TestAManagerRestartedMidRolloutConverges,
// TestCrashLoopBacksOffThenQuarantinesThenReleases).
//
//   - written (both reconcilers): the resourceVersion this process's last
//     status write to an object produced, and the objects whose last write
//     lost a conflict, to read past a cache that is behind (below). Empty:
//     a reconcile may act once on a copy without its last write (a
//     restarted operator's cache is filled after its last write, so only
//     a lagging watch in one process's life makes such a copy).
//   - started (MapInstance): the MapInstances whose first pod this process
//     created without writing their status (a pending first pod is
//     nothing to report), so that the pod's disappearance counts as a
//     failure. Empty: such a pod is made again, uncounted.
//   - hostPorts (MapInstance): the host ports handed out, learned from the
//     MapInstances' status.hostPort on first use; a port is written to the
//     status before a pod asks for it, so the status always knows.
//   - droughtLimiter (MapInstance): when the last failure for a late
//     heartbeat was, during a drought. Empty: the next late map may fail
//     at once.
//   - rbacDone and rbacLocks (GameRoom): the namespaces whose map pods'
//     ServiceAccount, Role and RoleBinding exist, and a lock per namespace
//     for making them. Empty: the next room of a namespace checks them.

// mapMemory is what the MapInstance controller keeps in memory.
type mapMemory struct {
	written staleVersions
	started sync.Map // types.NamespacedName -> struct{}
	// hostPorts assigns host ports (mapinstance_hostports.go); ports()
	// makes it on first use.
	hostPorts     *hostPorts
	hostPortsOnce sync.Once
	// droughtLimiter spaces failures for a late heartbeat while most maps'
	// are late (mapinstance_heartbeat_drought.go); droughtTurns() makes it.
	droughtLimiter *rate.Limiter
	droughtOnce    sync.Once
}

// roomMemory is what the GameRoom controller keeps in memory.
type roomMemory struct {
	written             staleVersions
	rbacDone, rbacLocks sync.Map // namespace -> struct{}, *sync.Mutex
}

// A reconcile that runs right after this process wrote an object's status
// can read the object from a cache that does not have the write yet, and
// acting on that copy would undo or repeat what the write did (record a
// failure twice). So each reconciler remembers the resourceVersion its
// last status write produced, and a reconcile that meets an older one in
// the cache (resourceVersions of one resource compare as integers,
// apimachinery's resourceversion package) reads the object from the API
// server instead. So does the reconcile after a write that lost a
// conflict. A map pod's heartbeat changes its MapInstance's status every
// 5 s, and a busy API server's watch can lag behind by more than that:
// waiting for the cache then lost every write, and a killed pod's failure
// went unrecorded, its map not restarted, for minutes (docs/benchmarks.md,
// Density, "Ninth session").

// staleVersions is, per object, the resourceVersion of this process's last
// status write to it, and whether its last write lost a conflict. The
// zero value is ready.
type staleVersions struct {
	mu      sync.Mutex
	written map[types.NamespacedName]string
	// lost holds the objects whose last status write lost a conflict.
	lost map[types.NamespacedName]bool
}

// wrote records that a status write left the object at resourceVersion rv.
func (s *staleVersions) wrote(key types.NamespacedName, rv string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.written == nil {
		s.written = map[types.NamespacedName]string{}
	}
	s.written[key] = rv
}

// stale tells whether a copy at resourceVersion rv predates the last
// status write. A copy that does not is as new as the write or newer, and
// nothing is remembered for the object any more. A resourceVersion that
// does not compare (not the API server's integers) counts as fresh: a
// locked write still catches a stale copy by its conflict.
func (s *staleVersions) stale(key types.NamespacedName, rv string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	written, ok := s.written[key]
	if !ok {
		return false
	}
	if order, err := resourceversion.CompareResourceVersion(rv, written); err == nil && order < 0 {
		return true
	}
	delete(s.written, key)
	return false
}

// forget drops what is remembered of an object: it was deleted, or read
// from the API server.
func (s *staleVersions) forget(key types.NamespacedName) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.written, key)
	delete(s.lost, key)
}

// lostRace records that a status write to the object was refused for a
// newer version: the cache is behind.
func (s *staleVersions) lostRace(key types.NamespacedName) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.lost == nil {
		s.lost = map[types.NamespacedName]bool{}
	}
	s.lost[key] = true
}

// read reads the object at key into obj: from the cache, or from the API
// server (live) when the cache is known to be behind it.
func (s *staleVersions) read(ctx context.Context, cache, live client.Reader, key types.NamespacedName, obj client.Object) error {
	s.mu.Lock()
	behind := s.lost[key]
	s.mu.Unlock()
	if !behind {
		if err := cache.Get(ctx, key, obj); err != nil || !s.stale(key, obj.GetResourceVersion()) {
			return err
		}
	}
	if err := live.Get(ctx, key, obj); err != nil {
		return err
	}
	s.forget(key) // the API server's copy has every write
	return nil
}

// updateStatus is writeStatus (events.go), remembering the resourceVersion
// a write produced and the conflict a write lost.
func (s *staleVersions) updateStatus(ctx context.Context, c client.Client, before, obj client.Object, oldStatus, newStatus any, lock statusLock) error {
	written, err := writeStatus(ctx, c, before, obj, oldStatus, newStatus, lock)
	if written {
		s.wrote(client.ObjectKeyFromObject(obj), obj.GetResourceVersion())
	}
	if apierrors.IsConflict(err) {
		s.lostRace(client.ObjectKeyFromObject(obj))
	}
	return err
}
