package client

import (
	"github.com/roomkeeper/roomkeeper/internal/mapgen"
	"github.com/roomkeeper/roomkeeper/internal/protocol"
	"github.com/roomkeeper/roomkeeper/internal/sim"
)

// doorBlocker is the static map with the doors a snapshot shows closed:
// what the server's movement rule blocks, for prediction.
type doorBlocker struct {
	static *mapgen.World
	closed []mapgen.Rect
}

// Blocker is what blocks movement and sight among entities, by the
// server's rules: the static map, and the doors the entities show closed.
func Blocker(static *mapgen.World, entities []protocol.EntityState) sim.Blocker {
	return withClosedDoors(static, entities)
}

// withClosedDoors is what blocks movement among entities: the static map
// alone when no closed door is in view.
func withClosedDoors(static *mapgen.World, entities []protocol.EntityState) sim.Blocker {
	var closed []mapgen.Rect
	for _, e := range entities {
		if e.Kind != protocol.EntityDoor || e.State&protocol.DoorOpen != 0 {
			continue
		}
		if r, ok := DoorRect(static, e); ok {
			closed = append(closed, r)
		}
	}
	if len(closed) == 0 {
		return static
	}
	return doorBlocker{static: static, closed: closed}
}

// DoorRect finds a door entity's cells in the static map: the door it
// stands in the middle of.
func DoorRect(static *mapgen.World, door protocol.EntityState) (mapgen.Rect, bool) {
	for _, d := range static.Doors {
		if c := d.Rect.Centre(); float32(c.X) == door.X && float32(c.Y) == door.Y {
			return d.Rect, true
		}
	}
	return mapgen.Rect{}, false
}

func (b doorBlocker) Blocked(x, y float64) bool {
	if b.static.Blocked(x, y) {
		return true
	}
	for _, r := range b.closed {
		if x >= float64(r.X) && y >= float64(r.Y) && x < float64(r.X+r.W) && y < float64(r.Y+r.H) {
			return true
		}
	}
	return false
}
