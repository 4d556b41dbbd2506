package controllers

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	gamev1 "github.com/roomkeeper/roomkeeper/api/v1"
	"github.com/roomkeeper/roomkeeper/internal/instanced"
)

// reapIdleInstances deletes the room's instanced MapInstances that have had
// no players for the instance idle timeout. It returns the instances that
// remain and the time until the next one would be idle (0 when none is
// empty).
func (r *GameRoomReconciler) reapIdleInstances(ctx context.Context, room *gamev1.GameRoom, instances []gamev1.MapInstance,
	now time.Time) ([]gamev1.MapInstance, time.Duration, error) {
	timeout := instanced.IdleTimeout(room)
	var kept []gamev1.MapInstance
	var idleIn time.Duration
	for i := range instances {
		mi := &instances[i]
		expired, remaining := instanced.Idle(mi, timeout, now)
		if !expired {
			idleIn = soonest(idleIn, remaining)
			kept = append(kept, *mi)
			continue
		}
		if err := r.deleteIdleInstance(ctx, room, mi, timeout, now); err != nil {
			return nil, 0, err
		}
	}
	return kept, idleIn, nil
}

// deleteIdleInstance marks an idle instance (Ready=False, reason
// IdleTimeout) and deletes it. Both writes carry the resourceVersion the
// decision was made on: a heartbeat that arrived meanwhile makes them
// conflict, and the next reconcile decides again on fresh data.
func (r *GameRoomReconciler) deleteIdleInstance(ctx context.Context, room *gamev1.GameRoom, mi *gamev1.MapInstance,
	timeout time.Duration, now time.Time) error {
	marked := mi.DeepCopy()
	marked.Status = markIdle(mi.Status, mi.Generation, timeout, metav1.NewTime(now))
	if err := updateStatus(ctx, r.Client, mi, marked, mi.Status, marked.Status); err != nil {
		return fmt.Errorf("marking idle map instance %s: %w", mi.Name, err)
	}
	rv := marked.ResourceVersion
	if err := r.Delete(ctx, marked, client.Preconditions{UID: &mi.UID, ResourceVersion: &rv}); err != nil {
		if apierrors.IsNotFound(err) {
			return nil
		}
		return fmt.Errorf("deleting idle map instance %s: %w", mi.Name, err)
	}
	idleDeletions.WithLabelValues(idleKindMapInstance).Inc()
	ctrl.LoggerFrom(ctx).Info("Deleted idle map instance", "mapInstance", mi.Name, "idleTimeout", timeout)
	r.Recorder.Eventf(room, mi, corev1.EventTypeNormal, EventIdleDeleted, "DeleteIdleInstance",
		"Deleted MapInstance %s of map %s: no players since %s (idleTimeout %s)",
		mi.Name, mi.Spec.MapName, timeText(mi.Status.EmptySince), timeout)
	return nil
}

// roomExpiry tells whether the room, with status as just computed, has had
// no active players for its idleTimeout, and else how long until it will have.
func roomExpiry(room *gamev1.GameRoom, status gamev1.GameRoomStatus, now time.Time) (bool, time.Duration) {
	return instanced.Expiry(status.EmptySince, status.ActivePlayers, roomIdleTimeout(room), now)
}

// expireRoom announces the room's expiry with an event and deletes it; its
// children go with it through their owner references. The delete carries
// the resourceVersion the decision was made on, so a spec edited meanwhile
// (idleTimeout removed, say) is decided again.
func (r *GameRoomReconciler) expireRoom(ctx context.Context, room *gamev1.GameRoom, status gamev1.GameRoomStatus) error {
	timeout := roomIdleTimeout(room)
	r.Recorder.Eventf(room, nil, corev1.EventTypeNormal, EventRoomExpired, "DeleteRoom",
		"Deleting GameRoom %s: no players in any map since %s (idleTimeout %s)", room.Name, timeText(status.EmptySince), timeout)
	rv := room.ResourceVersion
	if err := r.Delete(ctx, room, client.Preconditions{UID: &room.UID, ResourceVersion: &rv}); err != nil {
		if apierrors.IsNotFound(err) {
			return nil
		}
		return fmt.Errorf("deleting expired room: %w", err)
	}
	idleDeletions.WithLabelValues(idleKindGameRoom).Inc()
	ctrl.LoggerFrom(ctx).Info("Deleted idle room", "idleTimeout", timeout)
	return nil
}

func timeText(t *metav1.Time) string {
	if t == nil {
		return "unknown"
	}
	return t.UTC().Format(time.RFC3339)
}
