// Package aoi is the spatial grid behind interest management: each player is
// sent only the entities in the 3x3 grid cells around its own cell.
//
// The world rebuilds one Grid per snapshot tick and then many goroutines read
// it (for example one goroutine per batch of players); a Tracker per player
// keeps its cell stable at cell borders. Nothing here allocates on the
// steady-state path.
package aoi

import (
	"fmt"
	"math"
)

// maxCells bounds the number of cells in a Grid. Cell ids and bucket offsets
// are int32, and 16 Mi cells (64 MiB of offsets) is already far beyond any
// map a single pod can simulate, so a larger request is a caller's mistake.
const maxCells = 1 << 24

// Cell is a grid coordinate: cell (X, Y) covers [X*cellSize, (X+1)*cellSize)
// on the x axis and likewise on the y axis.
type Cell struct{ X, Y int32 }

// Grid buckets entity indexes by cell. It is rebuilt once per snapshot tick
// from the world's entity list (positions change every tick, so rebuilding
// with a counting sort is cheaper than incremental updates) and then only
// read, by many goroutines at once (it must be safe for concurrent readers
// after Build returns).
//
// Build must not run while readers are active, and readers must be started
// (or signalled through a channel or WaitGroup) after Build returns. A server
// that wants to overlap building with reading keeps two Grids and swaps them.
// The zero Grid is not usable; call NewGrid.
type Grid struct {
	cellSize   float32
	cols, rows int32

	// start holds cols*rows+2 offsets: the entities of cell id k are
	// items[start[k]:start[k+1]]. The extra trailing slot lets Build place
	// entities without a second cursor array (see count).
	start []int32
	// items holds the entity indexes grouped by cell id, ascending within
	// each cell because Build places them in index order.
	items []int32
	// cellIDs is Build's scratch: the cell id of each entity, computed once
	// in the counting pass and reused in the placing pass.
	cellIDs []int32
}

// NewGrid returns an empty grid covering [0, width) x [0, height) with square
// cells of side cellSize. A map whose size is not a multiple of cellSize gets
// a partial last row and column. It panics if cellSize is not positive, a
// size is negative or not finite, or the grid would exceed 16 Mi cells: all
// three are configuration bugs, not runtime conditions.
func NewGrid(width, height, cellSize float32) *Grid {
	if !(cellSize > 0) || math.IsInf(float64(cellSize), 1) {
		panic(fmt.Sprintf("aoi: cell size %v is not a positive finite number", cellSize))
	}
	cols, rows := cellsAlong(width, cellSize), cellsAlong(height, cellSize)
	if cols*rows > maxCells {
		panic(fmt.Sprintf("aoi: %v x %v map with cell size %v needs more than %d cells", width, height, cellSize, maxCells))
	}
	return &Grid{
		cellSize: cellSize,
		cols:     int32(cols),
		rows:     int32(rows),
		start:    make([]int32, cols*rows+2),
	}
}

// cellsAlong returns how many cells of side cellSize cover [0, size), at
// least one so that every clamped position has a cell.
func cellsAlong(size, cellSize float32) int64 {
	if !(size >= 0) || math.IsInf(float64(size), 1) {
		panic(fmt.Sprintf("aoi: map size %v is not a non-negative finite number", size))
	}
	n := math.Ceil(float64(size) / float64(cellSize))
	if n > maxCells {
		n = maxCells + 1 // let the caller's total check report it
	}
	return max(1, int64(n))
}

// CellSize returns the side of a cell in world units.
func (g *Grid) CellSize() float32 { return g.cellSize }

// CellOf returns the cell containing (x, y), clamped to the grid: positions
// outside the map (and NaN, which is treated as 0) belong to the nearest
// border cell, the same cell Build puts an entity at that position in.
func (g *Grid) CellOf(x, y float32) Cell {
	return Cell{X: axisCell(x, g.cellSize, g.cols), Y: axisCell(y, g.cellSize, g.rows)}
}

