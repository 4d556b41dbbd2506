package controllers

import (
	"cmp"
	"context"
	"time"

	"golang.org/x/time/rate"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	gamev1 "github.com/roomkeeper/roomkeeper/api/v1"
)

// Heartbeats late for most maps at once say more about the way they come
// (the API server, the network, this operator's own share of the CPU)
// than about the maps. Failing them all would restart every pod when the
// cluster has the least room for it, and the restarts would load the API
// server further: the spiral docs/benchmarks.md ("Density") measured. So,
// as Kubernetes' node lifecycle controller slows its evictions when most
// of a zone looks NotReady, the operator fails maps for a late heartbeat
// one at a time while it is late for most of them (a drought): one per
// droughtFailureInterval across all maps. A pod that ended or vanished is
// failed at once, drought or not, and a lone silent map too.

const (
	// droughtMinLate is the fewest late maps that make a drought: with
	// fewer, each is failed at once.
	droughtMinLate = 3
	// droughtFailureInterval is how often a map is failed for a late
	// heartbeat during a drought.
	droughtFailureInterval = 5 * time.Second
)

// heartbeatDrought counts the maps whose heartbeats are awaited, and
// those among them that are late.
type heartbeatDrought struct {
	late, reporting int
}

// holds tells whether heartbeats are late for more than half the maps
// reporting, and for droughtMinLate of them at least.
func (d heartbeatDrought) holds() bool {
	return d.late >= droughtMinLate && 2*d.late > d.reporting
}

// measureDrought counts the maps whose heartbeat is awaited: those with
// a running pod that has reported (phase Starting or Ready, heard from
// at least once), late when it was last heard timeout ago or longer; and
// those failed for a late heartbeat that have not been heard since, late
// while they come back, for two timeouts at most. Without the latter,
// each map failed would leave the count, and a drought that starts below
// half the maps (the pods starved in waves: docs/benchmarks.md, "Twelfth
// session") would be failed wave by wave, each wave under half of what
// is left.
// A pod restarted after a failure counts with its predecessor's last
// heartbeat: until it reports, it is late too. heard tells when a map's
// pod was last heard from (lastHeard; zero: never).
func measureDrought(maps []gamev1.MapInstance, heard func(*gamev1.MapInstance) time.Time, timeout time.Duration, now time.Time) heartbeatDrought {
	var d heartbeatDrought
	for i := range maps {
		st, last := &maps[i].Status, heard(&maps[i])
		switch {
		case failedSilentSince(st, last, 2*timeout, now):
			d.reporting++
			d.late++
		case runsAndHasReported(st, last):
			d.reporting++
			if now.Sub(last) >= timeout {
				d.late++
			}
		}
	}
	return d
}

// runsAndHasReported tells whether the map has a running pod (phase
// Starting or Ready) that was heard from.
func runsAndHasReported(st *gamev1.MapInstanceStatus, heard time.Time) bool {
	return st.PodName != "" && !heard.IsZero() && (st.Phase == gamev1.MapReady || st.Phase == gamev1.MapStarting)
}

// failedSilentSince tells whether the map was failed for a late
// heartbeat less than memory ago and has not been heard since, while it
// is on its way back (not quarantined, not being deleted). The memory is
// bounded: a map whose new pod never starts (no room on the nodes) is
// not late forever, nor keeps a drought alive.
func failedSilentSince(st *gamev1.MapInstanceStatus, heard time.Time, memory time.Duration, now time.Time) bool {
	f := st.LastFailure
	if f == nil || f.Reason != FailureHeartbeatTimeout || now.Sub(f.Time.Time) >= memory ||
		st.Phase == gamev1.MapQuarantined || st.Phase == gamev1.MapTerminating {
		return false
	}
	return !heard.After(f.Time.Time)
}

// heardFrom is when a map's pod was last heard from, reading its Lease
// from the cache: the pod the status names, else the one named after
// the map (its next pod, after a failure).
func (r *MapInstanceReconciler) heardFrom(ctx context.Context) func(*gamev1.MapInstance) time.Time {
	return func(mi *gamev1.MapInstance) time.Time {
		renewed, _ := r.leaseRenewed(ctx, mi.Namespace, cmp.Or(mi.Status.PodName, mi.Name)) // unread: heard by its status alone
		return lastHeard(&mi.Status, renewed)
	}
}

// holdLateHeartbeat tells whether a map whose heartbeat is late keeps
// its pod for now: during a drought, unless its turn has come. It says
// so in an event; the recorder counts a map's repeats in one event's
// series, as the words are the same each time.
func (r *MapInstanceReconciler) holdLateHeartbeat(ctx context.Context, mi *gamev1.MapInstance, pod *corev1.Pod, timeout time.Duration, now time.Time) (bool, error) {
	var maps gamev1.MapInstanceList
	if err := r.List(ctx, &maps, client.UnsafeDisableDeepCopy); err != nil { // read only
		return false, err
	}
	d := measureDrought(maps.Items, r.heardFrom(ctx), timeout, now)
	if !d.holds() || r.droughtTurns().AllowN(now, 1) {
		return false, nil
	}
	lateHeartbeatsHeld.Inc()
	r.Recorder.Eventf(mi, pod, corev1.EventTypeWarning, EventHeartbeatsLate, "HoldFailure",
		"No heartbeat from pod %s for %s, as from most maps: the operator fails one such map every %s until most report again",
		pod.Name, timeout, droughtFailureInterval)
	return true, nil
}

// droughtTurns is the limiter that spaces failures for a late heartbeat
// during a drought, made on first use.
func (r *MapInstanceReconciler) droughtTurns() *rate.Limiter {
	r.droughtOnce.Do(func() { r.droughtLimiter = rate.NewLimiter(rate.Every(droughtFailureInterval), 1) })
	return r.droughtLimiter
}
