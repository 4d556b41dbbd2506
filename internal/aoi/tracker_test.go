package aoi

import (
	"math"
	"testing"
)

// step is one Update and what it must return.
type step struct {
	x, y    float32
	want    Cell
	changed bool
}

func TestTrackerUpdate(t *testing.T) {
	nan := float32(math.NaN())
	tests := []struct {
		name           string
		cellSize, marg float32
		steps          []step
	}{
		{"first update sets the cell", 64, 8, []step{
			{10, 10, Cell{0, 0}, true},
			{20, 30, Cell{0, 0}, false},
		}},
		{"first update outside the map", 64, 8, []step{
			{-1, -65, Cell{-1, -2}, true},
		}},
		{"first update on a border takes the cell it starts", 64, 8, []step{
			{64, 128, Cell{1, 2}, true},
		}},
		{"within the margin beyond the right border", 64, 8, []step{
			{60, 10, Cell{0, 0}, true},
			{64, 10, Cell{0, 0}, false},
			{71.9, 10, Cell{0, 0}, false},
			{72, 10, Cell{0, 0}, false}, // exactly the margin is not more than it
			{72.01, 10, Cell{1, 0}, true},
		}},
		{"back across the left border needs the margin too", 64, 8, []step{
			{100, 10, Cell{1, 0}, true},
			{60, 10, Cell{1, 0}, false},
			{56, 10, Cell{1, 0}, false},
			{55.9, 10, Cell{0, 0}, true},
		}},
		{"standing on a border does not flip", 64, 8, []step{
			{63, 10, Cell{0, 0}, true},
			{65, 10, Cell{0, 0}, false},
			{63, 10, Cell{0, 0}, false},
			{65, 10, Cell{0, 0}, false},
		}},
		{"moving several cells at once", 64, 8, []step{
			{10, 10, Cell{0, 0}, true},
			{300, 200, Cell{4, 3}, true},
			{-130, 200, Cell{-3, 3}, true},
		}},
		{"each axis has its own hysteresis", 64, 8, []step{
			{10, 10, Cell{0, 0}, true},
			{68, 80, Cell{0, 1}, true}, // y beyond the margin, x within it
			{68, 60, Cell{0, 1}, false},
		}},
		{"no margin changes just past the border", 64, 0, []step{
			{10, 10, Cell{0, 0}, true},
			{64, 10, Cell{0, 0}, false},
			{64.01, 10, Cell{1, 0}, true},
			{63.99, 10, Cell{0, 0}, true},
		}},
		{"a margin wider than a cell", 64, 100, []step{
			{10, 10, Cell{0, 0}, true},
			{164, 10, Cell{0, 0}, false},
			{165, 10, Cell{2, 0}, true},
		}},
		{"NaN neither moves nor breaks the tracker", 64, 8, []step{
			{nan, nan, Cell{0, 0}, true},
			{nan, 10, Cell{0, 0}, false},
			{200, 10, Cell{3, 0}, true},
			{nan, 10, Cell{3, 0}, false},
		}},
		{"huge positions saturate", 1, 0, []step{
			{1e30, -1e30, Cell{math.MaxInt32, math.MinInt32}, true},
			{0.5, 0.5, Cell{0, 0}, true},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tr := NewTracker(tt.cellSize, tt.marg)
			for i, s := range tt.steps {
				got, changed := tr.Update(s.x, s.y)
				if got != s.want || changed != s.changed {
					t.Fatalf("step %d Update(%v, %v) = %v, %v; want %v, %v", i, s.x, s.y, got, changed, s.want, s.changed)
				}
				if tr.Cell() != got {
					t.Fatalf("step %d: Cell() = %v after Update returned %v", i, tr.Cell(), got)
				}
			}
		})
	}
}

// TestTrackerAgreesWithGridWithoutMargin checks that with no margin a
// Tracker placed fresh lands in the cell Grid.CellOf names, inside the map.
func TestTrackerAgreesWithGridWithoutMargin(t *testing.T) {
	w := newWorld(16, 2000, 500, 10, 0) // a cell size whose inverse is inexact
	g := NewGrid(w.size, w.size, w.cellSize)
	for i := range w.xs {
		tr := NewTracker(w.cellSize, 0)
		got, _ := tr.Update(w.xs[i], w.ys[i])
		if want := g.CellOf(w.xs[i], w.ys[i]); got != want {
			t.Fatalf("(%v, %v): tracker cell %v, grid cell %v", w.xs[i], w.ys[i], got, want)
		}
	}
}

func TestNewTrackerRejectsBadConfig(t *testing.T) {
	nan, inf := float32(math.NaN()), float32(math.Inf(1))
	tests := []struct {
		name             string
		cellSize, margin float32
	}{
		{"zero cell", 0, 8},
		{"NaN cell", nan, 8},
		{"infinite cell", inf, 8},
		{"negative margin", 64, -1},
		{"NaN margin", 64, nan},
		{"infinite margin", 64, inf},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			defer func() {
				if recover() == nil {
					t.Errorf("NewTracker(%v, %v) did not panic", tt.cellSize, tt.margin)
				}
			}()
			NewTracker(tt.cellSize, tt.margin)
		})
	}
}
