package mapgen

import (
	"testing"
)

// doorCells lists the cells the world's doors cover.
func doorCells(w *World) map[[2]int]bool {
	cells := map[[2]int]bool{}
	for _, d := range w.Doors {
		forCells(d.Rect, func(cx, cy int) { cells[[2]int{cx, cy}] = true })
	}
	return cells
}

// forCells calls f for every cell r covers; r is cell-aligned.
func forCells(r Rect, f func(cx, cy int)) {
	for cy := int(r.Y / CellSize); cy < int((r.Y+r.H+CellSize-1)/CellSize); cy++ {
		for cx := int(r.X / CellSize); cx < int((r.X+r.W+CellSize-1)/CellSize); cx++ {
			f(cx, cy)
		}
	}
}

// checkDungeon checks the promises of Rooms and Doors: only dungeons have
// them; each door is a line of walkable cells just outside its room, and
// together a room's doors cover every gap in its wall, so closing them
// seals it; nothing spawns on a door; the boss room's doors are locked,
// and with them closed the key room and every portal stay reachable.
func checkDungeon(t *testing.T, w *World, blocked [][]bool) {
	t.Helper()
	if w.Config.Biome != "dungeon" {
		if len(w.Rooms)+len(w.Doors) != 0 {
			t.Fatalf("a %s map has %d rooms and %d doors", w.Config.Biome, len(w.Rooms), len(w.Doors))
		}
		return
	}
	doors := doorCells(w)
	for i, d := range w.Doors {
		checkDoor(t, w, blocked, i, d)
	}
	for i, r := range w.Rooms {
		checkSealed(t, blocked, doors, i, r)
	}
	for _, list := range [][]Point{w.NPCSpawns, w.LootSpawns, w.PlayerSpawns} {
		for _, p := range list {
			if doors[[2]int{int(p.X / CellSize), int(p.Y / CellSize)}] {
				t.Errorf("a spawn at %v lies on a door", p)
			}
		}
	}
	checkRoles(t, w, blocked)
	checkGuards(t, w)
}

// checkGuards: NPCs spawn on the rooms' floors while the rooms have cells
// free, so in a dungeon they guard rooms.
func checkGuards(t *testing.T, w *World) {
	t.Helper()
	floor := 0
	for _, r := range w.Rooms {
		floor += int(r.Rect.W/CellSize) * int(r.Rect.H/CellSize)
	}
	inRooms := 0
	for _, p := range w.NPCSpawns {
		if w.RoomAt(float32(p.X), float32(p.Y)) >= 0 {
			inRooms++
		}
	}
	if want := min(floor, len(w.NPCSpawns)); inRooms != want {
		t.Errorf("%d of %d NPC spawns are in rooms, want %d (the rooms have %d cells)", inRooms, len(w.NPCSpawns), want, floor)
	}
}

func checkDoor(t *testing.T, w *World, blocked [][]bool, i int, d Door) {
	t.Helper()
	if d.Room < 0 || d.Room >= len(w.Rooms) {
		t.Fatalf("door %d names room %d of %d", i, d.Room, len(w.Rooms))
	}
	if d.Rect.W != CellSize && d.Rect.H != CellSize {
		t.Errorf("door %d %+v is not one cell thick", i, d.Rect)
	}
	room := w.Rooms[d.Room]
	if d.Locked != (room.Role == RoleBoss) {
		t.Errorf("door %d locked %v, its room's role %q", i, d.Locked, room.Role)
	}
	r := room.Rect
	outside := d.Rect.Y+d.Rect.H == r.Y || d.Rect.Y == r.Y+r.H || d.Rect.X+d.Rect.W == r.X || d.Rect.X == r.X+r.W
	if !outside {
		t.Errorf("door %d %+v does not touch room %d %+v from outside", i, d.Rect, d.Room, r)
	}
	forCells(d.Rect, func(cx, cy int) {
		if blocked[cy][cx] {
			t.Errorf("door %d covers blocked cell (%d,%d)", i, cx, cy)
		}
	})
}

// checkSealed: every walkable cell edge to edge with the room's floor, not
// on it, is a door.
func checkSealed(t *testing.T, blocked [][]bool, doors map[[2]int]bool, i int, room Room) {
	t.Helper()
	r := room.Rect
	x0, y0 := int(r.X/CellSize), int(r.Y/CellSize)
	x1, y1 := int((r.X+r.W)/CellSize)-1, int((r.Y+r.H)/CellSize)-1
	ring := func(cx, cy int) {
		if !blocked[cy][cx] && !doors[[2]int{cx, cy}] {
			t.Errorf("room %d %+v: walkable cell (%d,%d) in its wall is no door", i, r, cx, cy)
		}
	}
	for cx := x0; cx <= x1; cx++ {
		ring(cx, y0-1)
		ring(cx, y1+1)
	}
	for cy := y0; cy <= y1; cy++ {
		ring(x0-1, cy)
		ring(x1+1, cy)
	}
}

