package controllers

import (
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/predicate"

	gamev1 "github.com/roomkeeper/roomkeeper/api/v1"
)

// Idle deletion, spec.idleTimeout's two uses (docs/operations.md, "Idle
// maps and room expiry"):
//
//   - The MapInstance controller tracks status.emptySince of instanced
//     MapInstances: it owns their status, and is woken when a heartbeat
//     moves players to or from zero (playersCrossedZero), not by every
//     heartbeat.
//   - The GameRoom controller decides: it holds the room's idleTimeout (an
//     instance's copy may be older), lists the instances anyway and is woken
//     by each of their heartbeats. It deletes idle instances and, when
//     idleTimeout is set, the idle room, and requeues for the next deadline.
//
// The decisions are the pure functions below.

// emptySince returns when something became empty, as the operator counts
// it: nil while players are reported; the earlier time kept while it stays
// empty; now when it is first seen Ready with no players. Something that is
// not Ready does not start being empty: nobody could have played there.
func emptySince(prev *metav1.Time, players int32, ready bool, now metav1.Time) *metav1.Time {
	switch {
	case players > 0:
		return nil
	case prev != nil:
		return prev
	case ready:
		return &now
	default:
		return nil
	}
}

// mapEmptySince is a MapInstance's status.emptySince at now. Only instanced
// maps are ever deleted for idleness, so only they are tracked: a status
// write when a non-instanced map's players reach zero would buy nothing.
func mapEmptySince(mi *gamev1.MapInstance, now metav1.Time) *metav1.Time {
	if !mi.Spec.Instanced {
		return nil
	}
	return emptySince(mi.Status.EmptySince, mi.Status.Players,
		meta.IsStatusConditionTrue(mi.Status.Conditions, gamev1.ConditionReady), now)
}

// idleExpiry tells whether something empty since since, with players now
// reported, has been idle for timeout at now; if not, remaining is how long
// until it will be (0 when no deadline runs: it has players, is not
// tracked as empty, or timeout is 0, meaning never).
func idleExpiry(since *metav1.Time, players int32, timeout time.Duration, now time.Time) (expired bool, remaining time.Duration) {
	if since == nil || players > 0 || timeout <= 0 {
		return false, 0
	}
	remaining = since.Add(timeout).Sub(now)
	if remaining <= 0 {
		return true, 0
	}
	return false, remaining
}

// instanceIdleTimeout is how long the room's instanced maps may be empty.
func instanceIdleTimeout(room *gamev1.GameRoom) time.Duration {
	if d := durationOf(room.Spec.IdleTimeout); d > 0 {
		return d
	}
	return gamev1.DefaultInstanceIdleTimeout
}

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
// an instanced map is empty, so the MapInstance controller can keep
// status.emptySince; every other heartbeat stays filtered out.
var playersCrossedZero = predicate.Funcs{
	CreateFunc:  func(event.CreateEvent) bool { return false },
	DeleteFunc:  func(event.DeleteEvent) bool { return false },
	GenericFunc: func(event.GenericEvent) bool { return false },
	UpdateFunc: func(e event.UpdateEvent) bool {
		old, okOld := e.ObjectOld.(*gamev1.MapInstance)
		cur, okNew := e.ObjectNew.(*gamev1.MapInstance)
		return okOld && okNew && cur.Spec.Instanced && (old.Status.Players == 0) != (cur.Status.Players == 0)
	},
}
