package aoi

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"sync"
	"testing"
)

func TestCellOf(t *testing.T) {
	nan, inf := float32(math.NaN()), float32(math.Inf(1))
	square := NewGrid(512, 512, 64)  // 8 x 8 cells
	partial := NewGrid(500, 300, 64) // 8 x 5 cells, the last ones partial
	tests := []struct {
		name string
		g    *Grid
		x, y float32
		want Cell
	}{
		{"origin", square, 0, 0, Cell{0, 0}},
		{"interior", square, 100, 300, Cell{1, 4}},
		{"just before a border", square, 63.99, 127.99, Cell{0, 1}},
		{"on a border", square, 64, 128, Cell{1, 2}},
		{"last cell", square, 511.99, 511.99, Cell{7, 7}},
		{"on the far edge", square, 512, 512, Cell{7, 7}},
		{"just outside the near edge", square, -0.01, -0.01, Cell{0, 0}},
		{"far outside", square, -1e9, 1e9, Cell{0, 7}},
		{"infinite", square, inf, -inf, Cell{7, 0}},
		{"NaN", square, nan, nan, Cell{0, 0}},
		{"partial last cell", partial, 499.9, 299.9, Cell{7, 4}},
		{"beyond a partial cell", partial, 510, 319, Cell{7, 4}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.g.CellOf(tt.x, tt.y); got != tt.want {
				t.Errorf("CellOf(%v, %v) = %v, want %v", tt.x, tt.y, got, tt.want)
			}
		})
	}
}

func TestNewGridRejectsBadConfig(t *testing.T) {
	nan, inf := float32(math.NaN()), float32(math.Inf(1))
	tests := []struct {
		name                  string
		width, height, cellSz float32
	}{
		{"zero cell", 512, 512, 0},
		{"negative cell", 512, 512, -64},
		{"NaN cell", 512, 512, nan},
		{"infinite cell", 512, 512, inf},
		{"negative width", -1, 512, 64},
		{"NaN height", 512, nan, 64},
		{"infinite width", inf, 512, 64},
		{"too many cells", 1e6, 1e6, 1},
		{"too many cells on one axis", 1e30, 1, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			defer func() {
				if recover() == nil {
					t.Errorf("NewGrid(%v, %v, %v) did not panic", tt.width, tt.height, tt.cellSz)
				}
			}()
			NewGrid(tt.width, tt.height, tt.cellSz)
		})
	}
}

func TestNewGridSmallMaps(t *testing.T) {
	g := NewGrid(0, 10, 64)
	if got := g.CellOf(100, 100); got != (Cell{0, 0}) {
		t.Errorf("a map smaller than a cell has cell %v, want the single cell {0 0}", got)
	}
	if g.CellSize() != 64 {
		t.Errorf("CellSize() = %v, want 64", g.CellSize())
	}
}

// world is a fixture: n entities at seeded random positions spread over
// [-spill, size+spill) on both axes, so some are outside the map.
type world struct {
	size, cellSize, spill float32
	xs, ys                []float32
}

func newWorld(seed uint64, n int, size, cellSize, spill float32) world {
	r := rand.New(rand.NewPCG(seed, 0))
	w := world{size: size, cellSize: cellSize, spill: spill, xs: make([]float32, n), ys: make([]float32, n)}
	for i := range n {
		w.xs[i] = r.Float32()*(size+2*spill) - spill
		w.ys[i] = r.Float32()*(size+2*spill) - spill
	}
	return w
}

func (w world) grid() *Grid {
	g := NewGrid(w.size, w.size, w.cellSize)
	g.Build(w.xs, w.ys)
	return g
}

// bruteNeighbourhood is the reference: every entity whose clamped cell is
// within one cell of the clamped c, by a scan over all entities.
func (w world) bruteNeighbourhood(c Cell) []int32 {
	n := int32(math.Ceil(float64(w.size / w.cellSize)))
	clampCell := func(v int32) int32 { return min(max(v, 0), n-1) }
	cellOf := func(v float32) int32 { return clampCell(int32(math.Floor(float64(v / w.cellSize)))) }
	cx, cy := clampCell(c.X), clampCell(c.Y)
	var want []int32
	for i := range w.xs {
		ex, ey := cellOf(w.xs[i]), cellOf(w.ys[i])
		if ex >= cx-1 && ex <= cx+1 && ey >= cy-1 && ey <= cy+1 {
			want = append(want, int32(i))
		}
	}
	return want
}

func TestAppendNeighbourhoodNamedCells(t *testing.T) {
	w := newWorld(1, 2200, 512, 64, 32)
	g := w.grid()
	tests := []struct {
		name string
		c    Cell
	}{
		{"top-left corner", Cell{0, 0}},
		{"bottom-right corner", Cell{7, 7}},
		{"top edge", Cell{3, 0}},
		{"left edge", Cell{0, 5}},
		{"right edge", Cell{7, 2}},
		{"interior", Cell{4, 4}},
		{"just outside, clamped", Cell{-1, 8}},
		{"far outside, clamped", Cell{-50, 99}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			checkNeighbourhood(t, w, g, tt.c)
		})
	}
}

