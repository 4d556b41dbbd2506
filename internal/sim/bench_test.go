package sim

import (
	"math"
	"slices"
	"testing"
	"time"

	"github.com/roomkeeper/roomkeeper/internal/mapgen"
)

// crowdedWorld is the budget scenario of docs/design.md section 8: one map with
// about 2,000 NPCs and 200 players.
func crowdedWorld(b *testing.B, tickRate int) (*World, []uint32) {
	return crowdedMap(b, tickRate, mapgen.Config{Seed: 42, Width: 512, Height: 512})
}

// crowdedMap is cfg's map with about 2,000 NPCs and 200 players.
func crowdedMap(b *testing.B, tickRate int, cfg mapgen.Config) (*World, []uint32) {
	b.Helper()
	cfg.NPCDensity = math.Min(1, 2000/float64(testStatic(b, cfg).WalkableCells()))
	w := NewWorld(testStatic(b, cfg), tickRate, Defaults())
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
	entities := w.Len()
	stepUnderLoad(b, w, players, nil)
	b.ReportMetric(float64(entities), "entities") // after the timer's last reset, which drops metrics
}

// stepUnderLoad steps w with every player sending an input each tick (and
// doing act, when given) and reports the step times' percentiles.
func stepUnderLoad(b *testing.B, w *World, players []uint32, act func(player uint32)) {
	var durations []time.Duration
	seq := uint32(0)
	b.ResetTimer()
	for b.Loop() {
		seq++
		for i, id := range players {
			a := float64(int(seq)/30+i) * 0.7 // each player turns once a second
			w.QueueInput(id, Input{Seq: seq, X: float32(math.Cos(a)), Y: float32(math.Sin(a))})
			if act != nil {
				act(id)
			}
		}
		start := time.Now()
		w.Step()
		durations = append(durations, time.Since(start))
	}
	reportPercentiles(b, durations)
}

// BenchmarkStep200PlayersFighting2000NPCs is the same step in a dungeon
// whose NPCs are hostile, with every player attacking the NPC nearest to
// it each tick (refused while its cooldown runs, as a client hammering
// the key would be): the combat issue's budget scenario. Dead NPCs stay
// dead (the crypt's do not respawn), so the fight thins out over a long
// run; the result reports how many were left. A dungeon is mostly wall:
// it takes 720x720 units to hold 2,000 NPCs.
func BenchmarkStep200PlayersFighting2000NPCs(b *testing.B) {
	w, players := crowdedMap(b, 30, mapgen.Config{Seed: 42, Width: 720, Height: 720, Biome: "dungeon"})
	npcs := w.npcs.len()
	stepUnderLoad(b, w, players, func(id uint32) {
		if target := w.nearestNPC(id); target != 0 {
			_ = w.Attack(id, target)
		}
	})
	b.ReportMetric(float64(npcs), "npcs")
	b.ReportMetric(float64(w.npcs.len()), "npcs-left")
}

// nearestNPC is the living NPC nearest to player, or 0: a scan of every
// entity, which is the benchmark's client side, outside the timed step.
func (w *World) nearestNPC(player uint32) uint32 {
	p := w.find(player)
	if p == nil {
		return 0
	}
	best, bestD := uint32(0), float32(math.MaxFloat32)
	for i := range w.entities {
		e := &w.entities[i]
		if e.Kind == KindNPC && e.HP > 0 {
			if d := dist2(e, p); d < bestD {
				best, bestD = e.ID, d
			}
		}
	}
	return best
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
