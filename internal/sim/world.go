// Package sim is the authoritative world of one map: entities, systems and
// the fixed-step tick. It does no I/O: the room server feeds it commands and
// reads the immutable Frames it publishes.
package sim

import (
	"cmp"
	"slices"

	"github.com/roomkeeper/roomkeeper/internal/aoi"
	"github.com/roomkeeper/roomkeeper/internal/content"
	"github.com/roomkeeper/roomkeeper/internal/mapgen"
)

// Kind says what an entity is. The values match the wire protocol's.
type Kind uint8

// Entity kinds.
const (
	KindPlayer Kind = 1
	KindNPC    Kind = 2
)

// Tunables of the world; Defaults gives the shipped values.
type Tunables struct {
	// PlayerSpeed is in world units per second.
	PlayerSpeed float32
	// ChaseCell is the cell of the grid NPCs find players in: at least an
	// enemy's aggro radius (content.MaxAggroRadius), so the 3x3
	// neighbourhood covers it.
	ChaseCell float32
	// RetargetEvery spreads NPC decisions: each NPC thinks once per this many ticks.
	RetargetEvery uint64
	// InputBacklog bounds the inputs queued per player; more are dropped.
	InputBacklog int
	// InputWindow is how many ticks a player's backlog must stand before
	// its standing part is skipped; 0 means one second of ticks.
	InputWindow uint64
	// MaxHP is a new player's hit points (an NPC's come with its type).
	MaxHP uint8
	// Content is what fights on the map and how; its zero value means the
	// built-in pack the map's config names (content.ForMap).
	Content content.Pack
	// WakeCell and WakeCells set where NPCs act: within WakeCells cells
	// of a player, on a grid of WakeCell world units (dormancy.go). A zero
	// WakeCell wakes every NPC always.
	WakeCell  float32
	WakeCells int
	// DropPrefix starts the ids of the items enemies drop; the rest is the
	// NPC and the tick. The room server makes it unique to the map and the
	// process (ids and ticks start over after a restart).
	DropPrefix string
}

// Defaults are the tunables the room server runs with.
func Defaults() Tunables {
	return Tunables{PlayerSpeed: 48, ChaseCell: content.MaxAggroRadius,
		RetargetEvery: 15, InputBacklog: 8, MaxHP: 100, WakeCell: 64, WakeCells: 3}
}

// Input is one movement intent of a player: a direction of length <= 1.
type Input struct {
	Seq  uint32
	X, Y float32
}

// Entity is one thing in the world: its identity and position, what every
// kind has and snapshots show. What a kind has beyond that lives in the
// kind's side table (players, npcs, loot), at the row slot names.
type Entity struct {
	ID   uint32
	Kind Kind
	X, Y float32
	HP   uint8
	slot int32
}

// World is the simulation state. Only the goroutine running its Loop may
// touch it.
type World struct {
	tun      Tunables
	static   *mapgen.World
	dt       float32
	tick     uint64
	nextID   uint32
	rng      rng
	entities []Entity // sorted by ID: IDs only grow and removal keeps order
	players  sideTable[playerState]
	npcs     sideTable[npcState]
	loot     sideTable[lootState]
	doors    sideTable[doorState]
	doorGrid doorGrid
	rooms    []roomState
	events   []Event
	prey     *aoi.Grid // players, for NPCs to find
	wake     wakeGrid  // where NPCs act (dormancy.go)
	scratch  []int32
	px, py   []float32
	pids     []uint32
	portals  []Portal
	leaving  map[uint32]bool // players on their way through a portal
	combat   combat
	// DroppedInputs counts inputs dropped because a player's backlog was full.
	DroppedInputs uint64
	// SkippedInputs counts inputs skipped because they stood in a backlog
	// for a whole input window.
	SkippedInputs uint64
	inputWindow   uint64
	// RejectedInputs counts inputs refused for a direction longer than 1.
	RejectedInputs uint64
	// arrivals counts the players ever placed in the world.
	arrivals uint64
}

