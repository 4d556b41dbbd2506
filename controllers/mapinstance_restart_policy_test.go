package controllers

import (
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	gamev1 "github.com/roomkeeper/roomkeeper/api/v1"
)

var t0 = time.Date(2026, 11, 26, 12, 0, 0, 0, time.UTC)

func policy() gamev1.RestartPolicy { return defaultSettings().RestartPolicy } // 3 in 60s, 60s quarantine, 1s..30s

func at(d time.Duration) *metav1.Time {
	t := metav1.NewTime(t0.Add(d))
	return &t
}

func failures(ds ...time.Duration) []metav1.Time {
	var out []metav1.Time
	for _, d := range ds {
		out = append(out, *at(d))
	}
	return out
}

func TestRecordFailure(t *testing.T) {
	crash := gamev1.Failure{Reason: FailurePodFailed}
	cases := []struct {
		name       string
		status     gamev1.MapInstanceStatus
		now        time.Duration
		recent     int
		next       *metav1.Time
		quarantine *metav1.Time
	}{
		{"first failure backs off initialBackoff", gamev1.MapInstanceStatus{}, 0, 1, at(time.Second), nil},
		{"second doubles", gamev1.MapInstanceStatus{RecentRestarts: failures(0)}, 10 * time.Second, 2, at(12 * time.Second), nil},
		{"third doubles again", gamev1.MapInstanceStatus{RecentRestarts: failures(0, 10*time.Second)}, 20 * time.Second, 3, at(24 * time.Second), nil},
		{"fourth inside the window quarantines", gamev1.MapInstanceStatus{RecentRestarts: failures(0, 10*time.Second, 20*time.Second)},
			30 * time.Second, 4, nil, at(90 * time.Second)},
		{"failures outside the window are forgotten", gamev1.MapInstanceStatus{RecentRestarts: failures(0, 10*time.Second, 20*time.Second)},
			75 * time.Second, 2, at(77 * time.Second), nil},
		{"backoff is capped at maxBackoff", gamev1.MapInstanceStatus{}, 0, 1, at(time.Second), nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := recordFailure(tc.status, policy(), crash, t0.Add(tc.now))
			if len(got.RecentRestarts) != tc.recent {
				t.Errorf("recentRestarts = %d, want %d", len(got.RecentRestarts), tc.recent)
			}
			if !timesEqual(got.NextRestartAt, tc.next) || !timesEqual(got.QuarantinedUntil, tc.quarantine) {
				t.Errorf("next %v quarantined %v, want %v %v", got.NextRestartAt, got.QuarantinedUntil, tc.next, tc.quarantine)
			}
			if got.RestartCount != tc.status.RestartCount+1 || got.LastFailure == nil || !got.LastFailure.Time.Time.Equal(t0.Add(tc.now)) {
				t.Errorf("restartCount %d lastFailure %+v", got.RestartCount, got.LastFailure)
			}
		})
	}
}

func TestBackoffCapsAtMaxBackoff(t *testing.T) {
	p := policy()
	p.MaxRestarts = 100
	want := []time.Duration{time.Second, 2 * time.Second, 4 * time.Second, 8 * time.Second, 16 * time.Second, 30 * time.Second, 30 * time.Second}
	for n, w := range want {
		if got := backoff(p, n+1); got != w {
			t.Errorf("backoff after failure %d = %s, want %s", n+1, got, w)
		}
	}
}

func TestNextStep(t *testing.T) {
	cases := []struct {
		name   string
		status gamev1.MapInstanceStatus
		now    time.Duration
		step   step
		until  time.Time
	}{
		{"nothing pending", gamev1.MapInstanceStatus{}, 0, stepCreate, t0},
		{"in backoff", gamev1.MapInstanceStatus{NextRestartAt: at(5 * time.Second)}, time.Second, stepBackoff, t0.Add(5 * time.Second)},
		{"backoff over", gamev1.MapInstanceStatus{NextRestartAt: at(5 * time.Second)}, 5 * time.Second, stepCreate, t0.Add(5 * time.Second)},
		{"quarantined", gamev1.MapInstanceStatus{QuarantinedUntil: at(time.Minute)}, 30 * time.Second, stepQuarantined, t0.Add(time.Minute)},
		{"quarantine over", gamev1.MapInstanceStatus{QuarantinedUntil: at(time.Minute)}, time.Minute, stepRelease, t0.Add(time.Minute)},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s, until := nextStep(tc.status, t0.Add(tc.now))
			if s != tc.step || !until.Equal(tc.until) {
				t.Errorf("nextStep = %v %v, want %v %v", s, until, tc.step, tc.until)
			}
		})
	}
}

func TestReleaseQuarantineStartsTheWindowAfresh(t *testing.T) {
	got := releaseQuarantine(gamev1.MapInstanceStatus{RestartCount: 4, RecentRestarts: failures(0, 1, 2, 3), QuarantinedUntil: at(time.Minute)})
	if got.QuarantinedUntil != nil || len(got.RecentRestarts) != 0 || got.RestartCount != 4 {
		t.Errorf("released = %+v", got)
	}
}

func TestHeartbeatOverdue(t *testing.T) {
	started := t0
	cases := []struct {
		name      string
		heartbeat *metav1.Time
		renewed   time.Duration // the Lease's renewal after t0; 0: none
		now       time.Duration
		want      bool
	}{
		{"young pod without heartbeat", nil, 0, 10 * time.Second, false},
		{"old pod without heartbeat", nil, 0, 16 * time.Second, true},
		{"fresh heartbeat", at(20 * time.Second), 0, 30 * time.Second, false},
		{"stale heartbeat", at(20 * time.Second), 0, 36 * time.Second, true},
		{"heartbeat of the previous pod", at(-time.Second), 0, 16 * time.Second, true},
		{"stale heartbeat, fresh Lease", at(20 * time.Second), 30 * time.Second, 36 * time.Second, false},
		{"no heartbeat, fresh Lease", nil, 25 * time.Second, 36 * time.Second, false},
		{"stale heartbeat, stale Lease", at(5 * time.Second), 20 * time.Second, 36 * time.Second, true},
	}
	for _, tc := range cases {
		var renewed time.Time
		if tc.renewed != 0 {
			renewed = t0.Add(tc.renewed)
		}
		heard := lastHeard(&gamev1.MapInstanceStatus{LastHeartbeat: tc.heartbeat}, renewed)
		if got := heartbeatOverdue(heard, gamev1.DefaultHeartbeatTimeout, started, t0.Add(tc.now)); got != tc.want {
			t.Errorf("%s: overdue = %v, want %v", tc.name, got, tc.want)
		}
	}
	if heartbeatOverdue(time.Time{}, gamev1.DefaultHeartbeatTimeout, time.Time{}, t0) {
		t.Error("a pod that has not started cannot be overdue")
	}
	if heartbeatOverdue(t0.Add(20*time.Second), time.Minute, started, t0.Add(36*time.Second)) {
		t.Error("a heartbeat 16s old is overdue under a 1m timeout")
	}
}

func timesEqual(a, b *metav1.Time) bool {
	if a == nil || b == nil {
		return a == b
	}
	return a.Time.Equal(b.Time)
}
