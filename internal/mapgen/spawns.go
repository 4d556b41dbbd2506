package mapgen

import "slices"

// lootCellsPerDensity divides the loot count: a lootDensity of 1 puts loot
// on a quarter of the walkable cells, not on all of them.
const lootCellsPerDensity = 4

// placeSpawns picks distinct walkable cells for NPCs and loot. NPCs take
// cells outside the player spawn area first and only fall back to it when
// the density asks for more cells than there are elsewhere, so players do
// not arrive on top of an NPC unless the config leaves no choice. In a
// dungeon they take the rooms' floors first, so they guard the rooms, and
// spill into the corridors only when the rooms are full.
func (g *generator) placeSpawns() {
	outside, inside := g.walkableCells(g.spawnClear)
	all := slices.Concat(outside, inside) // copied before the NPC pick shuffles them
	rooms, corridors := g.splitByRooms(outside)
	g.npcs = g.pickCells(newRNG(g.cfg.Seed, streamNPCs),
		spawnCount(g.cfg.NPCDensity, len(all), 1), rooms, corridors, inside)
	g.loot = g.pickCells(newRNG(g.cfg.Seed, streamLoot),
		spawnCount(g.cfg.LootDensity, len(all), lootCellsPerDensity), all, nil)
}

// isDoor reports whether a cell is one of a dungeon's doors.
func (g *generator) isDoor(cx, cy int) bool {
	return g.doorCells.bits != nil && g.doorCells.get(cx, cy)
}

// walkableCells lists walkable cells but doors in row-major order as indices
// cy*cols+cx, split into those outside and inside the area.
func (g *generator) walkableCells(area cellRect) (outside, inside []int32) {
	for cy := range g.rows {
		for cx := range g.cols {
			if g.blocked.get(cx, cy) || g.isDoor(cx, cy) {
				continue
			}
			i := int32(cy*g.cols + cx)
			if area.contains(cx, cy) {
				inside = append(inside, i)
			} else {
				outside = append(outside, i)
			}
		}
	}
	return outside, inside
}

// splitByRooms splits cells into those on a room's floor and the others;
// without rooms, all are others.
func (g *generator) splitByRooms(cells []int32) (inRooms, others []int32) {
	if len(g.rooms) == 0 {
		return nil, cells
	}
	floor := newBitgrid(g.cols, g.rows)
	for _, r := range g.roomCells {
		floor.setRect(r)
	}
	for _, c := range cells {
		if floor.get(int(c)%g.cols, int(c)/g.cols) {
			inRooms = append(inRooms, c)
		} else {
			others = append(others, c)
		}
	}
	return inRooms, others
}

// pickCells returns the centres of count distinct cells, drawn without
// replacement from the first candidate list and, once it is used up, from
// the next. It shuffles the candidate slices in place. count never exceeds
// the number of candidates because densities are at most 1.
func (g *generator) pickCells(r *rng, count int, lists ...[]int32) []Point {
	if count == 0 {
		return nil
	}
	pts := make([]Point, 0, count)
	for _, cands := range lists {
		n := min(count-len(pts), len(cands))
		partialShuffle(r, cands, n)
		for _, c := range cands[:n] {
			x, y := g.cellCentre(int(c)%g.cols, int(c)/g.cols)
			pts = append(pts, Point{X: x, Y: y})
		}
	}
	return pts
}

// partialShuffle moves a uniform random n-subset of s, in random order,
// to its front (the first n steps of a Fisher-Yates shuffle).
func partialShuffle(r *rng, s []int32, n int) {
	for i := range n {
		j := i + r.intn(len(s)-i)
		s[i], s[j] = s[j], s[i]
	}
}

// spawnCandidates bounds the cells the extra player spawn points are
// chosen from, so a 4096x4096 map costs no more than a small one.
const spawnCandidates = 1024

// placePlayerSpawns picks Config.SpawnPoints-1 more player spawn points
// by farthest-point sampling: from a seeded sample of the walkable cells,
// each next point is the candidate farthest from every point chosen so
// far (the first being PlayerSpawn), ties to the earlier candidate.
func (g *generator) placePlayerSpawns() {
	extra := int(g.cfg.SpawnPoints) - 1
	if extra <= 0 {
		return
	}
	outside, inside := g.walkableCells(cellRect{}) // either side will do: all of them
	cands := slices.Concat(outside, inside)
	n := min(spawnCandidates, len(cands))
	partialShuffle(newRNG(g.cfg.Seed, streamSpawns), cands, n)
	pts := make([]Point, n)
	for i, c := range cands[:n] {
		x, y := g.cellCentre(int(c)%g.cols, int(c)/g.cols)
		pts[i] = Point{X: x, Y: y}
	}
	sx, sy := g.cellCentre(g.spawnCell[0], g.spawnCell[1])
	nearest := make([]int64, n) // squared distance to the nearest chosen point
	for i, p := range pts {
		nearest[i] = dist2(p, Point{X: sx, Y: sy})
	}
	for range min(extra, n) {
		best := 0
		for i := range pts {
			if nearest[i] > nearest[best] {
				best = i
			}
		}
		if nearest[best] == 0 {
			return // every candidate is taken
		}
		chosen := pts[best]
		g.spawns = append(g.spawns, chosen)
		for i, p := range pts {
			nearest[i] = min(nearest[i], dist2(p, chosen))
		}
	}
}

func dist2(a, b Point) int64 {
	dx, dy := int64(a.X-b.X), int64(a.Y-b.Y)
	return dx*dx + dy*dy
}
