package controllers

import (
	"context"
	"errors"

	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Event reasons. Stable CamelCase words that users filter on.
const (
	EventMapInstanceUpdated = "MapInstanceUpdated"
	EventMapInstanceDeleted = "MapInstanceDeleted"
	EventKeysRotated        = "TokenKeysRotated"
	EventPodRestarted       = "PodRestarted"
	EventPodReplacing       = "PodReplacing"
	EventPodFailed          = "PodFailed"
	EventQuarantined        = "Quarantined"
	EventQuarantineEnded    = "QuarantineEnded"
	// EventIdleDeleted, on a GameRoom: an instanced MapInstance (named in
	// the message and as the related object) had no players for idleTimeout
	// and was deleted.
	EventIdleDeleted = "IdleDeleted"
	// EventRoomExpired, on a GameRoom: the room had no players for its
	// idleTimeout and is being deleted.
	EventRoomExpired = "RoomExpired"
)

// patchStatus writes obj's status when it differs from before's, as one merge
// patch of just the changed fields. Fields the operator did not change, such
// as the heartbeat a map pod reports, are left to their owner. The patch
// carries the resourceVersion it was computed from: a reconcile that read a
// stale copy (its own last write not yet in the cache) gets a conflict and
// runs again on fresh data, instead of recording a failure twice.
func patchStatus(ctx context.Context, c client.Client, before, obj client.Object, oldStatus, newStatus any) error {
	if equality.Semantic.DeepEqual(oldStatus, newStatus) {
		return nil
	}
	err := c.Status().Patch(ctx, obj, client.MergeFromWithOptions(before, client.MergeFromWithOptimisticLock{}), client.FieldOwner(FieldManager))
	if apierrors.IsNotFound(err) {
		return nil // deleted meanwhile: nothing left to report on
	}
	return err
}

// createIfMissing creates obj unless an object of that name exists.
func createIfMissing(ctx context.Context, c client.Client, obj client.Object) (created bool, err error) {
	current := obj.DeepCopyObject().(client.Object)
	err = c.Get(ctx, client.ObjectKeyFromObject(obj), current)
	if err == nil {
		return false, nil
	}
	if !apierrors.IsNotFound(err) {
		return false, err
	}
	if err := c.Create(ctx, obj, client.FieldOwner(FieldManager)); err != nil {
		if apierrors.IsAlreadyExists(err) {
			return false, errors.New("a " + obj.GetObjectKind().GroupVersionKind().Kind + " named " +
				obj.GetName() + " exists but is not managed by roomkeeper: remove it or rename the room")
		}
		return false, err
	}
	return true, nil
}
