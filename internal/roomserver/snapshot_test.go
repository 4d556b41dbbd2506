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
// snapshot; never a wrong one. The clients watch the same player, so they
// share a view whenever they acknowledged the same one, which is checked
// too. And the server keeps only the acknowledged baseline and those sent
// after it.
func TestDeltasAreRightWhateverTheClientAcknowledges(t *testing.T) {
	acks := map[string]func(n int, newest, last uint64) uint64{
		"every snapshot":     func(_ int, newest, _ uint64) uint64 { return newest },
		"every snapshot too": func(_ int, newest, _ uint64) uint64 { return newest },
		"every tenth": func(n int, newest, last uint64) uint64 {
			if n%10 == 9 {
				return newest
			}
			return last
		},
		"none":        func(int, uint64, uint64) uint64 { return 0 },
		"a stale one": func(_ int, newest, _ uint64) uint64 { return max(newest, 4) - 3 },
		"backwards":   func(n int, newest, _ uint64) uint64 { return newest - min(newest, uint64(n%7)) },
	}
	static, err := mapgen.Generate(mapgen.Config{Seed: 9, Width: 256, Height: 256, NPCDensity: 0.05})
	if err != nil {
		t.Fatal(err)
	}
	w := sim.NewWorld(static, 30, sim.Defaults())
	var players []uint32
	for range 8 {
		players = append(players, w.AddPlayer())
	}
	clients := map[string]*ackingClient{}
	for name := range acks {
		clients[name] = &ackingClient{sn: newSnapshotter(64, 8), kept: map[uint64][]protocol.EntityState{}}
	}
	shared := 0
	fr := framer{farEvery: 2}
	for n := range 120 {
		for i, id := range players {
			a := float64(n/15+i) * 0.9
			w.QueueInput(id, sim.Input{Seq: uint32(n + 1), X: float32(math.Cos(a)), Y: float32(math.Sin(a))})
		}
		w.Step()
		f := fr.next(w.Frame(64))
		me, _ := f.Lookup(players[0])
		for name, c := range clients {
			c.receive(t, name, n, f, me)
			c.ackTick = acks[name](n, f.Tick, c.ackTick)
		}
		if a, b := clients["every snapshot"], clients["every snapshot too"]; a.sn.sent[f.Tick%baselineCount] == b.sn.sent[f.Tick%baselineCount] {
			shared++
		}
	}
	if shared != 120 {
		t.Errorf("two clients acknowledging alike shared %d of 120 views, want all", shared)
	}
}

// ackingClient is one client of TestDeltasAreRightWhateverTheClientAcknowledges.
type ackingClient struct {
	sn      snapshotter
	kept    map[uint64][]protocol.EntityState // the client's copies, by tick
	ackTick uint64
}

// receive builds the client's snapshot of f, decodes it as the client
// would and checks it.
func (c *ackingClient) receive(t *testing.T, name string, n int, f *frame, me sim.View) {
	t.Helper()
	v, base := c.sn.next(f, me, c.ackTick)
	data := c.sn.binary(f, v, base, me.LastSeq)
	h, err := protocol.PeekBinaryHeader(data)
	if err != nil {
		t.Fatal(err)
	}
	kept, ok := c.kept[h.BaseTick]
	if h.Mode == protocol.BinaryModeDelta && !ok {
		t.Fatalf("%s, snapshot %d: a delta on tick %d, which the client never got", name, n, h.BaseTick)
	}
	h, got, err := protocol.DecodeBinarySnapshot(data, kept, nil)
	if err != nil {
		t.Fatalf("%s, snapshot %d: %v", name, n, err)
	}
	if h.Mode == protocol.BinaryModeDelta && h.BaseTick != c.ackTick {
		t.Fatalf("%s, snapshot %d: a delta on %d, the client acknowledged %d", name, n, h.BaseTick, c.ackTick)
	}
	sameView(t, n, got, v.states)
	if held := heldBaselines(&c.sn); c.ackTick != 0 && c.ackTick <= f.Tick && held > int(f.Tick-c.ackTick)+1 {
		t.Fatalf("%s, snapshot %d: %d baselines held, want at most the acknowledged one and %d after it", name, n, held, f.Tick-c.ackTick)
	}
	c.kept[f.Tick] = got
}

// sameView compares a decoded snapshot with what the server meant to send,
// on the binary codec's 1/16 grid.
func sameView(t *testing.T, n int, got []protocol.EntityState, want []protocol.WireState) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("snapshot %d: %d entities decoded, %d sent", n, len(got), len(want))
	}
	for i := range want {
		if g, w := got[i], want[i]; g != w.State() {
			t.Fatalf("snapshot %d: entity %d decoded as %+v, sent %+v", n, i, g, w)
		}
	}
}

func heldBaselines(sn *snapshotter) int {
	n := 0
	for _, v := range sn.sent {
		if v != nil {
			n++
		}
	}
	return n
}
