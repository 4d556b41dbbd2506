package sim

import (
	"slices"

	"github.com/roomkeeper/roomkeeper/internal/aoi"
)

// Event types, matching the wire protocol's.
const (
	EventJoin  = "join"
	EventLeave = "leave"
)

// Event is something that happened in the world.
type Event struct {
	Type   string
	Tick   uint64
	Entity uint32
	X, Y   float32
	// By is who caused it: the killer of a death, who picked loot up.
	By uint32
	// Room is the mapgen room id of a room_cleared.
	Room uint32
	// Phase is the phase a boss entered, from 1 (boss_phase).
	Phase uint8
	// Detail says what a door did (DoorOpened, DoorClosed).
	Detail string
	// Character and ByCharacter are the tags (character ids) of Entity
	// and By when they are players, for the event log: clients are not
	// sent them.
	Character, ByCharacter string
	// Item is the item taken or dropped (loot_removed, item_dropped).
	Item string
	// Damage is what a hit took (hit).
	Damage uint8
	// LogOnly marks an event only the event log gets, never clients
	// (EventHit, EventItemDropped).
	LogOnly bool
}

// Events only the event log gets, never clients (they see their effect in
// snapshots): a blow landed, an item dropped.
const (
	EventHit         = "hit"
	EventItemDropped = "item_dropped"
)

// View is what observers see of one entity.
type View struct {
	ID   uint32
	Kind Kind
	X, Y float32
	HP   uint8
	// State is a door's StateDoorOpen and StateDoorLocked bits, a player's
	// or an NPC's combat state (StateIdle, StateFighting, ...) with its
	// effect bits (StateStrengthened, StateWeakened).
	State uint8
	// Target is whom a player or an NPC fights, 0 for nobody.
	Target uint32
	// LastSeq is the last input applied, for players.
	LastSeq uint32
	// Owned is a player's inventory, equipment and skills, for its owner
	// only: a new pointer when they changed.
	Owned *Owned
}

// Combat states of players and NPCs, as View.State carries them.
const (
	StateIdle uint8 = iota
	// StateFighting: it has a target (an NPC chasing or hitting one, a
	// player whose last attack's target still lives).
	StateFighting
	// StateDead: a dead player waiting for its respawn.
	StateDead
	// StateReturning: an NPC that gave up a chase, walking home.
	StateReturning
)

// Effect bits of a player's or an NPC's View.State, above its combat
// state: what others see of the abilities' buffs and debuffs on it.
const (
	// StateStrengthened: an ability's buff is on it.
	StateStrengthened uint8 = 1 << 2
	// StateWeakened: an ability's debuff is on it.
	StateWeakened uint8 = 1 << 3
)

// Frame is an immutable picture of the world at one tick. Observers (one
// per connection) read it concurrently to build their own snapshots, so
// the tick goroutine never waits for them.
type Frame struct {
	Tick     uint64
	Entities []View // sorted by ID
	// Grid indexes Entities by position for area-of-interest queries.
	Grid *aoi.Grid
	// Events since the previous frame, in the order they happened, those
	// only the event log gets (LogOnly) among them.
	Events []Event
	// xs and ys are the positions the grid was built from, kept for reuse.
	xs, ys []float32
}

// Lookup returns the view of entity id.
func (f *Frame) Lookup(id uint32) (View, bool) {
	lo, hi := 0, len(f.Entities)
	for lo < hi {
		mid := int(uint(lo+hi) >> 1)
		if f.Entities[mid].ID < id {
			lo = mid + 1
		} else {
			hi = mid
		}
	}
	if lo < len(f.Entities) && f.Entities[lo].ID == id {
		return f.Entities[lo], true
	}
	return View{}, false
}

// Frame captures the world now and clears the pending events. cellSize is
// the AOI grid's cell.
func (w *World) Frame(cellSize float32) *Frame {
	return w.FrameInto(nil, cellSize)
}

// FrameInto is Frame reusing into, a frame nobody reads any more (nil:
// a new one), so a steady stream of frames allocates nothing. The world
// takes over into's old event buffer.
func (w *World) FrameInto(into *Frame, cellSize float32) *Frame {
	width, height := float32(w.static.Width), float32(w.static.Height)
	f := into
	if f == nil || f.Grid == nil || f.Grid.CellSize() != cellSize {
		f = &Frame{Grid: aoi.NewGrid(width, height, cellSize)}
	}
	n := len(w.entities)
	f.Tick = w.tick
	f.Entities = slices.Grow(f.Entities[:0], n)[:n]
	f.Events, w.events = w.events, f.Events[:0]
	f.xs, f.ys = slices.Grow(f.xs[:0], n)[:n], slices.Grow(f.ys[:0], n)[:n]
	for i := range w.entities {
		e := &w.entities[i]
		f.Entities[i] = w.view(e)
		f.xs[i], f.ys[i] = e.X, e.Y
	}
	f.Grid.Build(f.xs, f.ys)
	return f
}

// view is what observers see of e.
func (w *World) view(e *Entity) View {
	v := View{ID: e.ID, Kind: e.Kind, X: e.X, Y: e.Y, HP: e.HP}
	switch e.Kind {
	case KindPlayer:
		p := w.player(e)
		v.LastSeq, v.Owned = p.lastSeq, p.owned
		if p.target != 0 {
			if t := w.find(p.target); t == nil || t.HP == 0 {
				p.target = 0 // its target died or left
			}
		}
		v.Target, v.State = p.target, combatState(e.HP, p.target, false)
		if len(p.buffs) > 0 {
			v.State |= StateStrengthened
		}
	case KindNPC:
		n := w.npc(e)
		// A neutral NPC that follows a player it has no quarrel with is not
		// fighting it: it shows no target (and its churn costs no bytes).
		target := n.target
		if !w.combat.types[n.enemy].Hostile && n.provokedBy != target {
			target = 0
		}
		v.Target, v.State = target, combatState(e.HP, target, n.goingHome)
		if w.weakened(n) {
			v.State |= StateWeakened
		}
	case KindDoor:
		v.State = w.doors.rows[e.slot].state()
	}
	return v
}

// combatState is a combatant's state as a View shows it.
func combatState(hp uint8, target uint32, goingHome bool) uint8 {
	switch {
	case hp == 0:
		return StateDead
	case goingHome:
		return StateReturning
	case target != 0:
		return StateFighting
	}
	return StateIdle
}
