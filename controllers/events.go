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

// updateStatus writes obj's status when it differs from before's. The write
// carries the resourceVersion before was read at: a reconcile that read a
// stale copy (its own last write not yet in the cache) gets a conflict and
// runs again on fresh data, instead of recording a failure twice, and a
// field someone else wrote since, such as the heartbeat a map pod reports,
// is never overwritten with an older value. Under that resourceVersion an
// update of the status subresource writes what a merge patch would, and
// costs the API server less: it need not encode the stored object to apply
// a patch to it (BenchmarkWriteCost, docs/benchmarks.md). The cache's
// copies have no managed fields; the API server keeps the stored ones when
// an update carries none.
func updateStatus(ctx context.Context, c client.Client, before, obj client.Object, oldStatus, newStatus any) error {
	_, err := writeStatus(ctx, c, before, obj, oldStatus, newStatus)
	return err
}

// writeStatus is updateStatus, also telling whether it wrote.
func writeStatus(ctx context.Context, c client.Client, before, obj client.Object, oldStatus, newStatus any) (bool, error) {
	if equality.Semantic.DeepEqual(oldStatus, newStatus) {
		return false, nil
	}
	obj.SetResourceVersion(before.GetResourceVersion())
	err := c.Status().Update(ctx, obj, client.FieldOwner(gamev1.FieldManagerOperator))
	if apierrors.IsNotFound(err) {
		return false, nil // deleted meanwhile: nothing left to report on
	}
	return err == nil, err
}
