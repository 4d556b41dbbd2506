package instanced

import (
	"testing"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	gamev1 "github.com/roomkeeper/roomkeeper/api/v1"
)

// TestPool: a pool counts its unclaimed instances, Ready or starting;
// refills within the map's cap; gives up the starting ones first; and
// names new ones where no instance is.
func TestPool(t *testing.T) {
	room := &gamev1.GameRoom{ObjectMeta: metav1.ObjectMeta{Name: "demo", Namespace: "ns", UID: "room-1"},
		Spec: gamev1.GameRoomSpec{Maps: []gamev1.GameMap{{Name: "crypt", Instanced: true, Warm: 3}}}}
	crypt := room.Spec.Maps[0]
	names := WarmNames("demo", "crypt", nil, 4)
	ready := *NewWarm(room, crypt, names[0])
	meta.SetStatusCondition(&ready.Status.Conditions, metav1.Condition{Type: gamev1.ConditionReady, Status: metav1.ConditionTrue, Reason: "x"})
	ready.Status.Endpoint = "ws://x"
	starting := *NewWarm(room, crypt, names[1])
	claimed := *NewWarm(room, crypt, names[2])
	Claim(&claimed, "label", "creator", t0)
	deleting := *NewWarm(room, crypt, names[3])
	deleting.DeletionTimestamp = at(0)

	pool := PoolOf("crypt", []gamev1.MapInstance{ready, starting, claimed, deleting})
	if len(pool.Ready) != 1 || len(pool.Starting) != 1 || pool.Instances != 3 {
		t.Fatalf("pool %+v: want 1 Ready, 1 starting, 3 instances (the claimed one counts, the deleted one not)", pool)
	}
	if n := pool.Refill(3, 100); n != 1 {
		t.Errorf("refill to 3: %d, want 1", n)
	}
	if n := pool.Refill(3, 3); n != 0 {
		t.Errorf("refill at the map's cap: %d, want 0", n)
	}
	if s := pool.Surplus(1); len(s) != 1 || s[0].Name != starting.Name {
		t.Errorf("surplus past 1: %v, want the starting one", s)
	}
	if !Claimable(room, "crypt", &ready) || Claimable(room, "crypt", &starting) || Claimable(room, "crypt", &claimed) {
		t.Error("only a Ready, unclaimed warm instance is claimable")
	}
	if TrackEmpty(&ready, metav1.Time{Time: t0}) != nil {
		t.Error("an unclaimed warm instance's idle clock runs")
	}
	next := WarmNames("demo", "crypt", []gamev1.MapInstance{ready, starting}, 2)
	if next[0] != names[2] || next[1] != names[3] {
		t.Errorf("next names %v, want %v: the first ones no instance has", next, names[2:])
	}
	a, b := []gamev1.MapInstance{ready, starting}, []gamev1.MapInstance{starting, ready}
	ClaimOrder("party", a)
	ClaimOrder("party", b)
	if a[0].Name != b[0].Name {
		t.Error("one party's claim order depends on the order it read the pool in")
	}
}