// axisCell returns the cell index of v along an axis of n cells, clamped to
// [0, n). It divides rather than multiplying by a precomputed inverse so
// that a position exactly on a border lands in the same cell as Tracker
// puts it, whatever the cell size.
func axisCell(v, cellSize float32, n int32) int32 {
	f := v / cellSize
	if !(f >= 0) { // also catches NaN
		return 0
	}
	if f >= float32(n) {
		return n - 1
	}
	return int32(f)
}

// cellID is the row-major id of a clamped cell.
func (g *Grid) cellID(c Cell) int32 { return c.Y*g.cols + c.X }

// Build replaces the contents: entity i is at (xs[i], ys[i]). Reuses its
// internal slices: no allocation once warmed up.
//
// It is a counting sort by cell id. Entities are placed in ascending index
// order, so each cell's bucket is ascending, which is what lets
// AppendNeighbourhood merge instead of sort. It panics if xs and ys differ
// in length.
func (g *Grid) Build(xs, ys []float32) {
	if len(xs) != len(ys) {
		panic(fmt.Sprintf("aoi: Build with %d x positions and %d y positions", len(xs), len(ys)))
	}
	if len(xs) > math.MaxInt32 {
		panic("aoi: Build with more entities than an int32 index can name")
	}
	g.items = resize(g.items, len(xs))
	g.cellIDs = resize(g.cellIDs, len(xs))
	g.count(xs, ys)
	g.place()
}

// count fills cellIDs and leaves start[k+1] as the first offset of cell k.
// Counting cell k into start[k+2] and taking running sums shifts every
// offset up one slot, so place can use start[k+1] as cell k's write cursor;
// once it is done, start[k+1] is the end of cell k, which is exactly the
// layout the readers want, with no second cursor array.
func (g *Grid) count(xs, ys []float32) {
	start := g.start
	clear(start)
	ys = ys[:len(xs)] // lets the compiler drop the bounds check on ys[i]
	ids := g.cellIDs[:len(xs)]
	for i, x := range xs {
		id := g.cellID(g.CellOf(x, ys[i]))
		ids[i] = id
		start[id+2]++
	}
	for k := 1; k < len(start); k++ {
		start[k] += start[k-1]
	}
}

// place writes each entity index into its cell's bucket, in ascending index
// order, advancing the cursors that count prepared.
func (g *Grid) place() {
	items, cursor := g.items, g.start[1:]
	for i, id := range g.cellIDs {
		items[cursor[id]] = int32(i)
		cursor[id]++
	}
}

// resize returns s with length n, reusing its backing array when it is big
// enough. The contents are left as they were: callers overwrite them.
func resize(s []int32, n int) []int32 {
	if cap(s) < n {
		return make([]int32, n)
	}
	return s[:n]
}

// AppendNeighbourhood appends to dst the indexes (into the slices given to
// Build) of every entity in the 3x3 cells around c, in ascending index
// order, and returns dst. No allocation when dst has capacity.
//
// c is clamped to the grid like a position in CellOf, so an observer outside
// the map sees the border cells nearest to it; neighbour cells beyond the
// border are simply absent. Safe for concurrent use after Build returns.
func (g *Grid) AppendNeighbourhood(dst []int32, c Cell) []int32 {
	var rs runs
	total := g.neighbourRuns(&rs, g.clamp(c))
	return rs.merge(dst, total)
}

// clamp moves c to the nearest cell of the grid.
func (g *Grid) clamp(c Cell) Cell {
	return Cell{X: min(max(c.X, 0), g.cols-1), Y: min(max(c.Y, 0), g.rows-1)}
}

// neighbourRuns records in rs the non-empty buckets of the up to 3x3 cells
// around c, which must be inside the grid, and returns how many entities
// they hold in total.
func (g *Grid) neighbourRuns(rs *runs, c Cell) int {
	x0, x1 := max(c.X-1, 0), min(c.X+1, g.cols-1)
	y0, y1 := max(c.Y-1, 0), min(c.Y+1, g.rows-1)
	total := 0
	for y := y0; y <= y1; y++ {
		row := y * g.cols
		for id := row + x0; id <= row+x1; id++ {
			total += rs.add(g.items[g.start[id]:g.start[id+1]])
		}
	}
	return total
}
