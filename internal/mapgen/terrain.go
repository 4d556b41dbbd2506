package mapgen

import (
	"cmp"
	"slices"
)

// scatterObstacles places the open biomes' rocks, trees and cacti.
//
// Two rules make every walkable cell reachable from every other without a
// path search: obstacles stay off the outer ring of cells, and no two
// obstacles touch, not even diagonally (spec.gap >= 1). The blocked cells
// then form separate rectangles in an open field, which cannot enclose
// anything. Obstacles also stay off the spawn and portal clear areas.
func (g *generator) scatterObstacles(r *rng) {
	reserved := newBitgrid(g.cols, g.rows)
	reserved.setRect(g.spawnClear)
	for _, a := range g.portalArea {
		reserved.setRect(a)
	}
	attempts := g.cols * g.rows * g.spec.obstacleAttempts / 1000
	for range attempts {
		s := pickWeighted(r, g.spec.shapes)
		c, ok := g.randomRectIn(r, g.interior(), s.w, s.h)
		if !ok || reserved.anyInRect(c) || g.blocked.anyInRect(c.grow(g.spec.gap, g.cols, g.rows)) {
			continue
		}
		g.blocked.setRect(c)
		g.addCollider(s.kind, c)
	}
}

// randomRectIn returns a w x h rectangle at a random position inside area,
// or false when it does not fit.
func (g *generator) randomRectIn(r *rng, area cellRect, w, h int) (cellRect, bool) {
	if area.x1-area.x0+1 < w || area.y1-area.y0+1 < h {
		return cellRect{}, false
	}
	x := r.between(area.x0, area.x1-w+1)
	y := r.between(area.y0, area.y1-h+1)
	return cellRect{x0: x, y0: y, x1: x + w - 1, y1: y + h - 1}, true
}

// Dungeon room sizes in cells, and how many room placements to try per
// interior cell: enough to fill most of the map with rooms.
const (
	roomMin           = 4
	roomMax           = 12
	cellsPerRoomTry   = 48
	minRoomAttempts   = 4
	dungeonWallKind   = "wall"
	corridorThickness = 2
)

// carveDungeon starts from solid rock and carves the spawn area, the portal
// clear areas and random rooms, then joins every room to the nearest room
// carved before it and every portal to the spawn. That spanning tree keeps
// every carved cell reachable from the spawn. What stays solid becomes wall
// colliders; the outer ring stays wall except where a clear area reaches it
// on a small map or near an edge portal.
func (g *generator) carveDungeon(r *rng) {
	carved := newBitgrid(g.cols, g.rows)
	inner := g.interior()
	carved.setRect(g.spawnClear)
	for _, a := range g.portalArea {
		carved.setRect(a)
	}
	rooms := g.carveRooms(r, &carved, g.spawnClear.clip(inner))
	for i := 1; i < len(rooms); i++ {
		ax, ay := rooms[i].centre()
		bx, by := rooms[nearestRoom(rooms[:i], rooms[i])].centre()
		carveCorridor(r, &carved, inner, ax, ay, bx, by)
	}
	for _, p := range g.cfg.Portals {
		px := min(max(int(p.X/CellSize), inner.x0), inner.x1)
		py := min(max(int(p.Y/CellSize), inner.y0), inner.y1)
		carveCorridor(r, &carved, inner, px, py, g.spawnCell[0], g.spawnCell[1])
	}
	for i := range g.blocked.bits {
		g.blocked.bits[i] = ^carved.bits[i]
	}
	g.clearPadding()
	for _, c := range meshRuns(&g.blocked) {
		g.addCollider(dungeonWallKind, c)
	}
	g.furnishDungeon(rooms)
}

// clearPadding zeroes the bits past the last cell, which the inversion in
// carveDungeon set, so the bitmap holds exactly cols*rows cells.
func (g *generator) clearPadding() {
	n := g.cols * g.rows
	if tail := n % 64; tail != 0 {
		g.blocked.bits[len(g.blocked.bits)-1] &= 1<<tail - 1
	}
}

// carveRooms places non-touching rooms (one wall cell apart at least) and
// returns them in placement order, first the spawn room.
func (g *generator) carveRooms(r *rng, carved *bitgrid, spawnRoom cellRect) []cellRect {
	inner := g.interior()
	attempts := max(minRoomAttempts, (inner.x1-inner.x0+1)*(inner.y1-inner.y0+1)/cellsPerRoomTry)
	rooms := []cellRect{spawnRoom}
	for range attempts {
		w := min(r.between(roomMin, roomMax), inner.x1-inner.x0+1)
		h := min(r.between(roomMin, roomMax), inner.y1-inner.y0+1)
		room, _ := g.randomRectIn(r, inner, w, h) // w and h fit by construction
		if carved.anyInRect(room.grow(1, g.cols, g.rows)) {
			continue
		}
		carved.setRect(room)
		rooms = append(rooms, room)
	}
	return rooms
}