// TestAppendNeighbourhoodEveryCell covers the dense bitmap merge within one
// window and across windows, the sparse comparison merge, and empty cells.
func TestAppendNeighbourhoodEveryCell(t *testing.T) {
	tests := []struct {
		name string
		w    world
	}{
		{"game map", newWorld(2, 2200, 512, 64, 32)},
		{"more entities than one bitmap window", newWorld(3, 30000, 512, 64, 0)},
		{"sparse over many cells", newWorld(4, 3000, 5120, 64, 0)},
		{"mostly empty cells", newWorld(5, 40, 1024, 64, 0)},
		{"partial last cells", newWorld(6, 500, 500, 64, 10)},
		{"no entities", newWorld(7, 0, 512, 64, 0)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := tt.w.grid()
			for y := int32(-1); y <= g.rows; y++ {
				for x := int32(-1); x <= g.cols; x++ {
					checkNeighbourhood(t, tt.w, g, Cell{x, y})
				}
			}
		})
	}
}

func checkNeighbourhood(t *testing.T, w world, g *Grid, c Cell) {
	t.Helper()
	want := w.bruteNeighbourhood(c)
	got := g.AppendNeighbourhood(nil, c)
	if !slices.Equal(got, want) {
		t.Fatalf("cell %v: got %d entities, want %d (sorted: %v)", c, len(got), len(want), slices.IsSorted(got))
	}
}

func TestAppendNeighbourhoodKeepsDst(t *testing.T) {
	w := newWorld(8, 300, 512, 64, 0)
	g := w.grid()
	prefix := []int32{-7, 99999}
	got := g.AppendNeighbourhood(slices.Clone(prefix), Cell{2, 2})
	want := append(slices.Clone(prefix), w.bruteNeighbourhood(Cell{2, 2})...)
	if !slices.Equal(got, want) {
		t.Errorf("appending after %v: got %v, want %v", prefix, got, want)
	}
}

func TestBuildReplacesContents(t *testing.T) {
	g := NewGrid(512, 512, 64)
	if got := g.AppendNeighbourhood(nil, Cell{1, 1}); len(got) != 0 {
		t.Fatalf("a grid never built has entities %v", got)
	}
	for i, w := range []world{
		newWorld(9, 2200, 512, 64, 0),
		newWorld(10, 100, 512, 64, 0),  // shrinks: stale entries must not show
		newWorld(11, 5000, 512, 64, 0), // grows past the old capacity
		newWorld(12, 0, 512, 64, 0),
	} {
		g.Build(w.xs, w.ys)
		for _, c := range []Cell{{0, 0}, {4, 3}, {7, 7}} {
			t.Run(fmt.Sprint("build ", i, " cell ", c), func(t *testing.T) {
				checkNeighbourhood(t, w, g, c)
			})
		}
	}
}

func TestBuildRejectsMismatchedSlices(t *testing.T) {
	defer func() {
		if recover() == nil {
			t.Error("Build with 2 xs and 1 y did not panic")
		}
	}()
	NewGrid(512, 512, 64).Build([]float32{1, 2}, []float32{1})
}

func TestNoAllocationsWhenWarm(t *testing.T) {
	w := newWorld(13, 2200, 512, 64, 16)
	g := w.grid()
	if n := testing.AllocsPerRun(10, func() { g.Build(w.xs, w.ys) }); n != 0 {
		t.Errorf("Build allocates %v times once warm, want 0", n)
	}
	dst := make([]int32, 0, len(w.xs))
	for _, c := range []Cell{{0, 0}, {4, 4}} {
		if n := testing.AllocsPerRun(10, func() { dst = g.AppendNeighbourhood(dst[:0], c) }); n != 0 {
			t.Errorf("AppendNeighbourhood(%v) allocates %v times with capacity, want 0", c, n)
		}
	}
	sparse := newWorld(14, 3000, 5120, 64, 0)
	sg := sparse.grid()
	if n := testing.AllocsPerRun(10, func() { dst = sg.AppendNeighbourhood(dst[:0], Cell{40, 40}) }); n != 0 {
		t.Errorf("sparse AppendNeighbourhood allocates %v times with capacity, want 0", n)
	}
}

// TestConcurrentReaders is meant for -race: after Build, readers share the
// grid and nothing else.
func TestConcurrentReaders(t *testing.T) {
	w := newWorld(15, 2200, 512, 64, 32)
	g := w.grid()
	want := make(map[Cell][]int32)
	for y := range g.rows {
		for x := range g.cols {
			want[Cell{x, y}] = w.bruteNeighbourhood(Cell{x, y})
		}
	}
	var wg sync.WaitGroup
	for reader := range 16 {
		wg.Go(func() {
			var dst []int32
			for round := range 20 {
				for c, cells := range want {
					dst = g.AppendNeighbourhood(dst[:0], c)
					if !slices.Equal(dst, cells) {
						t.Errorf("reader %d round %d cell %v: wrong neighbourhood", reader, round, c)
						return
					}
				}
			}
		})
	}
	wg.Wait()
}
