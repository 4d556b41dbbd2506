package controllers

import (
	"context"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	gamev1 "github.com/roomkeeper/roomkeeper/api/v1"
)

// A MapInstance names its room and map; what its pod runs (the map's
// config, the room's image and settings) is read from the GameRoom in the
// cache when the pod is built. A room's change therefore reaches its maps
// through a watch on GameRooms, without a write to each MapInstance.

// indexRoomName indexes MapInstances by spec.roomName in the cache, so a
// room's change wakes its maps without a scan of the namespace.
const indexRoomName = "spec.roomName"

func roomNameOf(obj client.Object) []string {
	return []string{obj.(*gamev1.MapInstance).Spec.RoomName}
}

// roomOf returns the GameRoom whose map mi runs, and nil when there is
// nothing to run: the room that made mi is gone or dropped the map, and
// mi is being deleted with it (by the garbage collector or the room's
// controller). A MapInstance made by hand whose room or map does not exist
// is a problem a person must fix.
func (r *MapInstanceReconciler) roomOf(ctx context.Context, mi *gamev1.MapInstance) (*gamev1.GameRoom, error) {
	room := &gamev1.GameRoom{}
	err := r.Get(ctx, client.ObjectKey{Namespace: mi.Namespace, Name: mi.Spec.RoomName}, room)
	if err != nil && !apierrors.IsNotFound(err) {
		return nil, fmt.Errorf("reading GameRoom %s: %w", mi.Spec.RoomName, err)
	}
	found := err == nil
	wanted := found && wantsMapInstance(room, mi)
	_, madeByRoom := controllingRoom(mi)
	switch {
	case madeByRoom && (!wanted || !metav1.IsControlledBy(mi, room)):
		return nil, nil
	case !found:
		return nil, blocked(gamev1.ReasonRoomNotFound, fmt.Sprintf("GameRoom %s does not exist in namespace %s", mi.Spec.RoomName, mi.Namespace))
	case !wanted:
		return nil, blocked(gamev1.ReasonRoomNotFound, fmt.Sprintf("GameRoom %s has no map %s with instanced: %t",
			room.Name, mi.Spec.MapName, mi.Spec.Instanced))
	}
	return room, nil
}

// mapsOfRoom maps a GameRoom to its MapInstances, from the cache's index.
func mapsOfRoom(c client.Reader) handler.EventHandler {
	return handler.EnqueueRequestsFromMapFunc(func(ctx context.Context, obj client.Object) []reconcile.Request {
		var list gamev1.MapInstanceList
		if err := c.List(ctx, &list, client.InNamespace(obj.GetNamespace()), client.MatchingFields{indexRoomName: obj.GetName()}); err != nil {
			return nil
		}
		out := make([]reconcile.Request, 0, len(list.Items))
		for i := range list.Items {
			out = append(out, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(&list.Items[i])})
		}
		return out
	})
}

// roomSpecChanged passes a room's creation (a MapInstance made by hand may
// be waiting for it) and its spec changes, not its status writes.
var roomSpecChanged = predicate.Funcs{
	CreateFunc: func(event.CreateEvent) bool { return true },
	UpdateFunc: func(e event.UpdateEvent) bool {
		return e.ObjectOld.GetGeneration() != e.ObjectNew.GetGeneration()
	},
	DeleteFunc:  func(event.DeleteEvent) bool { return false }, // its maps go with it
	GenericFunc: func(event.GenericEvent) bool { return false },
}