// NewWorld builds the world of static at tickRate Hz and spawns its NPCs.
func NewWorld(static *mapgen.World, tickRate int, tun Tunables) *World {
	w := &World{
		tun:    tun,
		static: static,
		dt:     1 / float32(tickRate),
		rng:    newRNG(uint64(static.Config.Seed) ^ 0x9e3779b97f4a7c15),
		prey:   aoi.NewGrid(float32(static.Width), float32(static.Height), tun.ChaseCell),
		wake:   newWakeGrid(static.Width, static.Height, tun.WakeCell, tun.WakeCells),
	}
	w.inputWindow = cmp.Or(tun.InputWindow, uint64(tickRate))
	w.combat = newCombat(tun, static.Config, tickRate)
	w.rooms = make([]roomState, len(static.Rooms))
	w.spawnPortals()
	w.spawnDoors()
	for i, p := range static.NPCSpawns {
		w.spawnNPC(w.combat.enemyFor(uint64(static.Config.Seed), i), p) // spawns are walkable cell centres
	}
	w.spawnBoss()
	return w
}

// Tick is the number of steps taken.
func (w *World) Tick() uint64 { return w.tick }

// Static is the generated map.
func (w *World) Static() *mapgen.World { return w.static }

// Players counts the players in the world.
func (w *World) Players() int {
	return w.players.len()
}

// Arrivals counts the players ever placed in the world: a world whose
// count has not moved and that has no player has seen nobody act since.
func (w *World) Arrivals() uint64 { return w.arrivals }

// Len counts all entities.
func (w *World) Len() int { return len(w.entities) }

// spawn adds an entity, with an empty row in its kind's side table. The
// pointer is good until the entity table changes again.
func (w *World) spawn(kind Kind, x, y float32) *Entity {
	w.nextID++
	e := Entity{ID: w.nextID, Kind: kind, X: x, Y: y, HP: w.tun.MaxHP} // an NPC's type sets its own
	switch kind {
	case KindPlayer:
		e.slot = w.players.add(e.ID, playerState{})
	case KindNPC:
		e.slot = w.npcs.add(e.ID, npcState{})
	case KindLoot:
		e.slot = w.loot.add(e.ID, lootState{})
	case KindDoor:
		e.slot = w.doors.add(e.ID, doorState{})
	}
	w.entities = append(w.entities, e)
	return &w.entities[len(w.entities)-1]
}

// remove takes the entity at index i out of the world with its side-table
// row, and returns what it was.
func (w *World) remove(i int) Entity {
	e := w.entities[i]
	w.entities = slices.Delete(w.entities, i, i+1)
	var moved uint32
	var ok bool
	switch e.Kind {
	case KindPlayer:
		moved, ok = w.players.remove(e.slot)
	case KindNPC:
		moved, ok = w.npcs.remove(e.slot)
	case KindLoot:
		moved, ok = w.loot.remove(e.slot)
	case KindDoor:
		moved, ok = w.doors.remove(e.slot)
	}
	if ok {
		w.find(moved).slot = e.slot
	}
	return e
}

// find returns the entity with id, or nil.
func (w *World) find(id uint32) *Entity {
	i, ok := w.index(id)
	if !ok {
		return nil
	}
	return &w.entities[i]
}

// index is the position of entity id in the sorted entity list.
func (w *World) index(id uint32) (int, bool) {
	return slices.BinarySearchFunc(w.entities, id, func(e Entity, id uint32) int { return cmpID(e.ID, id) })
}

func cmpID(a, b uint32) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// AddPlayer places a new player at the map's spawn and returns its id.
func (w *World) AddPlayer() uint32 { return w.addPlayer("") }

