package controllers

import (
	"context"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// A reconcile that runs right after this process wrote an object's status
// can read the object from a cache that does not have the write yet.
// Writing from that copy would be refused (409, the write carries the
// resourceVersion it was computed from) and cost the API server a request
// for nothing. So each reconciler remembers the resourceVersions its
// status writes were computed from, and a reconcile that meets one of them
// in the cache waits a moment instead: the cache is behind.

// staleRetry is how long a reconcile that met a stale cache waits.
const staleRetry = 10 * time.Millisecond

// maxStaleVersions bounds what is remembered per object: a reconcile
// writes at most twice (a failure, then the status).
const maxStaleVersions = 4

// staleVersions is, per object, the resourceVersions known to be older
// than this process's last status write to it. The zero value is ready.
type staleVersions struct {
	mu sync.Mutex
	m  map[types.NamespacedName][]string
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

// forget drops what is remembered of a deleted object.
func (s *staleVersions) forget(key types.NamespacedName) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.m, key)
}

// updateStatus is updateStatus (events.go), remembering the resourceVersion a
// write was computed from.
func (s *staleVersions) updateStatus(ctx context.Context, c client.Client, before, obj client.Object, oldStatus, newStatus any) error {
	rv := before.GetResourceVersion()
	written, err := writeStatus(ctx, c, before, obj, oldStatus, newStatus)
	if written {
		s.wrote(client.ObjectKeyFromObject(obj), rv)
	}
	return err
}
