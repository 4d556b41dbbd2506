package mapgen

import "slices"

// lootCellsPerDensity divides the loot count: a lootDensity of 1 puts loot
// on a quarter of the walkable cells, not on all of them.
const lootCellsPerDensity = 4

// placeSpawns picks distinct walkable cells for NPCs and loot. NPCs take
// cells outside the player spawn area first and only fall back to it when
// the density asks for more cells than there are elsewhere, so players do
// not arrive on top of an NPC unless the config leaves no choice.
func (g *generator) placeSpawns() {
	outside, inside := g.walkableCells(g.spawnClear)
	all := slices.Concat(outside, inside) // copied before the NPC pick shuffles them
	g.npcs = g.pickCells(newRNG(g.cfg.Seed, streamNPCs),
		spawnCount(g.cfg.NPCDensity, len(all), 1), outside, inside)
	g.loot = g.pickCells(newRNG(g.cfg.Seed, streamLoot),
		spawnCount(g.cfg.LootDensity, len(all), lootCellsPerDensity), all, nil)
}

// walkableCells lists walkable cells in row-major order as indices
// cy*cols+cx, split into those outside and inside the area.
func (g *generator) walkableCells(area cellRect) (outside, inside []int32) {
	for cy := range g.rows {
		for cx := range g.cols {
			if g.blocked.get(cx, cy) {
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

// pickCells returns the centres of count distinct cells, drawn without
// replacement from first and, once first is used up, from then. It
// shuffles the candidate slices in place. count never exceeds the number
// of candidates because densities are at most 1.
func (g *generator) pickCells(r *rng, count int, first, then []int32) []Point {
	if count == 0 {
		return nil
	}
	pts := make([]Point, 0, count)
	for _, cands := range [][]int32{first, then} {
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
