package main

import (
	"math"

	"github.com/roomkeeper/roomkeeper/internal/mapgen"
	"github.com/roomkeeper/roomkeeper/internal/playtest"
	"github.com/roomkeeper/roomkeeper/pkg/client"
)

// dungeonRooms is a fighting bot's plan of a dungeon: the rooms to visit
// when no enemy is in sight, and the guarded ones it has seen cleared.
type dungeonRooms struct {
	static  *mapgen.World
	visited map[int]bool
	current int // the room being explored, -1 for none
	// guarded are the ids of the rooms that clear: the boss room and those
	// the map spawns enemies in; seen are those seen cleared.
	guarded map[uint32]bool
	seen    map[uint32]bool
}

// visitedWithin is how near a room's middle a bot must come to have seen it.
const visitedWithin = 16

func newDungeonRooms(static *mapgen.World) *dungeonRooms {
	d := &dungeonRooms{static: static, visited: map[int]bool{}, current: -1,
		guarded: map[uint32]bool{}, seen: map[uint32]bool{}}
	for _, p := range static.NPCSpawns {
		if i := static.RoomAt(float32(p.X), float32(p.Y)); i >= 0 {
			d.guarded[static.Rooms[i].ID] = true
		}
	}
	if i := static.RoomWith(mapgen.RoleBoss); i >= 0 {
		d.guarded[static.Rooms[i].ID] = true
	}
	return d
}

// next is the middle of the nearest room not visited yet (once all are,
// the round starts again); false on a map without rooms.
func (d *dungeonRooms) next(s client.State) (playtest.Point, bool) {
	if len(d.static.Rooms) == 0 {
		return playtest.Point{}, false
	}
	if d.current >= 0 && distanceTo(s, d.middle(d.current)) <= visitedWithin {
		d.skip()
	}
	if d.current < 0 {
		d.current = d.nearestUnvisited(s)
	}
	return d.middle(d.current), true
}

// skip marks the current room visited (seen, or out of reach for now).
func (d *dungeonRooms) skip() {
	if d.current >= 0 {
		d.visited[d.current] = true
	}
	d.current = -1
}

func (d *dungeonRooms) nearestUnvisited(s client.State) int {
	if len(d.visited) >= len(d.static.Rooms) {
		clear(d.visited) // a new round: doors may have opened meanwhile
	}
	best, bestD := -1, float32(math.MaxFloat32)
	for i := range d.static.Rooms {
		if dist := distanceTo(s, d.middle(i)); !d.visited[i] && dist < bestD {
			best, bestD = i, dist
		}
	}
	return best
}

func (d *dungeonRooms) middle(i int) playtest.Point {
	c := d.static.Rooms[i].Rect.Centre()
	return playtest.Point{X: float32(c.X), Y: float32(c.Y)}
}

// cleared records a room_cleared and returns how many guarded rooms the
// bot has seen cleared.
func (d *dungeonRooms) cleared(room uint32) int {
	if d.guarded[room] {
		d.seen[room] = true
	}
	return len(d.seen)
}

// done reports whether every guarded room was seen cleared.
func (d *dungeonRooms) done() bool {
	return len(d.guarded) > 0 && len(d.seen) == len(d.guarded)
}

func distanceTo(s client.State, p playtest.Point) float32 {
	return float32(math.Hypot(float64(s.Self.X-p.X), float64(s.Self.Y-p.Y)))
}