// nearestRoom returns the index of the room whose centre is closest to
// room's in Manhattan distance, the lowest index on ties.
func nearestRoom(rooms []cellRect, room cellRect) int {
	x, y := room.centre()
	best, bestDist := 0, -1
	for i, o := range rooms {
		ox, oy := o.centre()
		d := abs(ox-x) + abs(oy-y)
		if bestDist < 0 || d < bestDist {
			best, bestDist = i, d
		}
	}
	return best
}

func abs(v int) int {
	if v < 0 {
		return -v
	}
	return v
}

// carveCorridor carves an L-shaped corridor, corridorThickness cells wide,
// from (ax, ay) to (bx, by), turning at a random corner. Both ends and the
// whole corridor stay inside inner, so corridors never open the outer wall.
func carveCorridor(r *rng, carved *bitgrid, inner cellRect, ax, ay, bx, by int) {
	cx, cy := bx, ay // horizontal leg first
	if r.intn(2) == 0 {
		cx, cy = ax, by // vertical leg first
	}
	carved.setRect(thicken(span(ax, ay, cx, cy), inner))
	carved.setRect(thicken(span(cx, cy, bx, by), inner))
}

// span is the straight, one cell wide run between two cells on a line.
func span(ax, ay, bx, by int) cellRect {
	return cellRect{x0: min(ax, bx), y0: min(ay, by), x1: max(ax, bx), y1: max(ay, by)}
}

// thicken widens a one-cell-wide run to corridorThickness cells, growing
// towards the interior's far side unless that would leave it.
func thicken(c cellRect, inner cellRect) cellRect {
	widen := func(lo, limit int) (int, int) {
		hi := lo + corridorThickness - 1
		if hi > limit {
			return limit - corridorThickness + 1, limit
		}
		return lo, hi
	}
	if c.y0 == c.y1 {
		c.y0, c.y1 = widen(c.y0, inner.y1)
	}
	if c.x0 == c.x1 {
		c.x0, c.x1 = widen(c.x0, inner.x1)
	}
	return c
}

// openRun is a run of set cells [x0, x1) that has continued with the same
// extent in every row since row y0.
type openRun struct{ x0, x1, y0 int }

// meshRuns covers the set cells of g with few non-overlapping rectangles:
// each row's runs merge with an identical run directly above them. The
// result is sorted by top edge, then left edge, so collider order (and so
// ids and the hash) depends only on the grid.
func meshRuns(g *bitgrid) []cellRect {
	var out []cellRect
	var open, next []openRun
	var runs [][2]int
	for y := 0; y <= g.rows; y++ {
		next = next[:0]
		i := 0
		if y < g.rows {
			runs = rowRuns(g, y, runs[:0])
			for _, run := range runs {
				for i < len(open) && open[i].x0 < run[0] {
					out = append(out, open[i].close(y))
					i++
				}
				if i < len(open) && open[i].x0 == run[0] && open[i].x1 == run[1] {
					next = append(next, open[i])
					i++
					continue
				}
				next = append(next, openRun{x0: run[0], x1: run[1], y0: y})
			}
		}
		for ; i < len(open); i++ {
			out = append(out, open[i].close(y))
		}
		open, next = next, open
	}
	sortCellRects(out)
	return out
}

// close ends a run above row y.
func (o openRun) close(y int) cellRect {
	return cellRect{x0: o.x0, y0: o.y0, x1: o.x1 - 1, y1: y - 1}
}

// rowRuns appends the runs [x0, x1) of set cells in row y, left to right,
// to runs.
func rowRuns(g *bitgrid, y int, runs [][2]int) [][2]int {
	for x := 0; x < g.cols; {
		if !g.get(x, y) {
			x++
			continue
		}
		start := x
		for x < g.cols && g.get(x, y) {
			x++
		}
		runs = append(runs, [2]int{start, x})
	}
	return runs
}

func sortCellRects(rs []cellRect) {
	slices.SortFunc(rs, func(a, b cellRect) int {
		if c := cmp.Compare(a.y0, b.y0); c != 0 {
			return c
		}
		return cmp.Compare(a.x0, b.x0)
	})
}
