package instanced

import (
	"errors"
	"regexp"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	gamev1 "github.com/roomkeeper/roomkeeper/api/v1"
)

func TestPartyKey(t *testing.T) {
	t.Parallel()
	start := time.Unix(1_800_000_000, 0) // a multiple of 60 s
	from := func(src string, at time.Time) string {
		return PartyKey("", src, false, at)
	}
	if from("demo-town", start) != from("demo-town", start.Add(Window-time.Second)) {
		t.Error("one source, one window: two parties")
	}
	if from("demo-town", start) == from("demo-town", start.Add(Window)) {
		t.Error("the next window shares the party")
	}
	if from("demo-town", start) == from("demo-forest", start) {
		t.Error("two sources share a party")
	}
	named := func(party, src string, at time.Time) string { return PartyKey(party, src, false, at) }
	if named("p-1", "demo-town", start) != named("p-1", "demo-forest", start.Add(time.Hour)) {
		t.Error("a named party depends on source or time")
	}
	if named("p-1", "x", start) == named("p-2", "x", start) {
		t.Error("two named parties share a key")
	}
	guest := func(party string) string { return PartyKey(party, "demo-town", true, start) }
	if guest("p-1") != guest("p-2") || guest("p-1") == from("demo-town", start) {
		t.Error("guests name their own instances, or share the keyed players' window")
	}
}

func TestNameFitsAPodName(t *testing.T) {
	t.Parallel()
	room, mapName := strings.Repeat("r", 36), strings.Repeat("m", 20)
	name := Name(room, mapName, Label(room, mapName, "party\x00p"), 0)
	if len(name) != 63 || !regexp.MustCompile(`^r{36}-m{20}-[a-z0-9]{5}$`).MatchString(name) {
		t.Fatalf("name %q (%d characters), want 63 and the pattern", name, len(name))
	}
	if name == Name(room, mapName, Label(room, mapName, "party\x00p"), 1) {
		t.Fatal("the second probe has the first one's name")
	}
}

// TestOwns: a MapInstance under a party's name is the party's only when
// room, map, instancing and label all match; an earlier room's or one
// being deleted is told apart.
func TestOwns(t *testing.T) {
	room := &gamev1.GameRoom{ObjectMeta: metav1.ObjectMeta{Name: "demo", Namespace: "ns", UID: "room-1"},
		Spec: gamev1.GameRoomSpec{Maps: []gamev1.GameMap{{Name: "crypt", Instanced: true}}}}
	label := Label("demo", "crypt", PartyKey("p", "", false, time.Time{}))
	party := func(change func(*gamev1.MapInstance)) *gamev1.MapInstance {
		mi := New(room, room.Spec.Maps[0], Name("demo", "crypt", label, 0), label, "someone")
		if change != nil {
			change(mi)
		}
		return mi
	}
	earlier := room.DeepCopy()
	earlier.UID = "room-0"
	for name, tc := range map[string]struct {
		mi   *gamev1.MapInstance
		want error
	}{
		"the party's":       {party(nil), nil},
		"another party's":   {party(func(mi *gamev1.MapInstance) { mi.Labels[gamev1.LabelParty] = "other" }), ErrOtherParty},
		"another map's":     {party(func(mi *gamev1.MapInstance) { mi.Spec.MapName = "town" }), ErrOtherParty},
		"another room's":    {party(func(mi *gamev1.MapInstance) { mi.Spec.RoomName = "other" }), ErrOtherParty},
		"not instanced":     {party(func(mi *gamev1.MapInstance) { mi.Spec.Instanced = false }), ErrOtherParty},
		"an earlier room's": {New(earlier, room.Spec.Maps[0], "x", label, "someone"), ErrEarlierRoom},
		"being deleted":     {party(func(mi *gamev1.MapInstance) { mi.DeletionTimestamp = at(0) }), ErrDeleting},
	} {
		if got := Owns(room, "crypt", label, tc.mi); !errors.Is(got, tc.want) || (tc.want == nil) != (got == nil) {
			t.Errorf("%s: Owns = %v, want %v", name, got, tc.want)
		}
	}
}
