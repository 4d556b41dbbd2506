package controllers

import (
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/predicate"

	gamev1 "github.com/roomkeeper/roomkeeper/api/v1"

	"github.com/roomkeeper/roomkeeper/internal/instanced"
)

// Idle deletion, spec.idleTimeout's two uses (docs/operations.md, "Idle
// maps and room expiry"):
//
//   - The MapInstance controller tracks status.emptySince of instanced
//     MapInstances (instanced.TrackEmpty): it owns their status, and is woken when a heartbeat
//     moves players to or from zero (playersCrossedZero), not by every
//     heartbeat.
//   - The GameRoom controller decides: it holds the room's idleTimeout (an
//     instance's copy may be older), lists the instances anyway and is woken
//     by each of their heartbeats. It deletes idle instances
//     (instanced.Idle) and, when
//     idleTimeout is set, the idle room, and requeues for the next deadline.
//
// The decisions are pure functions: those of instanced maps, and the
// idle clock a room shares with them, in internal/instanced; the room's
// below.

// roomIdleTimeout is how long the room may be empty; 0 (unset) is never.
func roomIdleTimeout(room *gamev1.GameRoom) time.Duration {
	return durationOf(room.Spec.IdleTimeout)
}

// markIdle returns an idle instance's status as the operator leaves it just
// before deleting it, so a watcher sees why it went: Ready=False with reason
// IdleTimeout, phase Terminating.
func markIdle(status gamev1.MapInstanceStatus, generation int64, timeout time.Duration, now metav1.Time) gamev1.MapInstanceStatus {
	out := *status.DeepCopy()
	message := "No players for " + timeout.String() + ": deleting the instance"
	if out.EmptySince != nil {
		message = "No players since " + out.EmptySince.UTC().Format(time.RFC3339) + " (idleTimeout " + timeout.String() + "): deleting the instance"
	}
	setCondition(&out.Conditions, gamev1.ConditionReady, metav1.ConditionFalse, gamev1.ReasonIdleTimeout, message, generation, now)
	out.Phase = gamev1.MapTerminating
	return out
}

// soonest is the shortest positive duration of ds, 0 when there is none.
func soonest(ds ...time.Duration) time.Duration {
	var out time.Duration
	for _, d := range ds {
		if d > 0 && (out == 0 || d < out) {
			out = d
		}
	}
	return out
}

// playersCrossedZero lets through the status updates that change whether
// an instanced map or a surplus shard is empty (instanced.Tracked), so the
// MapInstance controller can keep status.emptySince; every other
// heartbeat stays filtered out.
var playersCrossedZero = predicate.Funcs{
	CreateFunc:  func(event.CreateEvent) bool { return false },
	DeleteFunc:  func(event.DeleteEvent) bool { return false },
	GenericFunc: func(event.GenericEvent) bool { return false },
	UpdateFunc: func(e event.UpdateEvent) bool {
		old, okOld := e.ObjectOld.(*gamev1.MapInstance)
		cur, okNew := e.ObjectNew.(*gamev1.MapInstance)
		return okOld && okNew && instanced.Tracked(cur) && (instanced.Occupants(old) == 0) != (instanced.Occupants(cur) == 0)
	},
}
