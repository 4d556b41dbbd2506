package roomserver

import (
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/roomkeeper/roomkeeper/internal/mapgen"
	"github.com/roomkeeper/roomkeeper/internal/playtest"
	"github.com/roomkeeper/roomkeeper/internal/protocol"
	"github.com/roomkeeper/roomkeeper/pkg/client"
)

// cryptMap is the sample GameRoom's crypt without its enemies (the boss
// stays, behind its locked doors).
const cryptMap = `{"seed":7,"width":256,"height":256,"biome":"dungeon","content":"crypt","portals":[{"to":"town","x":128,"y":16}]}`

// doorPoint is where a static door's entity stands.
func doorPoint(d mapgen.Door) playtest.Point {
	c := d.Rect.Centre()
	return playtest.Point{X: float32(c.X), Y: float32(c.Y)}
}

// nearestDoor is the door of the wanted lock state with the shortest
// route from the map's spawn.
func nearestDoor(t *testing.T, static *mapgen.World, locked bool) mapgen.Door {
	t.Helper()
	spawn := playtest.Point{X: float32(static.PlayerSpawn.X), Y: float32(static.PlayerSpawn.Y)}
	var best mapgen.Door
	bestLen := math.MaxInt
	for _, d := range static.Doors {
		if d.Locked != locked {
			continue
		}
		if route, err := playtest.Route(static, spawn, doorPoint(d)); err == nil && len(route) < bestLen {
			best, bestLen = d, len(route)
		}
	}
	if bestLen == math.MaxInt {
		t.Fatalf("no door (locked %v) on a route from the spawn", locked)
	}
	return best
}

func hasEvent(s client.State, typ string, entity uint32, detail string) bool {
	return slices.ContainsFunc(s.Events, func(e protocol.Event) bool {
		return e.Type == typ && e.Entity == entity && e.Detail == detail
	})
}

// Doors over real sockets: a toggle from afar is refused; a player walks
// up and opens a door, which every client near sees (the door event and
// the doors channel), and closes it again; the locked door of the boss
// room refuses a player without the key and opens for one who picked the
// key up.
func TestDoorsOverASocket(t *testing.T) {
	h := newHarness(t, func(c *Config) { c.MapConfig = []byte(cryptMap) })
	a, b := h.join(), h.join()
	ctx := waitCtx(t)
	static := a.Static()
	plain := nearestDoor(t, static, false)

	door, ok := playtest.DoorEntity(waitFor(t, a, "the door in sight", func(s client.State) bool {
		_, ok := playtest.DoorEntity(s, plain)
		return ok
	}), plain)
	if !ok || door.State != 0 {
		t.Fatalf("door %+v: want a closed, unlocked door", door)
	}
	if d := playtest.Dist(door, a.Snapshot().Self); d > 24+float32(max(plain.Rect.W, plain.Rect.H)) {
		if ack := command(t, a, protocol.FeatureDoor, protocol.ActionToggle, protocol.DoorToggle{Door: door.ID}); ack.OK || ack.Code != protocol.CodeOutOfRange {
			t.Errorf("a toggle from %v away: %+v, want out_of_range", d, ack)
		}
	}
	if ack := command(t, a, protocol.FeatureDoor, protocol.ActionToggle, protocol.DoorToggle{Door: a.Welcome().PlayerID}); ack.OK || ack.Code != protocol.CodeInvalidAction {
		t.Errorf("toggling a player: %+v, want invalid_action", ack)
	}

	if err := playtest.Travel(ctx, a, doorPoint(plain)); err != nil {
		t.Fatalf("walking through door %d: %v", door.ID, err)
	}
	for _, c := range []*client.Client{a, b} {
		waitFor(t, c, "the door open", func(s client.State) bool {
			d, ok := playtest.DoorEntity(s, plain)
			return ok && d.State&protocol.DoorOpen != 0 && hasEvent(s, protocol.EventDoor, door.ID, "open")
		})
	}

	// Close it from outside its cells.
	route, err := playtest.Route(static, playtest.Point{X: float32(static.PlayerSpawn.X), Y: float32(static.PlayerSpawn.Y)}, doorPoint(plain))
	if err != nil || len(route) < 2 {
		t.Fatalf("route to the door: %v %v", route, err)
	}
	if err := playtest.Step(ctx, a, route[len(route)-2]); err != nil {
		t.Fatal(err)
	}
	if ack := command(t, a, protocol.FeatureDoor, protocol.ActionToggle, protocol.DoorToggle{Door: door.ID}); !ack.OK {
		t.Fatalf("closing the door: %+v", ack)
	}
	waitFor(t, b, "the door closed", func(s client.State) bool {
		d, ok := playtest.DoorEntity(s, plain)
		return ok && d.State&protocol.DoorOpen == 0 && hasEvent(s, protocol.EventDoor, door.ID, "closed")
	})

	// The boss room: locked until the key.
	locked := nearestDoor(t, static, true)
	err = playtest.Travel(ctx, a, doorPoint(locked))
	if err == nil || !strings.Contains(err.Error(), string(protocol.CodeInvalidAction)) || !strings.Contains(err.Error(), "locked") {
		t.Fatalf("walking into the boss room without the key: %v, want a locked door", err)
	}
	keyRoom := static.Rooms[static.RoomWith(mapgen.RoleKey)].Rect.Centre()
	if err := playtest.Travel(ctx, a, playtest.Point{X: float32(keyRoom.X), Y: float32(keyRoom.Y)}); err != nil {
		t.Fatalf("walking to the key room: %v", err)
	}
	s := waitFor(t, a, "the key in sight", func(s client.State) bool {
		return slices.ContainsFunc(s.Entities, func(e protocol.EntityState) bool {
			return e.Kind == protocol.EntityLoot && e.X == float32(keyRoom.X) && e.Y == float32(keyRoom.Y)
		})
	})
	key := s.Entities[slices.IndexFunc(s.Entities, func(e protocol.EntityState) bool {
		return e.Kind == protocol.EntityLoot && e.X == float32(keyRoom.X) && e.Y == float32(keyRoom.Y)
	})]
	ack := command(t, a, protocol.FeatureLoot, protocol.ActionPickup, protocol.LootPickup{Entity: key.ID})
	if !ack.OK || !slices.ContainsFunc(ack.Inventory, func(it protocol.ItemView) bool { return it.Kind == "crypt key" }) {
		t.Fatalf("picking up the key: %+v", ack)
	}
	if err := playtest.Travel(ctx, a, doorPoint(locked)); err != nil {
		t.Fatalf("walking into the boss room with the key: %v", err)
	}
	lockedDoor, _ := playtest.DoorEntity(a.Snapshot(), locked)
	if lockedDoor.State != protocol.DoorOpen {
		t.Errorf("the boss room's door with the key: state %d, want open and unlocked", lockedDoor.State)
	}
}
