package controllers

import (
	"context"
	"sync"

	"golang.org/x/time/rate"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
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
//   - written (both reconcilers): the resourceVersions this process's
//     status writes were computed from, and the objects whose last write
//     lost a conflict, to read past a cache that is behind (below). Empty:
//     a reconcile may meet a 409 and retry from the API server's copy.
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
// can read the object from a cache that does not have the write yet.
// Writing from that copy would be refused (409, the write carries the
// resourceVersion it was computed from) and cost the API server a request
// for nothing. So each reconciler remembers the resourceVersions its
// status writes were computed from, and a reconcile that meets one of them
// in the cache reads the object from the API server instead: the cache is
// behind. So does the reconcile after a write that lost a conflict: a map
// pod's heartbeat changes its MapInstance's status every 5 s, and a busy
// API server's watch can lag behind by more than that. Waiting for the
// cache then lost every write: in a 35- and a 50-room soak 97% of the
// operator's status writes were refused, and a killed pod's failure went
// unrecorded, its map not restarted, for minutes (docs/benchmarks.md).

// maxStaleVersions bounds what is remembered per object: a reconcile
// writes at most twice (a failure, then the status).
const maxStaleVersions = 4

// staleVersions is, per object, the resourceVersions known to be older
// than this process's last status write to it. The zero value is ready.
type staleVersions struct {
	mu sync.Mutex
	m  map[types.NamespacedName][]string
	// lost holds the objects whose last status write lost a conflict.
	lost map[types.NamespacedName]bool
}

// wrote records that a status write was computed from resourceVersion rv.
func (s *staleVersions) wrote(key types.NamespacedName, rv string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.m == nil {
		s.m = map[types.NamespacedName][]string{}
	}
	s.m[key] = append(s.m[key], rv)
	if n := len(s.m[key]); n > maxStaleVersions {
		s.m[key] = s.m[key][n-maxStaleVersions:]
	}
}

// stale tells whether a copy at resourceVersion rv predates the last
// status write. A copy that does not is as new as the write or newer, and
// nothing is remembered for the object any more.
func (s *staleVersions) stale(key types.NamespacedName, rv string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, v := range s.m[key] {
		if v == rv {
			return true
		}
	}
	delete(s.m, key)
	return false
}

// forget drops what is remembered of an object: it was deleted, or read
// from the API server.
func (s *staleVersions) forget(key types.NamespacedName) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.m, key)
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

// updateStatus is updateStatus (events.go), remembering the resourceVersion a
// write was computed from.
func (s *staleVersions) updateStatus(ctx context.Context, c client.Client, before, obj client.Object, oldStatus, newStatus any) error {
	rv := before.GetResourceVersion()
	written, err := writeStatus(ctx, c, before, obj, oldStatus, newStatus)
	// A write the API server found changed nothing (a time only finer
	// than it keeps) leaves the resourceVersion as it was: no newer copy
	// is coming, and remembering it would wait for one for good.
	if written && obj.GetResourceVersion() != rv {
		s.wrote(client.ObjectKeyFromObject(obj), rv)
	}
	if apierrors.IsConflict(err) {
		s.lostRace(client.ObjectKeyFromObject(obj))
	}
	return err
}
