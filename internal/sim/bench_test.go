package sim

import (
	"math"
	"slices"
	"testing"
	"time"

	"github.com/roomkeeper/roomkeeper/internal/mapgen"
)

// crowdedWorld is the budget scenario of DESIGN.md section 8: one map with
// about 2,000 NPCs and 200 players.
func crowdedWorld(b *testing.B, tickRate int) (*World, []uint32) {
	b.Helper()
	probe := testStatic(b, mapgen.Config{Seed: 42, Width: 512, Height: 512})
	density := math.Min(1, 2000/float64(probe.WalkableCells()))
	static := testStatic(b, mapgen.Config{Seed: 42, Width: 512, Height: 512, NPCDensity: density})
	w := NewWorld(static, tickRate, Defaults())
	players := make([]uint32, 200)
	for i := range players {
		players[i] = w.AddPlayer()
	}
	return w, players
}

// BenchmarkStep200Players2000NPCs measures one 30 Hz step with every player
// sending an input each tick, and reports the p99 and p99.9 step times.
func BenchmarkStep200Players2000NPCs(b *testing.B) {
	w, players := crowdedWorld(b, 30)
	b.ReportMetric(float64(w.Len()), "entities")
	var durations []time.Duration
	seq := uint32(0)
	b.ResetTimer()
	for b.Loop() {
		seq++
		for i, id := range players {
			a := float64(int(seq)/30+i) * 0.7 // each player turns once a second
			w.QueueInput(id, Input{Seq: seq, X: float32(math.Cos(a)), Y: float32(math.Sin(a))})
		}
		start := time.Now()
		w.Step()
		durations = append(durations, time.Since(start))
	}
	reportPercentiles(b, durations)
}

// BenchmarkFrame2200 measures capturing the frame observers read, done at
// the snapshot rate on the tick goroutine.
// BenchmarkFrame2200 captures frames as the room server does: each into
// one nobody reads any more.
func BenchmarkFrame2200(b *testing.B) {
	w, _ := crowdedWorld(b, 30)
	var f *Frame
	b.ReportAllocs()
	for b.Loop() {
		f = w.FrameInto(f, 64)
	}
}

func reportPercentiles(b *testing.B, durations []time.Duration) {
	if len(durations) == 0 {
		return
	}
	slices.Sort(durations)
	at := func(p float64) float64 {
		return float64(durations[int(math.Min(float64(len(durations)-1), p*float64(len(durations))))].Microseconds())
	}
	b.ReportMetric(at(0.50), "p50-us")
	b.ReportMetric(at(0.99), "p99-us")
	b.ReportMetric(at(0.999), "p99.9-us")
}
