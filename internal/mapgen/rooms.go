package mapgen

import (
	"cmp"
	"slices"
)

// Room roles: what a room is for beyond being fought through.
const (
	// RoleBoss is the room the content's boss guards. Its doors are locked.
	RoleBoss = "boss"
	// RoleKey is where the key to the boss room lies: the room farthest
	// from the spawn that players reach without passing the boss room.
	RoleKey = "key"
)

// Room is a chamber of a dungeon map (the spawn area is not one). The
// enemies that spawn inside it guard it.
type Room struct {
	// ID is unique within the world and stable for a given config.
	ID uint32
	// Rect is the room's floor.
	Rect Rect
	// Role is RoleBoss, RoleKey or empty.
	Role string
}

// Door is a gap in a room's wall: a run of walkable cells just outside
// the room, where a corridor comes in. A door that is closed blocks
// movement and sight like a wall; the simulation opens and closes doors,
// the map only says where they are.
type Door struct {
	// ID is unique within the world and stable for a given config.
	ID uint32
	// Room is the index in World.Rooms of the room the door leads into.
	Room int
	// Rect covers the door's cells, one cell thick.
	Rect Rect
	// Locked doors open only with the content's key (or when their room is
	// cleared); they are the boss room's.
	Locked bool
}

// maxBossCandidates bounds the rooms tried as the boss room, each costing
// a flood fill of the map.
const maxBossCandidates = 8

// furnishDungeon finds the doors of every room but the spawn area's
// (rooms[0]) and picks the boss and key rooms. It runs once the walls are
// final.
func (g *generator) furnishDungeon(rooms []cellRect) {
	g.doorCells = newBitgrid(g.cols, g.rows)
	var doors [][]cellRect
	g.roomCells = rooms[1:]
	for i, room := range rooms[1:] {
		g.rooms = append(g.rooms, Room{ID: g.ids.next(idRoom, i), Rect: g.worldRect(room)})
		doors = append(doors, g.roomDoors(room))
	}
	g.assignRoles(rooms[1:], doors)
	for i, ds := range doors {
		for _, d := range ds {
			g.doors = append(g.doors, Door{ID: g.ids.next(idDoor, len(g.doors)), Room: i,
				Rect: g.worldRect(d), Locked: g.rooms[i].Role == RoleBoss})
		}
	}
}

// roomDoors returns the runs of walkable cells on each side of the ring
// around room (corners left out: they touch no floor cell edge to edge),
// skipping cells already another room's door, and marks them in doorCells.
func (g *generator) roomDoors(room cellRect) []cellRect {
	sides := []cellRect{
		{x0: room.x0, y0: room.y0 - 1, x1: room.x1, y1: room.y0 - 1}, // top
		{x0: room.x0, y0: room.y1 + 1, x1: room.x1, y1: room.y1 + 1}, // bottom
		{x0: room.x0 - 1, y0: room.y0, x1: room.x0 - 1, y1: room.y1}, // left
		{x0: room.x1 + 1, y0: room.y0, x1: room.x1 + 1, y1: room.y1}, // right
	}
	var out []cellRect
	for _, s := range sides {
		out = g.appendOpenRuns(out, s)
	}
	for _, d := range out {
		g.doorCells.setRect(d)
	}
	return out
}

// appendOpenRuns appends the runs of cells of line (one cell thick) that
// are walkable and no door yet.
func (g *generator) appendOpenRuns(out []cellRect, line cellRect) []cellRect {
	open := func(cx, cy int) bool { return !g.blocked.get(cx, cy) && !g.doorCells.get(cx, cy) }
	dx, dy := 1, 0
	if line.x0 == line.x1 {
		dx, dy = 0, 1
	}
	for cx, cy := line.x0, line.y0; cx <= line.x1 && cy <= line.y1; {
		if !open(cx, cy) {
			cx, cy = cx+dx, cy+dy
			continue
		}
		run := cellRect{x0: cx, y0: cy}
		for cx <= line.x1 && cy <= line.y1 && open(cx, cy) {
			run.x1, run.y1 = cx, cy
			cx, cy = cx+dx, cy+dy
		}
		out = append(out, run)
	}
	return out
}

