package controllers

import (
	"context"
	"time"

	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	gamev1 "github.com/roomkeeper/roomkeeper/api/v1"
	"github.com/roomkeeper/roomkeeper/internal/instanced"
)

// roomCoalesce is how long a change to a MapInstance waits before it wakes
// its GameRoom. The work queue holds a key once, so every change inside
// the window (a room's maps becoming Ready together, their heartbeats, the
// room's own creates) makes one reconcile and at most one status write.
const roomCoalesce = 200 * time.Millisecond

// roomCountsCoalesce is how long a change that only a map pod's heartbeat
// made to its MapInstance (players, tick, checkpoint, world) waits before
// it wakes the GameRoom. The room's status sums its maps' players, so with
// players crossing between maps every heartbeat moved a count and made a
// GameRoom status write, the API server's costliest write
// (docs/benchmarks.md, "Eleventh session"); waiting collects a room's
// counts into one write. A change of a map's occupancy (its first player
// in, its last out) and every change the operator makes (phase,
// conditions, endpoint) wake the room after roomCoalesce, and whatever
// wakes it reports the counts of the moment. So do the counts of a map
// with shards: the room adds a shard by them (gameroom_shards.go).
const roomCountsCoalesce = 15 * time.Second

// controllingRoom is the name of the GameRoom that controls obj, if one does.
func controllingRoom(obj metav1.Object) (string, bool) { return controllerOfKind(obj, "GameRoom") }

// controllingMap is the name of the MapInstance that controls obj, if one does.
func controllingMap(obj metav1.Object) (string, bool) { return controllerOfKind(obj, "MapInstance") }

// controllerOfKind is the name of the object of our kind that controls obj,
// if one does.
func controllerOfKind(obj metav1.Object, kind string) (string, bool) {
	ref := metav1.GetControllerOf(obj)
	if ref == nil || ref.Kind != kind || ref.APIVersion != gamev1.GroupVersion.String() {
		return "", false
	}
	return ref.Name, true
}

// ownerAfter enqueues the GameRoom that controls an object, after delay;
// after countsDelay for an update of a MapInstance that only its pod's
// heartbeat made (heartbeatOnly), unless countsMatter says the room acts
// on that map's counts. The queue keeps the earliest time an item was
// asked for, so a later urgent change is not held back by a waiting
// count.
func ownerAfter(delay, countsDelay time.Duration, countsMatter func(context.Context, *gamev1.MapInstance) bool) handler.EventHandler {
	addAfter := func(obj client.Object, q workqueue.TypedRateLimitingInterface[reconcile.Request], after time.Duration) {
		if room, ok := controllingRoom(obj); ok {
			q.AddAfter(reconcile.Request{NamespacedName: types.NamespacedName{Namespace: obj.GetNamespace(), Name: room}}, after)
		}
	}
	add := func(obj client.Object, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
		addAfter(obj, q, delay)
	}
	return handler.Funcs{
		CreateFunc: func(_ context.Context, e event.CreateEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			add(e.Object, q)
		},
		UpdateFunc: func(ctx context.Context, e event.UpdateEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			after := delay
			if old, ok := e.ObjectOld.(*gamev1.MapInstance); ok {
				if updated, ok := e.ObjectNew.(*gamev1.MapInstance); ok && heartbeatOnly(old, updated) && !countsMatter(ctx, updated) {
					after = countsDelay
				}
			}
			addAfter(e.ObjectNew, q, after)
		},
		DeleteFunc: func(_ context.Context, e event.DeleteEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			add(e.Object, q)
		},
		GenericFunc: func(_ context.Context, e event.GenericEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			add(e.Object, q)
		},
	}
}

// heartbeatOnly tells whether the update from old to updated changed
// only what the map pod's heartbeat reports (withoutHeartbeat), and left
// the map as occupied, or as empty, as it was.
func heartbeatOnly(old, updated *gamev1.MapInstance) bool {
	if old.Generation != updated.Generation || !old.DeletionTimestamp.Equal(updated.DeletionTimestamp) ||
		!equality.Semantic.DeepEqual(old.Labels, updated.Labels) || !equality.Semantic.DeepEqual(old.Annotations, updated.Annotations) {
		return false
	}
	if occupied(old) != occupied(updated) {
		return false
	}
	return equality.Semantic.DeepEqual(withoutHeartbeat(old.Status), withoutHeartbeat(updated.Status))
}

// occupancy is whether a map has players connected, and playing.
type occupancy struct{ connected, playing bool }

func occupied(mi *gamev1.MapInstance) occupancy {
	return occupancy{connected: mi.Status.Players > 0, playing: instanced.Playing(mi) > 0}
}

// withoutHeartbeat is status less what the pod's heartbeat reports.
func withoutHeartbeat(status gamev1.MapInstanceStatus) gamev1.MapInstanceStatus {
	status.Players, status.ActivePlayers, status.Tick = 0, nil, 0
	status.LastCheckpoint, status.World, status.LastHeartbeat, status.WaitingFor = nil, nil, nil, ""
	return status
}

// shardedMap tells whether mi's map has shards to add, by its room in
// the cache: the room grows it by its players (gameroom_shards.go). A
// room the cache does not hold counts as one.
func shardedMap(c client.Reader) func(context.Context, *gamev1.MapInstance) bool {
	return func(ctx context.Context, mi *gamev1.MapInstance) bool {
		name, ok := controllingRoom(mi)
		if !ok || mi.Spec.Instanced {
			return false
		}
		room := &gamev1.GameRoom{}
		if err := c.Get(ctx, types.NamespacedName{Namespace: mi.Namespace, Name: name}, room); err != nil {
			return true
		}
		m, ok := room.Spec.Map(mi.Spec.MapName)
		_, most := m.ShardBounds() // an instanced map's: 1
		return ok && most > 1
	}
}
