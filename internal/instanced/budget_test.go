package instanced

import (
	"errors"
	"fmt"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	gamev1 "github.com/roomkeeper/roomkeeper/api/v1"
)

// TestBudget: guests share one small pool, a keyed user starts a few, the
// map a hundred, and instances being deleted or of non-instanced maps do
// not count.
func TestBudget(t *testing.T) {
	room := &gamev1.GameRoom{ObjectMeta: metav1.ObjectMeta{Name: "demo", Namespace: "ns", UID: "room-1"},
		Spec: gamev1.GameRoomSpec{Maps: []gamev1.GameMap{{Name: "crypt", Instanced: true}}}}
	made := func(creator string, n int) []gamev1.MapInstance {
		var out []gamev1.MapInstance
		for i := range n {
			out = append(out, *New(room, room.Spec.Maps[0], fmt.Sprint(creator, i), "label", creator))
		}
		return out
	}
	alice, bob := Creator("demo", "alice", false, ""), Creator("demo", "bob", false, "")
	here, there := Creator("demo", "guest-1", true, "adr-1"), Creator("demo", "guest-2", true, "adr-2")
	if alice == bob || alice == GuestsCreator || Creator("other", "alice", false, "") == alice ||
		Creator("demo", "x", true, "") != GuestsCreator || here == there || Creator("demo", "guest-3", true, "adr-1") != here ||
		!guestMade(here) || guestMade(alice) {
		t.Fatal("creators are not told apart")
	}
	deleting := made(alice, MaxPerUser)
	for i := range deleting {
		deleting[i].DeletionTimestamp = at(0)
	}
	const perMap = 30 // the room's parties.maxInstancesPerMap
	fixed := made(GuestsCreator, MaxGuestPerMap)
	for i := range fixed {
		fixed[i].Spec.Instanced = false
	}
	for name, tc := range map[string]struct {
		instances []gamev1.MapInstance
		creator   string
		want      error
	}{
		"a first guest instance":       {nil, GuestsCreator, nil},
		"the guests' pool spent":       {made(GuestsCreator, MaxGuestPerMap), GuestsCreator, ErrGuestsFull},
		"a user while guests are full": {made(GuestsCreator, MaxGuestPerMap), alice, nil},
		"a user's share spent":         {made(alice, MaxPerUser), alice, ErrUserFull},
		"another user meanwhile":       {made(alice, MaxPerUser), bob, nil},
		"being deleted counts no more": {deleting, alice, nil},
		"not instanced counts not":     {fixed, GuestsCreator, nil},
		"the map full":                 {made(bob, perMap), alice, ErrMapFull},
		"an address's share spent":     {made(here, MaxGuestPerAddress), here, ErrAddressFull},
		"another address meanwhile":    {made(here, MaxGuestPerAddress), there, nil},
		"the pool spent by addresses":  {append(made(here, MaxGuestPerMap/2), made(there, MaxGuestPerMap/2)...), Creator("demo", "g", true, "adr-3"), ErrGuestsFull},
	} {
		if got := Budget(tc.instances, tc.creator, perMap); !errors.Is(got, tc.want) || (got == nil) != (tc.want == nil) {
			t.Errorf("%s: Budget = %v, want %v", name, got, tc.want)
		}
	}
}
