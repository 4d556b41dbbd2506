package instanced

import (
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	gamev1 "github.com/roomkeeper/roomkeeper/api/v1"
)

// An instanced map is deleted once it has been empty for its room's
// idleTimeout. The operator's MapInstance controller keeps
// status.emptySince (TrackEmpty) and its GameRoom controller deletes what
// Idle says has expired. A room with idleTimeout set is deleted by the same
// clock (EmptySince, Expiry) over all its maps.

// EmptySince returns when something became empty, as the operator counts
// it: nil while players are reported; the earlier time kept while it stays
// empty; now when it is first seen Ready with no players. Something that is
// not Ready does not start being empty: nobody could have played there.
func EmptySince(prev *metav1.Time, players int32, ready bool, now metav1.Time) *metav1.Time {
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

// Expiry tells whether something empty since since, with players now
// reported, has been idle for timeout at now; if not, remaining is how long
// until it will be (0 when no deadline runs: it has players, is not
// tracked as empty, or timeout is 0, meaning never).
func Expiry(since *metav1.Time, players int32, timeout time.Duration, now time.Time) (expired bool, remaining time.Duration) {
	if since == nil || players > 0 || timeout <= 0 {
		return false, 0
	}
	remaining = since.Add(timeout).Sub(now)
	if remaining <= 0 {
		return true, 0
	}
	return false, remaining
}

// TrackEmpty is a MapInstance's status.emptySince at now, for those
// whose emptiness is tracked (Tracked).
func TrackEmpty(mi *gamev1.MapInstance, now metav1.Time) *metav1.Time {
	if !Tracked(mi) {
		return nil
	}
	return EmptySince(mi.Status.EmptySince, Occupants(mi),
		meta.IsStatusConditionTrue(mi.Status.Conditions, gamev1.ConditionReady), now)
}

// Tracked reports whether mi's emptiness is tracked. Only instanced maps
// and a shared map's shards numbered 2 and up (LabelShard) are ever
// deleted for idleness, so only they are: a status write when another
// map's players reach zero would buy nothing. An unclaimed warm instance
// (pool.go) is empty by design and is not tracked either: its clock
// starts when a party claims it.
func Tracked(mi *gamev1.MapInstance) bool {
	if mi.Spec.Instanced {
		return !IsWarm(mi)
	}
	return mi.Labels[gamev1.LabelShard] != ""
}

// Occupants is who keeps a tracked mi from being empty: a party
// instance's players who played lately (Playing); a shard's connections,
// idle or not, since removing a shard would drop them.
func Occupants(mi *gamev1.MapInstance) int32 {
	if mi.Spec.Instanced {
		return Playing(mi)
	}
	return mi.Status.Players
}

// Playing is how many players keep mi alive: those who played lately
// (status.activePlayers), not connections kept open by automatic pongs;
// the players connected when its pod does not report activity.
func Playing(mi *gamev1.MapInstance) int32 {
	if a := mi.Status.ActivePlayers; a != nil {
		return *a
	}
	return mi.Status.Players
}

// IdleTimeout is how long the room's instanced maps may be empty: the
// room's idleTimeout, else gamev1.DefaultInstanceIdleTimeout.
func IdleTimeout(room *gamev1.GameRoom) time.Duration {
	if d := room.Spec.IdleTimeout; d != nil && d.Duration > 0 {
		return d.Duration
	}
	return gamev1.DefaultInstanceIdleTimeout
}

// Idle tells whether mi is an instanced map empty for timeout at now, to
// be deleted; if not, remaining is how long until it will be (0: never, as
// things stand). A non-instanced map is never idle.
func Idle(mi *gamev1.MapInstance, timeout time.Duration, now time.Time) (expired bool, remaining time.Duration) {
	if !mi.Spec.Instanced {
		return false, 0
	}
	return Expiry(mi.Status.EmptySince, Playing(mi), timeout, now)
}
