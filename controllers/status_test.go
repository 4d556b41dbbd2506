package controllers

import (
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	gamev1 "github.com/roomkeeper/roomkeeper/api/v1"
)

var testNow = metav1.NewTime(time.Date(2026, 11, 26, 12, 0, 0, 0, time.UTC))

func TestObservePod(t *testing.T) {
	cases := []struct {
		name                      string
		pod                       *corev1.Pod
		phase                     gamev1.MapInstancePhase
		healthy, ready            metav1.ConditionStatus
		healthReason, readyReason string
		endpoint                  string
	}{
		{"no pod", nil, gamev1.MapPending, "False", "False", gamev1.ReasonPodMissing, gamev1.ReasonPodMissing, ""},
		{"pending", newPod(podPhase(corev1.PodPending)), gamev1.MapPending, "False", "False", gamev1.ReasonPodPending, gamev1.ReasonPodPending, ""},
		{"running not ready", newPod(podPhase(corev1.PodRunning), podIP("127.0.0.5"), podReadyCondition(false)),
			gamev1.MapStarting, "True", "False", gamev1.ReasonPodRunning, gamev1.ReasonPodNotReady, "ws://127.0.0.5:7350/ws"},
		{"ready", newPod(podPhase(corev1.PodRunning), podIP("127.0.0.5"), podReadyCondition(true)),
			gamev1.MapReady, "True", "True", gamev1.ReasonPodRunning, gamev1.ReasonPodReady, "ws://127.0.0.5:7350/ws"},
		{"exited", newPod(podIP("127.0.0.5"), podExited(2)), gamev1.MapBackoff, "False", "False", gamev1.ReasonPodFailed, gamev1.ReasonPodFailed, ""},
		{"succeeded", newPod(podPhase(corev1.PodSucceeded)), gamev1.MapBackoff, "False", "False", gamev1.ReasonPodFailed, gamev1.ReasonPodFailed, ""},
		{"deleting", newPod(podPhase(corev1.PodRunning), podReadyCondition(true), podDeleting()),
			gamev1.MapDraining, "False", "False", gamev1.ReasonPodTerminating, gamev1.ReasonPodTerminating, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := observePod(gamev1.MapInstanceStatus{Players: 3, Tick: 99}, tc.pod, 4, testNow)
			if got.Phase != tc.phase {
				t.Errorf("phase = %s, want %s", got.Phase, tc.phase)
			}
			assertCondition(t, got.Conditions, gamev1.ConditionPodHealthy, tc.healthy, tc.healthReason)
			assertCondition(t, got.Conditions, gamev1.ConditionReady, tc.ready, tc.readyReason)
			assertCondition(t, got.Conditions, gamev1.ConditionQuarantined, "False", gamev1.ReasonWithinRestartBudget)
			if got.Endpoint != tc.endpoint {
				t.Errorf("endpoint = %q, want %q", got.Endpoint, tc.endpoint)
			}
			if got.ObservedGeneration != 4 {
				t.Errorf("observedGeneration = %d, want 4", got.ObservedGeneration)
			}
			if got.Players != 3 || got.Tick != 99 {
				t.Errorf("the pod's own fields changed: players %d tick %d", got.Players, got.Tick)
			}
		})
	}
}

// TestAPodWaitingForItsDatabaseSaysSo: a running pod that reports what it
// waits for is not Ready with reason WaitingForDatabase and the pod's
// words; once ready, or while pending, the report changes nothing.
func TestAPodWaitingForItsDatabaseSaysSo(t *testing.T) {
	waiting := gamev1.MapInstanceStatus{WaitingFor: "Migrating the database: connection refused"}
	got := observePod(waiting, newPod(podPhase(corev1.PodRunning), podIP("127.0.0.5"), podReadyCondition(false)), 1, testNow)
	assertCondition(t, got.Conditions, gamev1.ConditionReady, "False", gamev1.ReasonWaitingForDatabase)
	assertCondition(t, got.Conditions, gamev1.ConditionPodHealthy, "True", gamev1.ReasonPodRunning)
	if c := meta.FindStatusCondition(got.Conditions, gamev1.ConditionReady); c == nil || c.Message != "Waiting for the database: Migrating the database: connection refused" {
		t.Errorf("Ready condition %+v, want the pod's words", c)
	}
	ready := observePod(waiting, newPod(podPhase(corev1.PodRunning), podIP("127.0.0.5"), podReadyCondition(true)), 1, testNow)
	assertCondition(t, ready.Conditions, gamev1.ConditionReady, "True", gamev1.ReasonPodReady)
	pending := observePod(waiting, newPod(podPhase(corev1.PodPending)), 1, testNow)
	assertCondition(t, pending.Conditions, gamev1.ConditionReady, "False", gamev1.ReasonPodPending)
}

func TestObservePodMessageNamesExitCode(t *testing.T) {
	got := observePod(gamev1.MapInstanceStatus{}, newPod(podExited(137)), 1, testNow)
	c := meta.FindStatusCondition(got.Conditions, gamev1.ConditionPodHealthy)
	if c == nil || c.Message != "Room server exited with code 137 (Error)" {
		t.Errorf("PodHealthy = %+v", c)
	}
}

func TestObservePodKeepsTransitionTimeWhenUnchanged(t *testing.T) {
	ready := newPod(podPhase(corev1.PodRunning), podReadyCondition(true))
	first := observePod(gamev1.MapInstanceStatus{}, ready, 1, testNow)
	later := metav1.NewTime(testNow.Add(time.Minute))
	second := observePod(first, ready, 1, later)
	c := meta.FindStatusCondition(second.Conditions, gamev1.ConditionReady)
	if !c.LastTransitionTime.Equal(&testNow) {
		t.Errorf("lastTransitionTime moved to %v without a change: every reconcile would write status", c.LastTransitionTime)
	}
}

