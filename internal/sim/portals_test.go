package sim

import (
	"errors"
	"testing"

	"github.com/roomkeeper/roomkeeper/internal/mapgen"
)

// portalWorld is a small meadow with a portal to "crypt" at (200, 128)
// and one player standing next to it.
func portalWorld(t *testing.T) (*World, Portal, uint32) {
	t.Helper()
	static := testStatic(t, mapgen.Config{Seed: 3, Width: 256, Height: 256,
		Portals: []mapgen.Portal{{To: "crypt", X: 200, Y: 128}}})
	w := NewWorld(static, 30, Defaults())
	portals := w.Portals()
	if len(portals) != 1 || portals[0].To != "crypt" {
		t.Fatalf("portals = %+v", portals)
	}
	id := w.JoinPlayer(PlayerSpec{Tag: "chr", Restore: true, X: 195, Y: 128, HP: 50})
	return w, portals[0], id
}

func TestPortalsAreEntities(t *testing.T) {
	w, pt, _ := portalWorld(t)
	v, ok := w.Frame(64).Lookup(pt.Entity)
	if !ok || v.Kind != KindPortal || v.X != 200 || v.Y != 128 {
		t.Fatalf("portal in the frame: %+v, %v", v, ok)
	}
}

func TestEnterPortalRefuses(t *testing.T) {
	cases := []struct {
		name    string
		arrange func(w *World, player uint32)
		portal  func(pt Portal, player uint32) uint32
		want    error
	}{
		{"out of range", func(w *World, p uint32) { w.find(p).X = 100 }, func(pt Portal, _ uint32) uint32 { return pt.Entity }, ErrOutOfRange},
		{"no such portal", nil, func(Portal, uint32) uint32 { return 9999 }, ErrNoPortal},
		{"a player is no portal", nil, func(_ Portal, p uint32) uint32 { return p }, ErrNoPortal},
		{"dead", func(w *World, p uint32) { w.find(p).HP = 0 }, func(pt Portal, _ uint32) uint32 { return pt.Entity }, ErrDead},
		{"twice", func(w *World, p uint32) { _, _ = w.EnterPortal(p, w.portals[0].Entity) }, func(pt Portal, _ uint32) uint32 { return pt.Entity }, ErrLeaving},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			w, pt, id := portalWorld(t)
			if c.arrange != nil {
				c.arrange(w, id)
			}
			if _, err := w.EnterPortal(id, c.portal(pt, id)); !errors.Is(err, c.want) {
				t.Fatalf("error = %v, want %v", err, c.want)
			}
		})
	}
	w, pt, _ := portalWorld(t)
	if _, err := w.EnterPortal(12345, pt.Entity); !errors.Is(err, ErrNotPlayer) {
		t.Fatalf("unknown player: error = %v, want ErrNotPlayer", err)
	}
}

func TestLeavingThroughAPortal(t *testing.T) {
	w, pt, id := portalWorld(t)
	got, err := w.EnterPortal(id, pt.Entity)
	if err != nil || got.To != "crypt" {
		t.Fatalf("enter = %+v, %v", got, err)
	}
	if w.QueueInput(id, Input{Seq: 1, X: 1}) {
		t.Fatal("a leaving player's input was queued")
	}
	w.Frame(64) // clear the join event
	record, ok := w.LeaveThroughPortal(id)
	if !ok || record.Tag != "chr" || record.X != 195 || record.HP != 50 {
		t.Fatalf("record = %+v, %v", record, ok)
	}
	f := w.Frame(64)
	if _, still := f.Lookup(id); still || w.Players() != 0 {
		t.Fatal("the player is still in the world")
	}
	if len(f.Events) != 1 || f.Events[0].Type != EventLeave || f.Events[0].Entity != id {
		t.Fatalf("events = %+v, want one leave", f.Events)
	}
}

func TestStayingAfterAFailedTransfer(t *testing.T) {
	w, pt, id := portalWorld(t)
	if _, err := w.EnterPortal(id, pt.Entity); err != nil {
		t.Fatal(err)
	}
	w.StayAfterPortal(id)
	if w.Leaving(id) || !w.QueueInput(id, Input{Seq: 1, X: 1}) {
		t.Fatal("the player did not get control back")
	}
	if _, err := w.EnterPortal(id, pt.Entity); err != nil {
		t.Fatalf("entering again: %v", err)
	}
}

func TestArrivalIsTheReturnPortal(t *testing.T) {
	static := testStatic(t, mapgen.Config{Seed: 3, Width: 256, Height: 256,
		Portals: []mapgen.Portal{{To: "town", X: 20, Y: 30}}})
	if got := static.Arrival("town"); got != (mapgen.Point{X: 20, Y: 30}) {
		t.Errorf("arrival from town = %+v, want the portal back", got)
	}
	if got := static.Arrival("elsewhere"); got != static.PlayerSpawn {
		t.Errorf("arrival from a map without a portal back = %+v, want the spawn", got)
	}
}

func TestAGuestLeavesThroughAPortalToo(t *testing.T) {
	w, pt, _ := portalWorld(t)
	guest := w.JoinPlayer(PlayerSpec{Restore: true, X: 195, Y: 130, HP: 50}) // no tag: never saved
	if _, err := w.EnterPortal(guest, pt.Entity); err != nil {
		t.Fatal(err)
	}
	if _, saved := w.LeaveThroughPortal(guest); saved {
		t.Fatal("a guest has a record")
	}
	if _, still := w.Frame(64).Lookup(guest); still || w.Players() != 1 {
		t.Fatalf("the guest is still in the world (%d players)", w.Players())
	}
}
