package fanout

import (
	"cmp"
	"math"
	"slices"
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
		// The base's slot is the one the next snapshot takes.
		"a full window behind": func(_ int, newest, _ uint64) uint64 { return max(newest, baselineCount) - (baselineCount - 1) },
		"backwards":            func(n int, newest, _ uint64) uint64 { return newest - min(newest, uint64(n%7)) },
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
		clients[name] = &ackingClient{sn: NewSnapshotter(64, 8), kept: map[uint64][]protocol.EntityState{}}
	}
	shared := 0
	frames := newFrameStream(2)
	reference := newFramer(2, 64, 8) // no recycling: what the views must hold
	for n := range 120 {
		for i, id := range players {
			a := float64(n/15+i) * 0.9
			w.QueueInput(id, sim.Input{Seq: uint32(n + 1), X: float32(math.Cos(a)), Y: float32(math.Sin(a))})
		}
		w.Step()
		f := frames.next(w)
		ref := reference.next(w.Frame(64))
		me, _ := f.Lookup(players[0])
		for name, c := range clients {
			v := c.receive(t, name, n, f, me)
			if want, _ := ref.view(c.sn.tracker.Cell(), nil); !slices.Equal(v.states, want.states) {
				t.Fatalf("%s, snapshot %d: a recycled view holds %v, want %v", name, n, v.states, want.states)
			}
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
	sn      Snapshotter
	kept    map[uint64][]protocol.EntityState // the client's copies, by tick
	ackTick uint64
}

// receive builds the client's snapshot of f, decodes it as the client
// would and checks it.
func (c *ackingClient) receive(t *testing.T, name string, n int, f *Frame, me sim.View) *View {
	t.Helper()
	v, base := c.sn.Next(f, me, c.ackTick)
	data := c.sn.Binary(f, v, base, me.LastSeq, nil)
	c.sn.Remember(v, c.ackTick)
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
	return v
}

// frameStream plays the server's part for tests and benchmarks: frames
// captured into recycled ones, the previous released when the next comes.
type frameStream struct {
	framer   *framer
	cellSize float32
	latest   *Frame
}

func newFrameStream(farEvery int) *frameStream {
	return &frameStream{framer: newFramer(farEvery, 64, 8), cellSize: 64}
}

func (s *frameStream) next(w *sim.World) *Frame {
	f := s.framer.next(w.FrameInto(s.framer.recycledSimFrame(), s.cellSize))
	if s.latest != nil {
		s.latest.Release()
	}
	s.latest = f
	return f
}

// sameView compares a decoded snapshot with what the server meant to send,
// on the binary codec's 1/16 grid.
func sameView(t *testing.T, n int, got []protocol.EntityState, want []protocol.WireState) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("snapshot %d: %d entities decoded, %d sent", n, len(got), len(want))
	}
	for i := range want {
		if g, w := got[i], want[i]; g != w.Entity() {
			t.Fatalf("snapshot %d: entity %d decoded as %+v, sent %+v", n, i, g, w)
		}
	}
}

func heldBaselines(sn *Snapshotter) int {
	n := 0
	for _, v := range sn.sent {
		if v != nil {
			n++
		}
	}
	return n
}

// TestAClientAlwaysSeesItselfNow: whatever the cell size and hysteresis, a
// client's own entity is near, so every snapshot carries its newest
// position, which its reconciliation replays from.
func TestAClientAlwaysSeesItselfNow(t *testing.T) {
	static, err := mapgen.Generate(mapgen.Config{Seed: 5, Width: 256, Height: 256})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ cell, hysteresis float32 }{{64, 8}, {16, 12}, {32, 0}, {8, 7.5}} {
		w := sim.NewWorld(static, 30, sim.Defaults())
		player := w.AddPlayer()
		frames := &frameStream{framer: newFramer(2, tc.cell, tc.hysteresis), cellSize: tc.cell}
		sn := NewSnapshotter(tc.cell, tc.hysteresis)
		checked := 0
		for n := range 300 { // a circle of 32 units: across cell borders and back
			a := float64(n) * 0.05
			w.QueueInput(player, sim.Input{Seq: uint32(n + 1), X: float32(math.Cos(a)), Y: float32(math.Sin(a))})
			w.Step()
			f := frames.next(w)
			me, _ := f.Lookup(player)
			v, _ := sn.Next(f, me, 0)
			want := protocol.EntityState{ID: me.ID, Kind: protocol.EntityKind(me.Kind), X: me.X, Y: me.Y, HP: me.HP}.Wire()
			i, ok := slices.BinarySearchFunc(v.states, player, func(e protocol.WireState, id uint32) int { return cmp.Compare(e.ID, id) })
			if !ok || v.states[i] != want {
				t.Fatalf("cell %v, hysteresis %v, frame %d: the client sees itself as %+v, it is at %+v", tc.cell, tc.hysteresis, n, v.states[min(i, len(v.states)-1)], want)
			}
			checked++
		}
		if checked != 300 {
			t.Fatalf("checked %d frames", checked)
		}
	}
}
