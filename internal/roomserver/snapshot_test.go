package roomserver

import (
	"math"
	"testing"

	"github.com/roomkeeper/roomkeeper/internal/mapgen"
	"github.com/roomkeeper/roomkeeper/internal/protocol"
	"github.com/roomkeeper/roomkeeper/internal/sim"
)

// TestDeltasAreRightWhateverTheClientAcknowledges: a client that
// acknowledges every snapshot, every tenth, none, or a stale one always
// decodes what the server saw: a delta against a base it kept, or a full
// snapshot; never a wrong one. And the server keeps only the acknowledged
// baseline and those sent after it.
func TestDeltasAreRightWhateverTheClientAcknowledges(t *testing.T) {
	for name, acks := range map[string]func(n int, newest, last uint64) uint64{
		"every snapshot": func(_ int, newest, _ uint64) uint64 { return newest },
		"every tenth": func(n int, newest, last uint64) uint64 {
			if n%10 == 9 {
				return newest
			}
			return last
		},
		"none":        func(int, uint64, uint64) uint64 { return 0 },
		"a stale one": func(_ int, newest, _ uint64) uint64 { return max(newest, 4) - 3 },
		"backwards":   func(n int, newest, _ uint64) uint64 { return newest - min(newest, uint64(n%7)) },
	} {
		t.Run(name, func(t *testing.T) {
			static, err := mapgen.Generate(mapgen.Config{Seed: 9, Width: 256, Height: 256, NPCDensity: 0.05})
			if err != nil {
				t.Fatal(err)
			}
			w := sim.NewWorld(static, 30, sim.Defaults())
			var players []uint32
			for range 8 {
				players = append(players, w.AddPlayer())
			}
			sn := newSnapshotter(64, 8, 2)
			defer sn.close()
			kept := map[uint64][]protocol.EntityState{} // the client's copies, by tick
			var ackTick, newest uint64
			for n := range 120 {
				for i, id := range players {
					a := float64(n/15+i) * 0.9
					w.QueueInput(id, sim.Input{Seq: uint32(n + 1), X: float32(math.Cos(a)), Y: float32(math.Sin(a))})
				}
				w.Step()
				f := w.Frame(64)
				me, _ := f.Lookup(players[0])
				cur := sn.interest(f, me, ackTick)
				data := sn.binary(f.Tick, me.LastSeq, ackTick, cur)
				h, err := protocol.PeekBinaryHeader(data)
				if err != nil {
					t.Fatal(err)
				}
				base, ok := kept[h.BaseTick]
				if h.Mode == protocol.BinaryModeDelta && !ok {
					t.Fatalf("snapshot %d: a delta on tick %d, which the client never got", n, h.BaseTick)
				}
				h, got, err := protocol.DecodeBinarySnapshot(data, base, nil)
				if err != nil {
					t.Fatalf("snapshot %d: %v", n, err)
				}
				if h.Mode == protocol.BinaryModeDelta && h.BaseTick != ackTick {
					t.Fatalf("snapshot %d: a delta on %d, the client acknowledged %d", n, h.BaseTick, ackTick)
				}
				sameView(t, n, got, cur)
				sn.remember(f.Tick, ackTick, cur)
				if held := heldBaselines(&sn); ackTick != 0 && ackTick <= f.Tick && held > int(f.Tick-ackTick)+1 {
					t.Fatalf("snapshot %d: %d baselines held, want at most the acknowledged one and %d after it", n, held, f.Tick-ackTick)
				}
				kept[f.Tick], newest = got, f.Tick
				ackTick = acks(n, newest, ackTick)
			}
		})
	}
}

// sameView compares a decoded snapshot with what the server meant to send,
// on the binary codec's 1/16 grid.
func sameView(t *testing.T, n int, got, want []protocol.EntityState) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("snapshot %d: %d entities decoded, %d sent", n, len(got), len(want))
	}
	for i := range want {
		g, w := got[i], want[i]
		if g.ID != w.ID || g.Kind != w.Kind || g.HP != w.HP || protocol.Quantize(g.X) != protocol.Quantize(w.X) || protocol.Quantize(g.Y) != protocol.Quantize(w.Y) {
			t.Fatalf("snapshot %d: entity %d decoded as %+v, sent %+v", n, i, g, w)
		}
	}
}

func heldBaselines(sn *snapshotter) int {
	n := 0
	for _, b := range sn.baselines {
		if b.buf != nil {
			n++
		}
	}
	return n
}
