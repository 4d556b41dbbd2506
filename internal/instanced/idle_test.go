package instanced

import (
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	gamev1 "github.com/roomkeeper/roomkeeper/api/v1"
)

// t0 is the tests' epoch; at(d) is a time d after it.
var t0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

func at(d time.Duration) *metav1.Time {
	t := metav1.NewTime(t0.Add(d))
	return &t
}

func timesEqual(a, b *metav1.Time) bool {
	if a == nil || b == nil {
		return a == b
	}
	return a.Equal(b)
}

func TestEmptySince(t *testing.T) {
	now := metav1.NewTime(t0.Add(time.Hour))
	cases := []struct {
		name    string
		prev    *metav1.Time
		players int32
		ready   bool
		want    *metav1.Time
	}{
		{"first seen Ready and empty: starts now", nil, 0, true, &now},
		{"still empty: keeps the start", at(0), 0, true, at(0)},
		{"empty and no longer Ready: keeps the start", at(0), 0, false, at(0)},
		{"not Ready and never empty: does not start", nil, 0, false, nil},
		{"a player resets it", at(0), 1, true, nil},
		{"a player reported while not Ready resets it", at(0), 2, false, nil},
		{"players and nothing running", nil, 3, true, nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := EmptySince(tc.prev, tc.players, tc.ready, now); !timesEqual(got, tc.want) {
				t.Errorf("EmptySince = %v, want %v", got, tc.want)
			}
		})
	}
}

func TestIdleExpiry(t *testing.T) {
	cases := []struct {
		name      string
		since     *metav1.Time
		players   int32
		timeout   time.Duration
		now       time.Duration
		expired   bool
		remaining time.Duration
	}{
		{"not empty", nil, 0, 30 * time.Minute, time.Hour, false, 0},
		{"players reported", at(0), 2, 30 * time.Minute, time.Hour, false, 0},
		{"no timeout: never", at(0), 0, 0, 1000 * time.Hour, false, 0},
		{"empty, deadline ahead", at(0), 0, 30 * time.Minute, 10 * time.Minute, false, 20 * time.Minute},
		{"empty, deadline now", at(0), 0, 30 * time.Minute, 30 * time.Minute, true, 0},
		{"empty, deadline past", at(0), 0, 30 * time.Minute, 2 * time.Hour, true, 0},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			expired, remaining := Expiry(tc.since, tc.players, tc.timeout, t0.Add(tc.now))
			if expired != tc.expired || remaining != tc.remaining {
				t.Errorf("Expiry = %v %s, want %v %s", expired, remaining, tc.expired, tc.remaining)
			}
		})
	}
}

// TestIdleConnectionsDoNotKeepAnInstanceAlive: an instance whose pod
// reports players connected but none playing lately is empty, and idle
// once its timeout passes; a pod that reports no activity counts its
// connections.
func TestIdleConnectionsDoNotKeepAnInstanceAlive(t *testing.T) {
	none, two := int32(0), int32(2)
	ready := []metav1.Condition{{Type: gamev1.ConditionReady, Status: metav1.ConditionTrue}}
	instance := func(players int32, active *int32, since *metav1.Time) *gamev1.MapInstance {
		return &gamev1.MapInstance{Spec: gamev1.MapInstanceSpec{Instanced: true},
			Status: gamev1.MapInstanceStatus{Players: players, ActivePlayers: active, EmptySince: since, Conditions: ready}}
	}
	now := metav1.NewTime(t0)
	if got := TrackEmpty(instance(3, &none, nil), now); !timesEqual(got, &now) {
		t.Errorf("3 idle connections: emptySince %v, want now", got)
	}
	if got := TrackEmpty(instance(3, &two, at(-time.Hour)), now); got != nil {
		t.Errorf("2 playing: emptySince %v, want none", got)
	}
	if got := TrackEmpty(instance(3, nil, nil), now); got != nil {
		t.Errorf("a pod that reports no activity, 3 connected: emptySince %v, want none", got)
	}
	if expired, _ := Idle(instance(3, &none, at(-time.Hour)), 30*time.Minute, t0); !expired {
		t.Error("idle connections for an hour kept the instance")
	}
	if expired, _ := Idle(instance(3, &two, at(-time.Hour)), 30*time.Minute, t0); expired {
		t.Error("an instance with players playing was idle")
	}
}
