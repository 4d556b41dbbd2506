package controllers

import (
	"context"

	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	gamev1 "github.com/roomkeeper/roomkeeper/api/v1"
)

// Event reasons. Stable CamelCase words that users filter on.
const (
	EventMapInstanceDeleted = "MapInstanceDeleted"
	EventKeysRotated        = "TokenKeysRotated"
	EventPodRestarted       = "PodRestarted"
	EventPodReplacing       = "PodReplacing"
	EventPodFailed          = "PodFailed"
	EventQuarantined        = "Quarantined"
	EventQuarantineEnded    = "QuarantineEnded"
	// EventHeartbeatsLate (Warning), on a MapInstance: its heartbeat is
	// late, as most maps' are, and its failure waits its turn
	// (mapinstance_heartbeat_drought.go).
	EventHeartbeatsLate = "HeartbeatsLate"
	// EventIdleDeleted, on a GameRoom: an instanced MapInstance, or a
	// surplus shard of a shared map (named in the message and as the
	// related object), had no players for idleTimeout and was deleted.
	EventIdleDeleted = "IdleDeleted"
	// EventShardAdded, on a GameRoom: a shared map's shards were nearly
	// full, and the operator added one (spec.maps[].shards.max allowing).
	EventShardAdded = "ShardAdded"
	// EventRoomExpired, on a GameRoom: the room had no players for its
	// idleTimeout and is being deleted.
	EventRoomExpired = "RoomExpired"
	// EventNameConflict (Warning), on a GameRoom or MapInstance: an object
	// it needs exists under its name but belongs to someone else.
	EventNameConflict = gamev1.ReasonNameConflict
	// EventInvalidPodSpec (Warning), on a MapInstance: the API server
	// refused its pod as invalid.
	EventInvalidPodSpec = gamev1.ReasonInvalidPodSpec
)

// statusLock says whether a status write carries the resourceVersion its
// copy was read at.
type statusLock bool

const (
	// locked: an update of the status subresource under the copy's
	// resourceVersion, refused (409) when anyone wrote the object since.
	// For a write decided on fields someone else writes: a map pod's
	// heartbeat time, its players. Under that resourceVersion an update
	// writes what a merge patch would, and costs the API server less: it
	// need not encode the stored object to apply a patch to it
	// (BenchmarkWriteCost, docs/benchmarks.md). The cache's copies have no
	// managed fields; the API server keeps the stored ones when an update
	// carries none.
	locked statusLock = true
	// unlocked: a merge patch of the status fields that changed, with no
	// resourceVersion. For a write decided on the operator's own fields
	// and on other objects (the pod), which a heartbeat that came meanwhile
	// does not touch: the heartbeat's fields are not in the patch. Under a
	// lock such a write lost to every heartbeat while a busy API server
	// took seconds to answer (docs/benchmarks.md, Density, "Ninth
	// session"). That the copy holds the operator's own last write is
	// staleVersions' part (memory.go).
	unlocked statusLock = false
)

// updateStatus writes obj's status when it differs from before's, locked:
// a reconcile that read a stale copy gets a conflict and runs again on
// fresh data, and a field someone else wrote since is never overwritten
// with an older value.
func updateStatus(ctx context.Context, c client.Client, before, obj client.Object, oldStatus, newStatus any) error {
	_, err := writeStatus(ctx, c, before, obj, oldStatus, newStatus, locked)
	return err
}

// writeStatus is updateStatus under lock, also telling whether it wrote.
func writeStatus(ctx context.Context, c client.Client, before, obj client.Object, oldStatus, newStatus any, lock statusLock) (bool, error) {
	if equality.Semantic.DeepEqual(oldStatus, newStatus) {
		return false, nil
	}
	var err error
	if lock {
		obj.SetResourceVersion(before.GetResourceVersion())
		err = c.Status().Update(ctx, obj, client.FieldOwner(gamev1.FieldManagerOperator))
	} else {
		err = c.Status().Patch(ctx, obj, client.MergeFrom(before), client.FieldOwner(gamev1.FieldManagerOperator))
	}
	if apierrors.IsNotFound(err) {
		return false, nil // deleted meanwhile: nothing left to report on
	}
	return err == nil, err
}
