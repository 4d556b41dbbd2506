package instanced

import (
	"errors"
	"regexp"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	gamev1 "github.com/roomkeeper/roomkeeper/api/v1"
)

// TestPartyKey: members of a party share a key whoever they are; a player
// in no party has a key of its own, never another player's nor a party's.
func TestPartyKey(t *testing.T) {
	t.Parallel()
	if PartyKey("p-1", "u-1") != PartyKey("p-1", "u-2") {
		t.Error("two members of one party have two keys")
	}
	if PartyKey("p-1", "u-1") == PartyKey("p-2", "u-1") {
		t.Error("two parties share a key")
	}
	if PartyKey("", "u-1") == PartyKey("", "u-2") {
		t.Error("two players entering alone share a key")
	}
	if PartyKey("", "u-1") == PartyKey("u-1", "u-1") {
		t.Error("a player alone has the key of a party named like it")
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
	label := Label("demo", "crypt", PartyKey("p", ""))
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