func TestGameRoomStatus(t *testing.T) {
	room := newGameRoom("demo", withMap("town"), withMap("forest"), withInstancedMap("crypt"))
	town := func(opts ...func(*gamev1.MapInstance)) gamev1.MapInstance {
		return *newMapInstance(room, "town", opts...)
	}
	forest := func(opts ...func(*gamev1.MapInstance)) gamev1.MapInstance {
		return *newMapInstance(room, "forest", opts...)
	}
	crypt := func(opts ...func(*gamev1.MapInstance)) gamev1.MapInstance {
		mi := newMapInstance(room, "crypt", opts...)
		mi.Name = "demo-crypt-party1"
		return *mi
	}

	cases := []struct {
		name            string
		instances       []gamev1.MapInstance
		phase           gamev1.GameRoomPhase
		ready, degraded metav1.ConditionStatus
		readyMaps       int32
		total           int32
		players         int32
	}{
		{"nothing yet", nil, gamev1.GameRoomPending, "False", "False", 0, 0, 0},
		{"starting", []gamev1.MapInstance{town(withMapPhase(gamev1.MapReady, true)), forest(withMapPhase(gamev1.MapStarting, false))},
			gamev1.GameRoomStarting, "False", "False", 1, 2, 0},
		{"all ready", []gamev1.MapInstance{town(withMapPhase(gamev1.MapReady, true), withPlayers(5)), forest(withMapPhase(gamev1.MapReady, true), withPlayers(2))},
			gamev1.GameRoomRunning, "True", "False", 2, 2, 7},
		{"instanced map not ready does not block Ready", []gamev1.MapInstance{town(withMapPhase(gamev1.MapReady, true)),
			forest(withMapPhase(gamev1.MapReady, true)), crypt(withMapPhase(gamev1.MapStarting, false), withPlayers(1))},
			gamev1.GameRoomRunning, "True", "False", 2, 3, 1},
		{"quarantined map degrades", []gamev1.MapInstance{town(withMapPhase(gamev1.MapReady, true)), forest(withMapPhase(gamev1.MapQuarantined, false))},
			gamev1.GameRoomDegraded, "False", "True", 1, 2, 0},
		{"backoff degrades", []gamev1.MapInstance{town(withMapPhase(gamev1.MapBackoff, false)), forest(withMapPhase(gamev1.MapReady, true))},
			gamev1.GameRoomDegraded, "False", "True", 1, 2, 0},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := gameRoomStatus(room, tc.instances, testNow)
			if got.Phase != tc.phase {
				t.Errorf("phase = %s, want %s", got.Phase, tc.phase)
			}
			if got.ReadyMaps != tc.readyMaps || got.TotalMaps != tc.total || got.Players != tc.players {
				t.Errorf("counts ready/total/players = %d/%d/%d, want %d/%d/%d",
					got.ReadyMaps, got.TotalMaps, got.Players, tc.readyMaps, tc.total, tc.players)
			}
			if want := fmt.Sprintf("%d/%d", tc.readyMaps, tc.total); got.MapsReady != want {
				t.Errorf("mapsReady = %s, want %s", got.MapsReady, want)
			}
			if c := meta.FindStatusCondition(got.Conditions, gamev1.ConditionReady); c == nil || c.Status != tc.ready {
				t.Errorf("Ready = %+v, want %s", c, tc.ready)
			}
			if c := meta.FindStatusCondition(got.Conditions, gamev1.ConditionDegraded); c == nil || c.Status != tc.degraded {
				t.Errorf("Degraded = %+v, want %s", c, tc.degraded)
			}
			if len(got.Maps) != len(tc.instances) || got.KeySecretName != "demo-token-keys" || got.ObservedGeneration != room.Generation {
				t.Errorf("directory/keys/generation = %d %s %d", len(got.Maps), got.KeySecretName, got.ObservedGeneration)
			}
		})
	}
}

func TestGameRoomStatusNamesUnreadyMaps(t *testing.T) {
	room := newGameRoom("demo", withMap("town"), withMap("forest"))
	got := gameRoomStatus(room, []gamev1.MapInstance{*newMapInstance(room, "town", withMapPhase(gamev1.MapReady, true))}, testNow)
	c := meta.FindStatusCondition(got.Conditions, gamev1.ConditionReady)
	if c.Reason != gamev1.ReasonMapsNotReady || c.Message != "Maps not Ready: forest" {
		t.Errorf("Ready = %s %q", c.Reason, c.Message)
	}
}

func TestGameRoomStatusTerminating(t *testing.T) {
	room := newGameRoom("demo", withMap("town"))
	room.DeletionTimestamp = &testNow
	if got := gameRoomStatus(room, nil, testNow); got.Phase != gamev1.GameRoomTerminating {
		t.Errorf("phase = %s, want Terminating", got.Phase)
	}
}

func assertCondition(t *testing.T, conds []metav1.Condition, condType string, status metav1.ConditionStatus, reason string) {
	t.Helper()
	c := meta.FindStatusCondition(conds, condType)
	if c == nil {
		t.Errorf("condition %s missing", condType)
		return
	}
	if c.Status != status || c.Reason != reason {
		t.Errorf("%s = %s/%s, want %s/%s", condType, c.Status, c.Reason, status, reason)
	}
}
