package controllers

import (
	"errors"
	"strings"
	"testing"
	"unicode/utf8"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	gamev1 "github.com/roomkeeper/roomkeeper/api/v1"
)

func conflictOn(name string) *blockedError {
	return blocked(gamev1.ReasonNameConflict, "Secret "+name+" exists but is not GameRoom demo's")
}

func TestRoomBlocked(t *testing.T) {
	room := newGameRoom("demo", withMap("town"))
	room.Generation = 3
	setCondition(&room.Status.Conditions, gamev1.ConditionReady, metav1.ConditionTrue, gamev1.ReasonAllMapsReady, "", 2, testNow)
	room.Status.Phase, room.Status.TotalMaps = gamev1.GameRoomRunning, 1

	got, changed := roomBlocked(room, conflictOn("demo-token-keys"), testNow)
	if !changed {
		t.Error("a new problem is news")
	}
	assertCondition(t, got.Conditions, gamev1.ConditionReady, metav1.ConditionFalse, gamev1.ReasonNameConflict)
	if c := meta.FindStatusCondition(got.Conditions, gamev1.ConditionReady); !strings.Contains(c.Message, "Secret demo-token-keys") ||
		c.ObservedGeneration != 3 {
		t.Errorf("Ready = %+v, want the object named and generation 3", c)
	}
	if got.Phase != gamev1.GameRoomStarting || got.ObservedGeneration != 3 {
		t.Errorf("phase %s, observedGeneration %d: want Starting, 3", got.Phase, got.ObservedGeneration)
	}
	if room.Status.Phase != gamev1.GameRoomRunning {
		t.Error("roomBlocked changed its argument")
	}

	room.Status = got
	if _, changed := roomBlocked(room, conflictOn("demo-token-keys"), testNow); changed {
		t.Error("the same problem again is no news (no second event)")
	}
	if _, changed := roomBlocked(room, conflictOn("other"), testNow); !changed {
		t.Error("another problem is news")
	}
}

func TestMapBlocked(t *testing.T) {
	running := observePod(gamev1.MapInstanceStatus{Players: 2}, newPod(podPhase(corev1.PodRunning), podIP("127.0.0.5"), podReadyCondition(true)), 1, testNow)
	invalid := blocked(gamev1.ReasonInvalidPodSpec, "Pod demo-town is invalid")

	got, changed := mapBlocked(running, invalid, 2, testNow)
	if !changed {
		t.Error("a new problem is news")
	}
	assertCondition(t, got.Conditions, gamev1.ConditionReady, metav1.ConditionFalse, gamev1.ReasonInvalidPodSpec)
	assertCondition(t, got.Conditions, gamev1.ConditionPodHealthy, metav1.ConditionFalse, gamev1.ReasonInvalidPodSpec)
	assertCondition(t, got.Conditions, gamev1.ConditionQuarantined, metav1.ConditionFalse, gamev1.ReasonWithinRestartBudget)
	if got.PodName != "" || got.Endpoint != "" || got.Phase != gamev1.MapPending || got.ObservedGeneration != 2 || got.Players != 2 {
		t.Errorf("status = %+v, want no pod, no endpoint, Pending, generation 2, players kept", got)
	}
	if _, changed := mapBlocked(got, invalid, 2, testNow); changed {
		t.Error("the same problem again is no news")
	}

	quarantined := running.DeepCopy()
	setCondition(&quarantined.Conditions, gamev1.ConditionQuarantined, metav1.ConditionTrue, gamev1.ReasonCrashLoop, "", 1, testNow)
	if got, _ := mapBlocked(*quarantined, invalid, 2, testNow); got.Phase != gamev1.MapQuarantined {
		t.Errorf("phase = %s, want Quarantined to win", got.Phase)
	}
}

func TestGameRoomStatusCountsBlockedMapsAsFailing(t *testing.T) {
	room := newGameRoom("demo", withMap("town"), withMap("forest"))
	blockedMap := newMapInstance(room, "forest")
	blockedMap.Status, _ = mapBlocked(blockedMap.Status, blocked(gamev1.ReasonNameConflict, "Pod demo-forest exists"), 1, testNow)
	got := gameRoomStatus(room, []gamev1.MapInstance{*newMapInstance(room, "town", withMapPhase(gamev1.MapReady, true)), *blockedMap}, testNow)

	assertCondition(t, got.Conditions, gamev1.ConditionDegraded, metav1.ConditionTrue, gamev1.ReasonMapsFailing)
	if c := meta.FindStatusCondition(got.Conditions, gamev1.ConditionDegraded); !strings.Contains(c.Message, "demo-forest") {
		t.Errorf("Degraded message %q does not name demo-forest", c.Message)
	}
	if got.Phase != gamev1.GameRoomDegraded {
		t.Errorf("phase = %s, want Degraded", got.Phase)
	}
}

