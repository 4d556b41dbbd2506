package sim

import (
	"github.com/roomkeeper/roomkeeper/internal/content"
	"github.com/roomkeeper/roomkeeper/internal/mapgen"
)

// Rooms: the enemies that spawn on a dungeon room's floor guard it. On the
// tick the last of them dies the room is cleared, once: a room_cleared
// event, and every door of the room opens (and unlocks) for everyone. A
// guard that respawns later does not close it again. Rooms nobody guards
// are never cleared: there is nothing to clear.

// EventRoomCleared is sent when a room's last guard dies; Room names it
// and X, Y are its middle.
const EventRoomCleared = "room_cleared"

// roomState counts a room's living guards.
type roomState struct {
	guards  int
	cleared bool
}

// guard makes the NPC a guard of the room its home lies in, if any.
func (w *World) guard(n *npcState) {
	n.room = int32(w.static.RoomAt(n.homeX, n.homeY))
	if n.room >= 0 {
		w.rooms[n.room].guards++
	}
}

// guardDied counts a guard's death and clears its room when it was the last.
func (w *World) guardDied(n *npcState) {
	if n.room < 0 {
		return
	}
	r := &w.rooms[n.room]
	r.guards--
	if r.guards > 0 || r.cleared {
		return
	}
	r.cleared = true
	room := w.static.Rooms[n.room]
	c := room.Rect.Centre()
	w.emit(Event{Type: EventRoomCleared, Tick: w.tick, Room: room.ID, X: float32(c.X), Y: float32(c.Y)})
	for i, id := range w.doors.ids {
		if d := &w.doors.rows[i]; w.static.Doors[d.static].Room == int(n.room) {
			w.setDoor(id, d, true)
		}
	}
}

// questRooms are the rooms whose clearing reaches a quest phase, which a
// critical item's QuestGate may wait for, in content.QuestPhases' order.
var questRooms = [...]struct{ role, phase string }{
	{mapgen.RoleKey, content.PhaseKeyRoomCleared},
	{mapgen.RoleBoss, content.PhaseBossRoomCleared},
}

// questPhaseSets are QuestPhases' answers by the quest rooms cleared (bit
// i: questRooms[i]), made once: a checkpoint's summary, taken on the tick
// goroutine, allocates nothing for them.
var questPhaseSets = func() (sets [1 << len(questRooms)][]string) {
	for mask := range sets {
		for i, q := range questRooms {
			if mask&(1<<i) != 0 {
				sets[mask] = append(sets[mask], q.phase)
			}
		}
	}
	return sets
}()

// QuestPhases are the quest phases the world has reached: its key room
// cleared, its boss room cleared (nil: none). A restored world has those
// of its checkpoint, since they are its rooms' cleared flags. The slice is
// shared: do not change it.
func (w *World) QuestPhases() []string {
	mask := 0
	for i, q := range questRooms {
		if w.RoomCleared(w.static.RoomWith(q.role)) {
			mask |= 1 << i
		}
	}
	return questPhaseSets[mask]
}

// RoomCleared reports whether room (an index in the map's Rooms) is cleared.
func (w *World) RoomCleared(room int) bool {
	return room >= 0 && room < len(w.rooms) && w.rooms[room].cleared
}
