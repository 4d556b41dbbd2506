package aoi

import (
	"fmt"
	"math"
)

// Tracker is one observer's current cell with hysteresis: the observer only
// changes cell after moving more than Margin beyond the border of its
// current cell, so a player standing on a border does not flip its view
// every tick.
//
// Each axis has its own hysteresis: walking along a border while crossing
// the perpendicular one changes only the crossed coordinate. Cells are not
// clamped, since a Tracker does not know the map; Grid.AppendNeighbourhood
// clamps them. A Tracker belongs to one goroutine. The zero Tracker is not
// usable; call NewTracker.
type Tracker struct {
	cellSize float32
	// marginCells is the margin in cells, so the border tests compare the
	// same cell-space quotient that picks the new cell.
	marginCells float64
	cell        Cell
	placed      bool
}

// NewTracker returns a Tracker for cells of side cellSize that changes cell
// only after its observer moves more than margin (world units) beyond the
// current cell. It panics if cellSize is not positive and finite or margin
// is negative or not finite, both configuration bugs.
func NewTracker(cellSize, margin float32) Tracker {
	if !(cellSize > 0) || math.IsInf(float64(cellSize), 1) {
		panic(fmt.Sprintf("aoi: cell size %v is not a positive finite number", cellSize))
	}
	if !(margin >= 0) || math.IsInf(float64(margin), 1) {
		panic(fmt.Sprintf("aoi: margin %v is not a non-negative finite number", margin))
	}
	return Tracker{cellSize: cellSize, marginCells: float64(margin) / float64(cellSize)}
}

// Update moves the observer to (x, y) and returns its cell and whether it
// changed. The first call always sets the cell (changed = true).
func (t *Tracker) Update(x, y float32) (Cell, bool) {
	if !t.placed {
		t.placed = true
		t.cell = Cell{X: floorCell(x / t.cellSize), Y: floorCell(y / t.cellSize)}
		return t.cell, true
	}
	next := Cell{X: t.axis(t.cell.X, x), Y: t.axis(t.cell.Y, y)}
	changed := next != t.cell
	t.cell = next
	return next, changed
}

// Cell returns the current cell, the zero Cell before the first Update.
func (t *Tracker) Cell() Cell { return t.cell }

// axis returns the observer's cell along one axis: cur while v is within
// the margin around cell cur, otherwise the cell v is in, however far away.
// It divides in float32 like Grid.CellOf, so with no margin both agree on
// which side of a border a position is.
func (t *Tracker) axis(cur int32, v float32) int32 {
	q := float64(v / t.cellSize)
	lo, hi := float64(cur)-t.marginCells, float64(cur)+1+t.marginCells
	if q < lo || q > hi {
		return floorCell(q)
	}
	return cur // also for NaN: a bad position moves nobody
}

// floorCell returns the cell containing the cell-space coordinate q,
// saturated to the int32 range, and 0 for NaN.
func floorCell[F float32 | float64](q F) int32 {
	f := math.Floor(float64(q))
	switch {
	case math.IsNaN(f):
		return 0
	case f <= math.MinInt32:
		return math.MinInt32
	case f >= math.MaxInt32:
		return math.MaxInt32
	}
	return int32(f)
}