// checkRoles: at most one boss and one key room, together; with the boss
// room's doors closed the key room and every portal stay reachable.
func checkRoles(t *testing.T, w *World, blocked [][]bool) {
	t.Helper()
	boss, key := w.RoomWith(RoleBoss), w.RoomWith(RoleKey)
	if (boss < 0) != (key < 0) {
		t.Fatalf("boss room %d, key room %d: one without the other", boss, key)
	}
	if boss < 0 {
		return
	}
	closed := map[[2]int]bool{}
	for _, d := range w.Doors {
		if d.Locked {
			forCells(d.Rect, func(cx, cy int) { closed[[2]int{cx, cy}] = true })
		}
	}
	seen := flood(w, blocked, closed)
	want := []Point{w.Rooms[key].Rect.Centre()}
	for _, p := range w.Portals {
		want = append(want, Point{X: p.X, Y: p.Y})
	}
	for _, p := range want {
		if !seen[[2]int{int(p.X / CellSize), int(p.Y / CellSize)}] {
			t.Errorf("%v is cut off by the boss room's locked doors", p)
		}
	}
}

// flood returns the cells reached from the player spawn around the
// blocked and the closed cells.
func flood(w *World, blocked [][]bool, closed map[[2]int]bool) map[[2]int]bool {
	cols, rows := w.Cells()
	start := [2]int{int(w.PlayerSpawn.X / CellSize), int(w.PlayerSpawn.Y / CellSize)}
	seen := map[[2]int]bool{start: true}
	queue := [][2]int{start}
	for len(queue) > 0 {
		c := queue[0]
		queue = queue[1:]
		for _, d := range [][2]int{{1, 0}, {-1, 0}, {0, 1}, {0, -1}} {
			n := [2]int{c[0] + d[0], c[1] + d[1]}
			if n[0] >= 0 && n[1] >= 0 && n[0] < cols && n[1] < rows && !blocked[n[1]][n[0]] && !closed[n] && !seen[n] {
				seen[n] = true
				queue = append(queue, n)
			}
		}
	}
	return seen
}

// TestSampleCryptHasABossAndAKey: the sample GameRoom's crypt is the
// playable dungeon, so its map must have both.
func TestSampleCryptHasABossAndAKey(t *testing.T) {
	w := mustGenerate(t, Config{Seed: 7, Width: 256, Height: 256, Biome: "dungeon", NPCDensity: 0.1,
		Portals: []Portal{{To: "town", X: 128, Y: 16}}})
	if w.RoomWith(RoleBoss) < 0 || w.RoomWith(RoleKey) < 0 {
		t.Fatalf("rooms %+v: no boss or key room", w.Rooms)
	}
	locked := 0
	for _, d := range w.Doors {
		if d.Locked {
			locked++
		}
	}
	if locked == 0 {
		t.Fatal("the boss room has no locked door")
	}
	t.Logf("%d rooms, %d doors, %d locked", len(w.Rooms), len(w.Doors), locked)
}

// Every room, portal and spawn of a dungeon is reached from the player
// spawn; a collider is not.
func TestReachCoversTheWalkableMap(t *testing.T) {
	w, err := Generate(Config{Seed: 7, Width: 256, Height: 256, Biome: "dungeon", Portals: []Portal{{To: "town", X: 128, Y: 16}}})
	if err != nil {
		t.Fatal(err)
	}
	reach := w.Reach()
	for _, r := range w.Rooms {
		if c := r.Rect.Centre(); !reach.Has(float32(c.X), float32(c.Y)) {
			t.Errorf("room %d's centre is not reached", r.ID)
		}
	}
	for _, p := range append(w.NPCSpawns, w.PlayerSpawns...) {
		if !reach.Has(float32(p.X), float32(p.Y)) {
			t.Errorf("spawn (%d,%d) is not reached", p.X, p.Y)
		}
	}
	cols, rows := w.Cells()
	walls := 0
	for cy := range rows {
		for cx := range cols {
			x, y := float32(cx*CellSize+1), float32(cy*CellSize+1)
			if w.Blocked(float64(x), float64(y)) {
				walls++
				if reach.Has(x, y) {
					t.Fatalf("the wall at (%v,%v) is reached", x, y)
				}
			}
		}
	}
	if walls == 0 || reach.Has(-1, 5) || reach.Has(5, 1e9) {
		t.Errorf("%d walls; off the map reached", walls)
	}
}