func TestNameConflictNamesTheObjectAndItsOwner(t *testing.T) {
	room := newGameRoom("a-b", withMap("c"))
	other := newGameRoom("a", withMap("b-c"))
	other.UID = "other-uid"
	theirs := newMapInstance(other, "b-c")
	if err := ownedBy(testScheme, theirs, room); err == nil || !strings.Contains(err.Error(), "MapInstance a-b-c exists but is not GameRoom a-b's (it belongs to GameRoom a)") {
		t.Errorf("conflict = %v", err)
	}
	if err := ownedBy(testScheme, theirs, other); err != nil {
		t.Errorf("the owner's own child is a conflict: %v", err)
	}
	mi := newMapInstance(room, "c")
	leftover := newPod(func(p *corev1.Pod) {
		p.Name = mi.Name
		p.OwnerReferences = []metav1.OwnerReference{*metav1.NewControllerRef(mi, gamev1.GroupVersion.WithKind("MapInstance"))}
		p.OwnerReferences[0].UID = "earlier-uid"
	})
	if err := ownedBy(testScheme, leftover, mi); err == nil ||
		!strings.Contains(err.Error(), "Pod a-b-c exists but is not MapInstance a-b-c's (it belongs to MapInstance a-b-c of an earlier uid earlier-uid): delete it") {
		t.Errorf("conflict = %v", err)
	}
	secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "a-b-token-keys"}}
	err := ownedBy(testScheme, secret, room)
	var b *blockedError
	if !errors.As(err, &b) || b.reason != gamev1.ReasonNameConflict || !strings.Contains(b.message, "Secret a-b-token-keys") ||
		!strings.Contains(b.message, "it has no controller") {
		t.Errorf("conflict = %v", err)
	}
}

func TestInvalidPodKeepsTheAPIServersAnswerShort(t *testing.T) {
	invalid := apierrors.NewInvalid(schema.GroupKind{Kind: "Pod"}, "demo-town", field.ErrorList{
		field.Invalid(field.NewPath("spec", "containers").Index(0).Child("resources", "requests"), "2", "must be less than or equal to cpu limit of 1"),
		field.Invalid(field.NewPath("metadata", "labels"), strings.Repeat("é", 2000), "too long"),
	})
	b := invalidPod(invalid)
	if b.reason != gamev1.ReasonInvalidPodSpec || !strings.Contains(b.message, "spec.containers[0].resources.requests") {
		t.Errorf("problem = %+v", b)
	}
	if len(b.message) > maxBlockedMessage || !utf8.ValidString(b.message) {
		t.Errorf("message of %d bytes (valid UTF-8: %t) does not fit an event", len(b.message), utf8.ValidString(b.message))
	}
}

func TestStatusWritten(t *testing.T) {
	problem := reconcile.TerminalError(conflictOn("x"))
	transient := errors.New("timeout")
	patchFailed := errors.New("conflict writing status")
	cases := []struct {
		name             string
		reconcile, patch error
		err, terminal    bool
	}{
		{"both fine", nil, nil, false, false},
		{"terminal, status written", problem, nil, true, true},
		{"terminal, status not written: run again", problem, patchFailed, true, false},
		{"transient", transient, nil, true, false},
		{"status not written", nil, patchFailed, true, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			err := statusWritten(tc.reconcile, tc.patch)
			if (err != nil) != tc.err || errors.Is(err, reconcile.TerminalError(nil)) != tc.terminal {
				t.Errorf("statusWritten = %v, want error %t, terminal %t", err, tc.err, tc.terminal)
			}
			if tc.patch != nil && !errors.Is(err, tc.patch) {
				t.Errorf("statusWritten = %v lost the status write's error", err)
			}
		})
	}
}

func TestRoomsNamedIn(t *testing.T) {
	got := map[string]bool{}
	for _, name := range []string{"demo-token-keys", "a-b-c"} {
		for _, req := range roomCandidates(&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name}}) {
			if req.Namespace != "ns" {
				t.Errorf("request %v is outside the object's namespace", req)
			}
			got[req.Name] = true
		}
	}
	for _, room := range []string{"demo", "a", "a-b"} {
		if !got[room] {
			t.Errorf("rooms %v lack %s", got, room)
		}
	}
}

// TestTruncateKeepsWholeLinesAndRunes: a long list of problems loses whole
// lines; one long line is cut at a rune boundary; both fit the limit.
func TestTruncateKeepsWholeLinesAndRunes(t *testing.T) {
	lines := strings.Repeat("spec.items[0].kind: é is defined twice\n", 200)
	got := truncate(lines, 300)
	if len(got) > 300 || !strings.HasSuffix(got, "\n...") || strings.Count(got, "\n")*len("spec.items[0].kind: é is defined twice\n") != len(got)-len("...") {
		t.Errorf("lines cut to %q", got)
	}
	one := truncate(strings.Repeat("é", 500), 301)
	if len(one) > 301 || !utf8.ValidString(one) {
		t.Errorf("one line cut to %d bytes (valid UTF-8: %t)", len(one), utf8.ValidString(one))
	}
	if short := truncate("fits", 300); short != "fits" {
		t.Errorf("a short message became %q", short)
	}
}
