package controllers

import (
	"context"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	gamev1 "github.com/roomkeeper/roomkeeper/api/v1"
)

// roomCoalesce is how long a change to a MapInstance waits before it wakes
// its GameRoom. The work queue holds a key once, so every change inside
// the window (a room's maps becoming Ready together, their heartbeats, the
// room's own creates) makes one reconcile and at most one status write.
const roomCoalesce = 200 * time.Millisecond

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

// ownerAfter enqueues the GameRoom that controls an object, after delay.
func ownerAfter(delay time.Duration) handler.EventHandler {
	add := func(obj client.Object, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
		if room, ok := controllingRoom(obj); ok {
			q.AddAfter(reconcile.Request{NamespacedName: types.NamespacedName{Namespace: obj.GetNamespace(), Name: room}}, delay)
		}
	}
	return handler.Funcs{
		CreateFunc: func(_ context.Context, e event.CreateEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			add(e.Object, q)
		},
		UpdateFunc: func(_ context.Context, e event.UpdateEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			add(e.ObjectNew, q)
		},
		DeleteFunc: func(_ context.Context, e event.DeleteEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			add(e.Object, q)
		},
		GenericFunc: func(_ context.Context, e event.GenericEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			add(e.Object, q)
		},
	}
}
