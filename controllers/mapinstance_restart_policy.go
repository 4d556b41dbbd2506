package controllers

import (
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	gamev1 "github.com/roomkeeper/roomkeeper/api/v1"
)

// Failure reasons recorded in status.lastFailure.
const (
	FailurePodFailed        = "PodFailed"
	FailurePodSucceeded     = "PodSucceeded"
	FailurePodDeleted       = "PodDeleted"
	FailureHeartbeatTimeout = "HeartbeatTimeout"
)

// step is what to do about a MapInstance that has no pod.
type step int

const (
	// stepCreate: create the pod now.
	stepCreate step = iota
	// stepBackoff: wait until the returned time, then create.
	stepBackoff
	// stepQuarantined: stay down until the returned time.
	stepQuarantined
	// stepRelease: the quarantine is over; forget the old failures and create.
	stepRelease
)

// recordFailure returns status after a failure at now: the failure and the
// restart counters recorded, and either a backoff before the next pod,
// min(initialBackoff * 2^(n-1), maxBackoff) for the n-th failure inside the
// window, or quarantine when the failures inside the window exceed
// maxRestarts. It is a pure function of its inputs.
func recordFailure(status gamev1.MapInstanceStatus, policy gamev1.RestartPolicy, f gamev1.Failure, now time.Time) gamev1.MapInstanceStatus {
	out := *status.DeepCopy()
	f.Time = metav1.NewTime(now)
	out.LastFailure = &f
	out.RestartCount++
	out.RecentRestarts = append(recentFailures(out.RecentRestarts, durationOf(policy.Window), now), metav1.NewTime(now))
	out.NextRestartAt, out.QuarantinedUntil = nil, nil
	n := len(out.RecentRestarts)
	if int32(n) > policy.MaxRestarts {
		until := metav1.NewTime(now.Add(durationOf(policy.Quarantine)))
		out.QuarantinedUntil = &until
		return out
	}
	next := metav1.NewTime(now.Add(backoff(policy, n)))
	out.NextRestartAt = &next
	return out
}

// recentFailures keeps the failure times inside the window ending at now.
func recentFailures(times []metav1.Time, window time.Duration, now time.Time) []metav1.Time {
	var kept []metav1.Time
	for _, t := range times {
		if now.Sub(t.Time) < window {
			kept = append(kept, t)
		}
	}
	return kept
}

// backoff is the wait before the pod after the n-th recent failure.
func backoff(policy gamev1.RestartPolicy, n int) time.Duration {
	d, limit := durationOf(policy.InitialBackoff), durationOf(policy.MaxBackoff)
	for i := 1; i < n && d < limit; i++ {
		d *= 2
	}
	return min(d, limit)
}

// nextStep decides what to do at now about a MapInstance without a pod,
// from its status alone, so a restarted operator continues where the last
// one stopped.
func nextStep(status gamev1.MapInstanceStatus, now time.Time) (step, time.Time) {
	switch {
	case status.QuarantinedUntil != nil && now.Before(status.QuarantinedUntil.Time):
		return stepQuarantined, status.QuarantinedUntil.Time
	case status.QuarantinedUntil != nil:
		return stepRelease, now
	case status.NextRestartAt != nil && now.Before(status.NextRestartAt.Time):
		return stepBackoff, status.NextRestartAt.Time
	default:
		return stepCreate, now
	}
}

// releaseQuarantine returns status with the quarantine lifted: the window
// starts afresh.
func releaseQuarantine(status gamev1.MapInstanceStatus) gamev1.MapInstanceStatus {
	out := *status.DeepCopy()
	out.QuarantinedUntil, out.NextRestartAt, out.RecentRestarts = nil, nil, nil
	return out
}

// durationOf reads an optional duration; the API server defaults every one
// of them, so nil only appears in objects built by hand.
func durationOf(d *metav1.Duration) time.Duration {
	if d == nil {
		return 0
	}
	return d.Duration
}

// heartbeatOverdue reports whether a running pod has stopped reporting: it
// ran for longer than the timeout (the room's restartPolicy.heartbeatTimeout)
// and it was last heard (a heartbeat or its Lease's renewal; zero: never)
// longer ago, or before it started.
func heartbeatOverdue(heard time.Time, timeout time.Duration, podStarted, now time.Time) bool {
	if podStarted.IsZero() || now.Sub(podStarted) < timeout {
		return false
	}
	return heard.Before(podStarted) || now.Sub(heard) >= timeout
}
