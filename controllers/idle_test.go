package controllers

import (
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/event"

	gamev1 "github.com/roomkeeper/roomkeeper/api/v1"
	"github.com/roomkeeper/roomkeeper/internal/instanced"
)

func TestIdleTimeouts(t *testing.T) {
	unset := newGameRoom("demo", withMap("town"))
	set := newGameRoom("demo", withMap("town"), withIdleTimeout(2*time.Hour))
	if got := instanced.IdleTimeout(unset); got != 30*time.Minute {
		t.Errorf("instance timeout, room unset = %s, want 30m", got)
	}
	if got := roomIdleTimeout(unset); got != 0 {
		t.Errorf("room timeout, unset = %s, want 0 (never)", got)
	}
	if got := instanced.IdleTimeout(set); got != 2*time.Hour {
		t.Errorf("instance timeout, room 2h = %s", got)
	}
	if got := roomIdleTimeout(set); got != 2*time.Hour {
		t.Errorf("room timeout, 2h = %s", got)
	}
}

func TestMapEmptySince(t *testing.T) {
	room := newGameRoom("demo", withMap("town"), withInstancedMap("crypt"))
	now := metav1.NewTime(t0)
	cases := []struct {
		name string
		mi   *gamev1.MapInstance
		want *metav1.Time
	}{
		{"instanced, Ready, empty", newMapInstance(room, "crypt", withMapPhase(gamev1.MapReady, true)), &now},
		{"instanced, starting", newMapInstance(room, "crypt", withMapPhase(gamev1.MapStarting, false)), nil},
		{"instanced, Ready, players", newMapInstance(room, "crypt", withMapPhase(gamev1.MapReady, true), withPlayers(2)), nil},
		{"instanced, empty before, crashed since", newMapInstance(room, "crypt", withMapPhase(gamev1.MapBackoff, false), withEmptySince(at(-time.Hour))), at(-time.Hour)},
		{"non-instanced maps are not tracked", newMapInstance(room, "town", withMapPhase(gamev1.MapReady, true)), nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := instanced.TrackEmpty(tc.mi, now); !timesEqual(got, tc.want) {
				t.Errorf("emptySince = %v, want %v", got, tc.want)
			}
		})
	}
}

func TestMarkIdle(t *testing.T) {
	room := newGameRoom("demo", withMap("town"), withInstancedMap("crypt"))
	mi := newMapInstance(room, "crypt", withMapPhase(gamev1.MapReady, true), withEmptySince(at(0)))
	got := markIdle(mi.Status, 3, 30*time.Minute, metav1.NewTime(t0.Add(30*time.Minute)))
	c := meta.FindStatusCondition(got.Conditions, gamev1.ConditionReady)
	if c == nil || c.Status != metav1.ConditionFalse || c.Reason != gamev1.ReasonIdleTimeout || c.ObservedGeneration != 3 {
		t.Fatalf("Ready = %+v, want False/IdleTimeout", c)
	}
	if want := "No players since 2026-11-26T12:00:00Z (idleTimeout 30m0s): deleting the instance"; c.Message != want {
		t.Errorf("message = %q, want %q", c.Message, want)
	}
	if got.Phase != gamev1.MapTerminating {
		t.Errorf("phase = %s, want Terminating", got.Phase)
	}
	if mi.Status.Phase != gamev1.MapReady {
		t.Error("markIdle changed its input")
	}
}

func TestSoonest(t *testing.T) {
	if got := soonest(24*time.Hour, 0, 5*time.Minute, 10*time.Minute); got != 5*time.Minute {
		t.Errorf("soonest = %s, want 5m", got)
	}
	if got := soonest(0, 0); got != 0 {
		t.Errorf("soonest of nothing = %s, want 0", got)
	}
}

// activity sets what mi's pod reports of its players who played lately.
func activity(mi *gamev1.MapInstance, active int32) *gamev1.MapInstance {
	mi.Status.ActivePlayers = &active
	return mi
}

func TestPlayersCrossedZero(t *testing.T) {
	room := newGameRoom("demo", withMap("town"), withInstancedMap("crypt"))
	crypt := func(players int32) *gamev1.MapInstance { return newMapInstance(room, "crypt", withPlayers(players)) }
	town := func(players int32) *gamev1.MapInstance { return newMapInstance(room, "town", withPlayers(players)) }
	shard2 := func(players int32) *gamev1.MapInstance {
		mi := buildShard(room, room.Spec.Maps[0], 2)
		mi.Status.Players = players
		return mi
	}
	cases := []struct {
		name     string
		old, new *gamev1.MapInstance
		want     bool
	}{
		{"instanced, last player left", crypt(1), crypt(0), true},
		{"instanced, first player came", crypt(0), crypt(3), true},
		{"instanced, players changed but not to or from zero", crypt(2), crypt(5), false},
		{"instanced, still empty (a heartbeat)", crypt(0), crypt(0), false},
		{"non-instanced, last player left", town(1), town(0), false},
		{"a surplus shard, last player left", shard2(1), shard2(0), true},
		{"a surplus shard, its connections idle: not empty", activity(shard2(2), 1), activity(shard2(2), 0), false},
		{"instanced, the last player stopped playing, still connected", activity(crypt(3), 1), activity(crypt(3), 0), true},
		{"instanced, an idle connection played again", activity(crypt(3), 0), activity(crypt(3), 2), true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := playersCrossedZero.Update(event.UpdateEvent{ObjectOld: tc.old, ObjectNew: tc.new}); got != tc.want {
				t.Errorf("update passes = %v, want %v", got, tc.want)
			}
		})
	}
	if playersCrossedZero.Create(event.CreateEvent{Object: crypt(0)}) {
		t.Error("creates are GenerationChangedPredicate's to pass")
	}
}

func TestGameRoomStatusEmptySince(t *testing.T) {
	room := newGameRoom("demo", withMap("town"), withInstancedMap("crypt"))
	party := func(opts ...func(*gamev1.MapInstance)) gamev1.MapInstance {
		mi := newMapInstance(room, "crypt", opts...)
		mi.Name = "demo-crypt-ab12c"
		return *mi
	}
	readyTown := func(players int32) gamev1.MapInstance {
		return *newMapInstance(room, "town", withMapPhase(gamev1.MapReady, true), withPlayers(players))
	}
	cases := []struct {
		name      string
		prev      *metav1.Time
		instances []gamev1.MapInstance
		want      *metav1.Time
	}{
		{"starting: not yet empty", nil, []gamev1.MapInstance{*newMapInstance(room, "town", withMapPhase(gamev1.MapStarting, false))}, nil},
		{"Ready and empty: starts now", nil, []gamev1.MapInstance{readyTown(0)}, &testNow},
		{"stays empty: keeps the start", at(0), []gamev1.MapInstance{readyTown(0)}, at(0)},
		{"players in the town", at(0), []gamev1.MapInstance{readyTown(2)}, nil},
		{"players only in a party's instance", at(0), []gamev1.MapInstance{readyTown(0), party(withMapPhase(gamev1.MapReady, true), withPlayers(4))}, nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := room.DeepCopy()
			r.Status.EmptySince = tc.prev
			if got := gameRoomStatus(r, tc.instances, testNow).EmptySince; !timesEqual(got, tc.want) {
				t.Errorf("emptySince = %v, want %v", got, tc.want)
			}
		})
	}
}