// assignRoles makes the farthest room from the spawn whose locked doors
// still leave every portal and another room reachable the boss room, and
// the farthest room reachable past it locked the key room. A map with
// fewer than two rooms, or without such a room, has neither.
func (g *generator) assignRoles(rooms []cellRect, doors [][]cellRect) {
	order := make([]int, len(rooms))
	for i := range order {
		order[i] = i
	}
	sx, sy := g.spawnCell[0], g.spawnCell[1]
	distance := func(i int) int {
		cx, cy := rooms[i].centre()
		return abs(cx-sx) + abs(cy-sy)
	}
	slices.SortStableFunc(order, func(a, b int) int { return cmp.Compare(distance(b), distance(a)) })
	for _, boss := range order[:min(len(order), maxBossCandidates)] {
		reached := g.reachableWithout(doors[boss])
		if !g.portalsIn(&reached) {
			continue
		}
		for _, key := range order {
			if cx, cy := rooms[key].centre(); key != boss && reached.get(cx, cy) {
				g.rooms[boss].Role, g.rooms[key].Role = RoleBoss, RoleKey
				return
			}
		}
	}
}

// reachableWithout floods the walkable cells from the spawn with the
// closed cells blocked as well.
func (g *generator) reachableWithout(closed []cellRect) bitgrid {
	seen := newBitgrid(g.cols, g.rows)
	for _, c := range closed {
		seen.setRect(c) // marked seen: never entered
	}
	start := int32(g.spawnCell[1]*g.cols + g.spawnCell[0])
	seen.set(g.spawnCell[0], g.spawnCell[1])
	queue := []int32{start}
	for len(queue) > 0 {
		c := queue[0]
		queue = queue[1:]
		cx, cy := int(c)%g.cols, int(c)/g.cols
		for _, n := range [4][2]int{{cx - 1, cy}, {cx + 1, cy}, {cx, cy - 1}, {cx, cy + 1}} {
			if n[0] < 0 || n[1] < 0 || n[0] >= g.cols || n[1] >= g.rows || seen.get(n[0], n[1]) || g.blocked.get(n[0], n[1]) {
				continue
			}
			seen.set(n[0], n[1])
			queue = append(queue, int32(n[1]*g.cols+n[0]))
		}
	}
	for _, c := range closed {
		clearRect(&seen, c)
	}
	return seen
}

// clearRect unsets every cell of r.
func clearRect(b *bitgrid, r cellRect) {
	for cy := r.y0; cy <= r.y1; cy++ {
		for cx := r.x0; cx <= r.x1; cx++ {
			i := uint(cy*b.cols + cx)
			b.bits[i/64] &^= 1 << (i % 64)
		}
	}
}

// portalsIn reports whether every portal anchor's cell is reached.
func (g *generator) portalsIn(reached *bitgrid) bool {
	for _, p := range g.cfg.Portals {
		cx := min(int(p.X/CellSize), g.cols-1)
		cy := min(int(p.Y/CellSize), g.rows-1)
		if !reached.get(cx, cy) {
			return false
		}
	}
	return true
}

// RoomAt is the index of the room whose floor holds (x, y), or -1.
func (w *World) RoomAt(x, y float32) int {
	for i, r := range w.Rooms {
		if x >= float32(r.Rect.X) && y >= float32(r.Rect.Y) &&
			x < float32(r.Rect.X+r.Rect.W) && y < float32(r.Rect.Y+r.Rect.H) {
			return i
		}
	}
	return -1
}

// RoomWith is the index of the first room of role, or -1.
func (w *World) RoomWith(role string) int {
	return slices.IndexFunc(w.Rooms, func(r Room) bool { return r.Role == role })
}

// Centre is the middle of r, in whole world units.
func (r Rect) Centre() Point { return Point{X: r.X + r.W/2, Y: r.Y + r.H/2} }
