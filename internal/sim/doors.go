package sim

import (
	"errors"
	"slices"

	"github.com/roomkeeper/roomkeeper/internal/mapgen"
)

// Doors: a dungeon map's doors (mapgen.Door) are entities of KindDoor at
// the middle of their cells, closed at first, and the boss room's locked
// when the content has a key. A closed door blocks movement and line of
// sight like a wall. A player within DoorReach toggles a door; a locked
// one opens only for a player carrying the key, and stays unlocked. A
// room's doors all open, for everyone, when its guards are dead (rooms.go).

// KindDoor is a door in a dungeon room's wall.
const KindDoor Kind = 4

// EventDoor is sent when a door opens or closes; Detail says which.
const EventDoor = "door"

// Door states, as Event.Detail and View.State carry them.
const (
	DoorOpened = "open"
	DoorClosed = "closed"
	// StateDoorOpen and StateDoorLocked are the bits of a door's View.State.
	StateDoorOpen   uint8 = 1
	StateDoorLocked uint8 = 2
)

// DoorReach is how near a door (its nearest point) a player must stand to
// open or close it, in world units.
const DoorReach = 24

// Errors of a door toggle; the room server maps them to protocol codes.
var (
	ErrNotADoor    = errors.New("not a door")
	ErrLocked      = errors.New("the door is locked: it opens with the key")
	ErrDoorBlocked = errors.New("something stands in the doorway")
)

// doorState is what a door has beyond its entity.
type doorState struct {
	static int // index in mapgen.World.Doors
	open   bool
	locked bool
	cells  cellSpan
}

// cellSpan is an inclusive range of walkability cells.
type cellSpan struct{ x0, y0, x1, y1 int }

// doorGrid marks the cells of closed doors; Blocked asks it after the
// static map.
type doorGrid struct {
	cols   int
	bits   []uint64
	closed int // doors closed; none: no cell to look up
}

func (g *doorGrid) set(c cellSpan, on bool) {
	for cy := c.y0; cy <= c.y1; cy++ {
		for cx := c.x0; cx <= c.x1; cx++ {
			i := uint(cy*g.cols + cx)
			if on {
				g.bits[i/64] |= 1 << (i % 64)
			} else {
				g.bits[i/64] &^= 1 << (i % 64)
			}
		}
	}
}

func (g *doorGrid) get(x, y float64) bool {
	i := uint(int(y)/mapgen.CellSize*g.cols + int(x)/mapgen.CellSize)
	return g.bits[i/64]&(1<<(i%64)) != 0
}

// Blocked reports whether (x, y) is outside the map, in a collider or in a
// closed door: what movement and sight cannot pass.
func (w *World) Blocked(x, y float64) bool {
	if w.static.Blocked(x, y) {
		return true
	}
	return w.doorGrid.closed > 0 && w.doorGrid.get(x, y)
}

// spawnDoors places the map's doors, all closed.
func (w *World) spawnDoors() {
	cols, rows := w.static.Cells()
	w.doorGrid = doorGrid{cols: cols, bits: make([]uint64, (cols*rows+63)/64)}
	for i, d := range w.static.Doors {
		c := d.Rect.Centre()
		e := w.spawn(KindDoor, float32(c.X), float32(c.Y))
		e.HP = 0
		s := &w.doors.rows[e.slot]
		s.static, s.locked = i, d.Locked && w.combat.pack.Key != ""
		s.cells = cellSpan{x0: int(d.Rect.X) / mapgen.CellSize, y0: int(d.Rect.Y) / mapgen.CellSize,
			x1: int(d.Rect.X+d.Rect.W-1) / mapgen.CellSize, y1: int(d.Rect.Y+d.Rect.H-1) / mapgen.CellSize}
		w.doorGrid.set(s.cells, true)
		w.doorGrid.closed++
	}
}

// doorOf returns door id's entity and state, or nils when id is no door.
func (w *World) doorOf(id uint32) (*Entity, *doorState) {
	e := w.find(id)
	if e == nil || e.Kind != KindDoor {
		return nil, nil
	}
	return e, &w.doors.rows[e.slot]
}

// ToggleDoor opens or closes a door for player, who must be alive and
// within DoorReach of it. A locked door opens only for a player carrying
// the content's key, and then stays unlocked; a door does not close on
// anyone standing in it.
func (w *World) ToggleDoor(player, door uint32) error {
	e, p, err := w.livingPlayer(player)
	if err != nil {
		return err
	}
	_, d := w.doorOf(door)
	switch {
	case d == nil:
		return ErrNotADoor
	case w.doorDistance2(d, e.X, e.Y) > DoorReach*DoorReach:
		return ErrOutOfRange
	case d.locked && !w.carriesKey(p):
		return ErrLocked
	case d.open && w.occupied(d):
		return ErrDoorBlocked
	}
	w.setDoor(door, d, !d.open)
	return nil
}

// carriesKey reports whether the player carries the content's key.
func (w *World) carriesKey(p *playerState) bool {
	key := w.combat.pack.Key
	return key != "" && slices.ContainsFunc(p.inventory, func(it Item) bool { return it.Kind == key })
}

// setDoor opens or closes a door and unlocks it, with the event.
func (w *World) setDoor(id uint32, d *doorState, open bool) {
	d.locked = false
	if d.open == open {
		return
	}
	d.open = open
	w.doorGrid.set(d.cells, !open)
	detail := DoorOpened
	if open {
		w.doorGrid.closed--
	} else {
		w.doorGrid.closed++
		detail = DoorClosed
	}
	e := w.find(id)
	w.emit(Event{Type: EventDoor, Tick: w.tick, Entity: id, X: e.X, Y: e.Y, Detail: detail})
}

// doorDistance2 is the squared distance from (x, y) to the door's nearest point.
func (w *World) doorDistance2(d *doorState, x, y float32) float32 {
	r := w.static.Doors[d.static].Rect
	dx := max(float32(r.X)-x, 0, x-float32(r.X+r.W))
	dy := max(float32(r.Y)-y, 0, y-float32(r.Y+r.H))
	return dx*dx + dy*dy
}

// occupied reports whether a player or an NPC stands in the doorway.
func (w *World) occupied(d *doorState) bool {
	for i := range w.entities {
		e := &w.entities[i]
		if (e.Kind == KindPlayer || e.Kind == KindNPC) && w.doorDistance2(d, e.X, e.Y) == 0 {
			return true
		}
	}
	return false
}

// doorState of a view: its open and locked bits.
func (d *doorState) state() uint8 {
	var s uint8
	if d.open {
		s |= StateDoorOpen
	}
	if d.locked {
		s |= StateDoorLocked
	}
	return s
}
