package mapgen

// shape is an obstacle kind and its footprint in cells.
type shape struct {
	kind   string
	w, h   int
	weight int
}

func (s shape) weightOf() int { return s.weight }

// decoration is a prop kind.
type decoration struct {
	kind   string
	weight int
}

func (d decoration) weightOf() int { return d.weight }

// biomeSpec is the content table of a biome. Rates are per mille of the
// map's cells, in integers, so no float rounding can change a layout.
type biomeSpec struct {
	// stream is the biome's terrain stream, distinct per biome so two biomes
	// with the same seed do not put their obstacles in the same places.
	stream uint64
	// dungeon selects room-and-corridor walls instead of scattered obstacles.
	dungeon bool
	// obstacleAttempts is how many obstacle placements are tried per 1000
	// cells; attempts that would crowd another obstacle are dropped.
	obstacleAttempts int
	// gap is the minimum number of free cells between two obstacles. Any gap
	// keeps the open biomes connected; wider gaps keep them easy to cross.
	gap    int
	shapes []shape
	// propAttempts is how many props are tried per 1000 cells; those landing
	// on a blocked cell are dropped.
	propAttempts int
	props        []decoration
}

// biomeSpecFor returns the table of a validated, normalized biome name.
func biomeSpecFor(name string) *biomeSpec {
	switch name {
	case biomeForest:
		return &forest
	case biomeDesert:
		return &desert
	case biomeDungeon:
		return &dungeon
	default:
		return &meadow
	}
}

// meadow: open grass with sparse rocks and the odd tree.
var meadow = biomeSpec{
	stream:           0x10,
	obstacleAttempts: 30,
	gap:              2,
	shapes: []shape{
		{kind: "rock", w: 1, h: 1, weight: 6},
		{kind: "rock", w: 2, h: 1, weight: 2},
		{kind: "rock", w: 2, h: 2, weight: 1},
		{kind: "tree", w: 1, h: 1, weight: 1},
	},
	propAttempts: 60,
	props: []decoration{
		{kind: "flower", weight: 3},
		{kind: "grass", weight: 4},
		{kind: "pebble", weight: 1},
	},
}

// forest: many trees, one free cell apart at the densest.
var forest = biomeSpec{
	stream:           0x11,
	obstacleAttempts: 450,
	gap:              1,
	shapes: []shape{
		{kind: "tree", w: 1, h: 1, weight: 8},
		{kind: "tree", w: 2, h: 2, weight: 2},
		{kind: "rock", w: 1, h: 1, weight: 1},
	},
	propAttempts: 80,
	props: []decoration{
		{kind: "fern", weight: 3},
		{kind: "mushroom", weight: 2},
		{kind: "leaves", weight: 3},
	},
}

// desert: cacti and rock outcrops.
var desert = biomeSpec{
	stream:           0x12,
	obstacleAttempts: 70,
	gap:              2,
	shapes: []shape{
		{kind: "cactus", w: 1, h: 1, weight: 5},
		{kind: "rock", w: 1, h: 1, weight: 2},
		{kind: "rock", w: 2, h: 2, weight: 1},
		{kind: "rock", w: 3, h: 2, weight: 1},
	},
	propAttempts: 30,
	props: []decoration{
		{kind: "bones", weight: 1},
		{kind: "tumbleweed", weight: 2},
		{kind: "dry-grass", weight: 3},
	},
}

// dungeon: rooms joined by corridors, everything else wall.
var dungeon = biomeSpec{
	stream:       0x13,
	dungeon:      true,
	propAttempts: 30,
	props: []decoration{
		{kind: "torch", weight: 2},
		{kind: "bones", weight: 1},
		{kind: "rubble", weight: 2},
		{kind: "cobweb", weight: 1},
	},
}
