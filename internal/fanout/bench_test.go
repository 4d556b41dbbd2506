package fanout

import (
	"math"
	"testing"
	"unsafe"

	"github.com/roomkeeper/roomkeeper/internal/mapgen"
	"github.com/roomkeeper/roomkeeper/internal/protocol"
	"github.com/roomkeeper/roomkeeper/internal/sim"
)

// crowd is the docs/design.md section 8 scenario: 200 players and about 2,000
// NPCs on one map, stepped for a few seconds so NPCs gather round players.
func crowd(b *testing.B) (*sim.World, []uint32) {
	b.Helper()
	probe, err := mapgen.Generate(mapgen.Config{Seed: 42, Width: 512, Height: 512})
	if err != nil {
		b.Fatal(err)
	}
	w, players := worldWith(b, mapgen.Config{Seed: 42, Width: 512, Height: 512,
		NPCDensity: math.Min(1, 2000/float64(probe.WalkableCells()))}, 200)
	for tick := range 300 { // ten seconds: players spread out from the spawn
		for i, id := range players {
			a := float64(i) * 2 * math.Pi / float64(len(players))
			w.QueueInput(id, sim.Input{Seq: uint32(tick + 1), X: float32(math.Cos(a)), Y: float32(math.Sin(a))})
		}
		w.Step()
	}
	return w, players
}

// BenchmarkSnapshotFanout200 builds one frame's binary delta snapshots for
// all 200 players (area of interest, then encoding), as the writers do at
// each snapshot. Reported: the CPU share at 20 Hz and the bytes per client
// per second.
func BenchmarkSnapshotFanout200(b *testing.B) {
	w, players := crowd(b)
	benchFanout(b, w, players, binary)
}

// BenchmarkSnapshotFanout200JSON is the same for clients of the JSON
// codec: each snapshot is a delta built per client and marshalled.
func BenchmarkSnapshotFanout200JSON(b *testing.B) {
	w, players := crowd(b)
	benchFanout(b, w, players, func(_ *Snapshotter, _ *Frame, v, base *View, ackSeq uint32) []byte {
		data, err := protocol.MarshalMessage(protocol.KindSnapshot, 0, JSONSnapshot(v, base, ackSeq, nil))
		if err != nil {
			b.Fatal(err)
		}
		return data
	})
}

// An encoder is a codec's part of the fan-out: one client's snapshot.
type encoder func(sn *Snapshotter, f *Frame, v, base *View, ackSeq uint32) []byte

func binary(sn *Snapshotter, f *Frame, v, base *View, ackSeq uint32) []byte {
	return sn.Binary(f, v, base, ackSeq, nil)
}

// benchFanout runs the fan-out benchmark: every player acknowledges the
// previous snapshot, as a client on a quick link does.
func benchFanout(b *testing.B, w *sim.World, players []uint32, encode encoder) {
	snaps := make([]Snapshotter, len(players))
	for i := range snaps {
		snaps[i] = NewSnapshotter(64, 8)
	}
	var bytes, snapshots, inView int
	var prev uint64
	frames := newFrameStream(2)
	b.ResetTimer()
	seq := uint32(0)
	for b.Loop() {
		seq++
		for i, id := range players { // each player turns once a second
			a := float64(int(seq)/20+i) * 0.7
			w.QueueInput(id, sim.Input{Seq: seq, X: float32(math.Cos(a)), Y: float32(math.Sin(a))})
		}
		w.Step()
		f := frames.next(w)
		for i, id := range players {
			me, _ := f.Lookup(id)
			v, base := snaps[i].Next(f, me, prev)
			data := encode(&snaps[i], f, v, base, me.LastSeq)
			snaps[i].Remember(v, prev)
			bytes, snapshots, inView = bytes+len(data), snapshots+1, inView+len(v.states)
		}
		prev = f.Tick
	}
	b.StopTimer()
	perFrame := b.Elapsed().Seconds() / float64(b.N)
	b.ReportMetric(perFrame*20, "cores@20Hz")
	b.ReportMetric(float64(bytes)/float64(snapshots)*20, "B/s/client@20Hz")
	b.ReportMetric(float64(inView)/float64(snapshots), "entities-in-view")
	b.ReportMetric(float64(retainedBytes(snaps))/float64(len(snaps))/1024, "baseline-KiB/client")
}

// BenchmarkSnapshotFanoutCrowd1000 is the same for 1,000 players who all
// stay round one spawn point: every client sees all of them.
func BenchmarkSnapshotFanoutCrowd1000(b *testing.B) {
	w, players := worldWith(b, mapgen.Config{Seed: 42, Width: 512, Height: 512, SpawnPoints: 1}, 1000)
	benchFanout(b, w, players, binary)
}

// worldWith is a 30 Hz world on the map cfg generates, with n players.
func worldWith(b *testing.B, cfg mapgen.Config, n int) (*sim.World, []uint32) {
	b.Helper()
	static, err := mapgen.Generate(cfg)
	if err != nil {
		b.Fatal(err)
	}
	w := sim.NewWorld(static, 30, sim.Defaults())
	players := make([]uint32, n)
	for i := range players {
		players[i] = w.AddPlayer()
	}
	return w, players
}

// retainedBytes is what the views the clients keep as baselines hold,
// each view counted once however many clients share it.
func retainedBytes(snaps []Snapshotter) int {
	seen := map[*View]bool{}
	n := 0
	for i := range snaps {
		for _, v := range snaps[i].sent {
			if v != nil && !seen[v] {
				seen[v] = true
				n += cap(v.states) * int(unsafe.Sizeof(protocol.WireState{}))
			}
		}
	}
	return n
}