// addPlayer is AddPlayer for the player tag names (its join event names
// it too).
func (w *World) addPlayer(tag string) uint32 {
	w.arrivals++
	s := w.spawnPoint()
	e := w.spawn(KindPlayer, float32(s.X), float32(s.Y))
	p := w.player(e)
	p.tag = tag
	p.inputs = make([]Input, 0, w.tun.InputBacklog)
	p.windowFrom = w.tick
	p.xp = make([]int, len(w.combat.pack.Skills))
	w.fillResources(p)
	w.changed(p)
	w.emit(Event{Type: EventJoin, Tick: w.tick, Entity: e.ID, X: e.X, Y: e.Y})
	return e.ID
}

// spawnCrowdRadius is how near a spawn point a player counts as crowding it.
const spawnCrowdRadius = 32

// spawnPoint is where a new player starts: the map's spawn point with the
// fewest players within spawnCrowdRadius, the earlier one on a tie, so a
// crowd joining at once spreads over the map's spawn points.
func (w *World) spawnPoint() mapgen.Point {
	spawns := w.static.PlayerSpawns
	if len(spawns) <= 1 {
		return w.static.PlayerSpawn
	}
	var crowd [mapgen.MaxSpawnPoints]int
	for i := range w.entities {
		e := &w.entities[i]
		if e.Kind != KindPlayer {
			continue
		}
		for j, p := range spawns {
			if dx, dy := e.X-float32(p.X), e.Y-float32(p.Y); dx*dx+dy*dy <= spawnCrowdRadius*spawnCrowdRadius {
				crowd[j]++
			}
		}
	}
	best := 0
	for j := range spawns {
		if crowd[j] < crowd[best] {
			best = j
		}
	}
	return spawns[best]
}

// RemovePlayer takes a player out of the world.
func (w *World) RemovePlayer(id uint32) {
	i, ok := w.index(id)
	if !ok || w.entities[i].Kind != KindPlayer {
		return
	}
	e := &w.entities[i]
	w.emit(Event{Type: EventLeave, Tick: w.tick, Entity: id, X: e.X, Y: e.Y}) // while it is there to be named
	w.remove(i)
	delete(w.leaving, id)
}

// emit adds an event for clients and the log, naming the players among
// its entity and its cause.
func (w *World) emit(ev Event) {
	w.events = append(w.events, w.tagged(ev))
}

// logOnly adds an event for the log only.
func (w *World) logOnly(ev Event) {
	ev.LogOnly = true
	w.emit(ev)
}

// tagged fills in the character ids of an event's players.
func (w *World) tagged(ev Event) Event {
	if ev.Character == "" && ev.Entity != 0 {
		ev.Character = w.Tag(ev.Entity)
	}
	if ev.ByCharacter == "" && ev.By != 0 {
		ev.ByCharacter = w.Tag(ev.By)
	}
	return ev
}

// Step advances the world by one fixed step: the systems, in this order,
// each in its own file.
func (w *World) Step() {
	w.tick++
	w.indexPlayers() // npc.go: where the NPCs' prey stands
	w.movePlayers()  // input.go: each player's oldest input
	w.moveNPCs()     // npc.go: chase, wander or go home; attack (those near a player)
	w.fight()        // combat.go: the tick's attacks, deaths and respawns
	w.regenerate()   // abilities.go: pools refill, buffs end
}

// move integrates one step of e at speed along (dx, dy).
func (w *World) move(e *Entity, dx, dy, speed float32) {
	e.X, e.Y = Move(w, e.X, e.Y, dx, dy, speed*w.dt)
}

// Blocker says where movement cannot go: a static map (its colliders), or
// a World (its colliders and closed doors).
type Blocker interface {
	Blocked(x, y float64) bool
}

// Move is the movement rule: from (x, y) go dist along (dx, dy), axis by
// axis, so an entity slides along a collider instead of sticking to it.
// Clients replay it to predict their own movement.
func Move(b Blocker, x, y, dx, dy, dist float32) (float32, float32) {
	if nx := x + dx*dist; !b.Blocked(float64(nx), float64(y)) {
		x = nx
	}
	if ny := y + dy*dist; !b.Blocked(float64(x), float64(ny)) {
		y = ny
	}
	return x, y
}
