package aoi

import "testing"

// The benchmarks use the map-pod workload of docs/design.md section 8: 2,200
// entities (200 players, 2,000 NPCs) on a 512 x 512 map with 64-unit cells.
const (
	benchEntities = 2200
	benchPlayers  = 200
	benchMapSize  = 512
	benchCellSize = 64
	benchMargin   = 8
)

func BenchmarkBuild2200(b *testing.B) {
	// Two position sets, as if entities moved between ticks.
	worlds := [2]world{
		newWorld(20, benchEntities, benchMapSize, benchCellSize, 0),
		newWorld(21, benchEntities, benchMapSize, benchCellSize, 0),
	}
	g := NewGrid(benchMapSize, benchMapSize, benchCellSize)
	g.Build(worlds[0].xs, worlds[0].ys)
	i := 0
	for b.Loop() {
		w := worlds[i&1]
		g.Build(w.xs, w.ys)
		i++
	}
}

// BenchmarkNeighbourhood is one player's query: each op is the 3x3
// neighbourhood of the next player's cell, corners and edges included.
func BenchmarkNeighbourhood(b *testing.B) {
	w := newWorld(22, benchEntities, benchMapSize, benchCellSize, 0)
	g := w.grid()
	cells := make([]Cell, benchPlayers)
	for p := range cells {
		cells[p] = g.CellOf(w.xs[p], w.ys[p])
	}
	dst := make([]int32, 0, benchEntities)
	seen, i := 0, 0
	for b.Loop() {
		dst = g.AppendNeighbourhood(dst[:0], cells[i%benchPlayers])
		seen += len(dst)
		i++
	}
	b.ReportMetric(float64(seen)/float64(i), "entities/op")
}

// BenchmarkTrackerUpdate walks a player in small steps across many borders.
func BenchmarkTrackerUpdate(b *testing.B) {
	tr := NewTracker(benchCellSize, benchMargin)
	const steps = 1024
	var xs, ys [steps]float32
	for s := range steps {
		xs[s] = float32(s) * 0.5 // 512 units there, then back from the start
		ys[s] = float32(s%256) * 2
	}
	i, changes := 0, 0
	for b.Loop() {
		if _, changed := tr.Update(xs[i%steps], ys[i%steps]); changed {
			changes++
		}
		i++
	}
	b.ReportMetric(float64(changes)/float64(i), "changes/op")
}

// BenchmarkSnapshotTick is the AOI share of one 20 Hz snapshot tick on a map
// pod: rebuild the grid, then move every player's tracker and gather its
// neighbourhood. Multiply by 20 for the CPU per second of the budget.
func BenchmarkSnapshotTick(b *testing.B) {
	w := newWorld(23, benchEntities, benchMapSize, benchCellSize, 0)
	g := NewGrid(benchMapSize, benchMapSize, benchCellSize)
	trackers := make([]Tracker, benchPlayers)
	for p := range trackers {
		trackers[p] = NewTracker(benchCellSize, benchMargin)
	}
	g.Build(w.xs, w.ys) // warm up: the first Build sizes the buffers
	dst := make([]int32, 0, benchEntities)
	for b.Loop() {
		g.Build(w.xs, w.ys)
		for p := range trackers {
			c, _ := trackers[p].Update(w.xs[p], w.ys[p])
			dst = g.AppendNeighbourhood(dst[:0], c)
		}
	}
}
