package client

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/roomkeeper/roomkeeper/internal/mapgen"
	"github.com/roomkeeper/roomkeeper/internal/protocol"
	"github.com/roomkeeper/roomkeeper/internal/sim"
)

// welcomingServer answers any hello with welcome. It stands in for a room
// server only to test the client's own checks; internal/roomserver tests
// the client against the real server.
func welcomingServer(t *testing.T, welcome protocol.Welcome) string {
	url, _ := scriptedServer(t, func(int, protocol.Hello) [][]byte {
		return [][]byte{message(t, protocol.KindWelcome, welcome)}
	})
	return url
}

func TestDialRefusesAMapThatDoesNotMatchTheServers(t *testing.T) {
	url := welcomingServer(t, protocol.Welcome{PlayerID: 1, TickRate: 30, PlayerSpeed: 48,
		MapConfig: []byte(`{"seed":42,"width":256,"height":256}`), MapHash: "not-the-hash"})
	_, err := Dial(context.Background(), url, protocol.Hello{Ticket: "t"}, Options{})
	if !errors.Is(err, ErrMapMismatch) {
		t.Fatalf("Dial = %v, want ErrMapMismatch", err)
	}
}

func TestApplyJSONSnapshot(t *testing.T) {
	base := []protocol.EntityState{{ID: 1, Kind: 1, X: 1, Y: 1, HP: 100}, {ID: 2, Kind: 2, X: 5, Y: 5, HP: 50}, {ID: 3, Kind: 2, X: 9, Y: 9, HP: 10}}
	delta := protocol.Snapshot{Mode: protocol.ModeDelta, BaseTick: 7,
		Presence: protocol.Presence{Add: []protocol.Arrival{{ID: 4, Kind: 2}}, Remove: []uint32{2}},
		Movement: []protocol.Position{{ID: 1, X: 2, Y: 1}, {ID: 4, X: 3, Y: 3}},
		Combat:   []protocol.Health{{ID: 3, HP: 5, State: protocol.CombatFighting, Target: 1}, {ID: 4, HP: 80}},
		Doors:    []protocol.DoorView{{ID: 5, Open: true}}}
	base = append(base, protocol.EntityState{ID: 5, Kind: protocol.EntityDoor, X: 12, Y: 12, State: protocol.DoorLocked})
	got := applyJSONSnapshot(base, delta)
	want := []protocol.EntityState{{ID: 1, Kind: 1, X: 2, Y: 1, HP: 100}, {ID: 3, Kind: 2, X: 9, Y: 9, HP: 5, State: protocol.CombatFighting, Target: 1},
		{ID: 4, Kind: 2, X: 3, Y: 3, HP: 80}, {ID: 5, Kind: protocol.EntityDoor, X: 12, Y: 12, State: protocol.DoorOpen}}
	if len(got) != len(want) {
		t.Fatalf("got %+v", got)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("entity %d = %+v, want %+v", i, got[i], want[i])
		}
	}
}

func TestPredictionReplaysPendingInputs(t *testing.T) {
	static, err := mapgen.Generate(mapgen.Config{Seed: 1, Width: 256, Height: 256})
	if err != nil {
		t.Fatal(err)
	}
	c := &Client{static: static, speed: 30, dt: 0.1, changed: make(chan struct{}),
		welcome: protocol.Welcome{PlayerID: 9}}
	c.pending = []protocol.Input{{Seq: 1, X: 1}, {Seq: 2, X: 1}, {Seq: 3, Y: 1}}
	x, y := float32(static.PlayerSpawn.X), float32(static.PlayerSpawn.Y)
	if err := c.applyEntities(5, 1, []protocol.EntityState{{ID: 9, Kind: protocol.EntityPlayer, X: x, Y: y}}, nil, 10); err != nil {
		t.Fatal(err)
	}
	s := c.Snapshot()
	// Input 1 is applied (ackSeq 1); 2 and 3 are replayed: 3 units east, 3 south.
	if s.Pending != 2 || s.PredictedX != x+3 || s.PredictedY != y+3 {
		t.Errorf("pending %d predicted (%v,%v), want 2 at (%v,%v)", s.Pending, s.PredictedX, s.PredictedY, x+3, y+3)
	}
}

// TestPredictionMatchesTheServerOverRandomStreams replays random input
// streams (single inputs, bursts, gaps, binary-quantized directions)
// through the server's own world and the client's reconciliation: every
// prediction equals where the server stands once it has handled the
// inputs that were pending, unless the server skipped or dropped some in
// between (then the next snapshot corrects it), and with nothing pending
// the prediction is the server's position. Every other stream carries a
// load above the bag's encumbrance threshold: the client slows by the
// server's rule.
func TestPredictionMatchesTheServerOverRandomStreams(t *testing.T) {
	static, err := mapgen.Generate(mapgen.Config{Seed: 3, Width: 512, Height: 512, Biome: "forest"}) // colliders to slide along
	if err != nil {
		t.Fatal(err)
	}
	for seed := range uint64(20) {
		rng := rand.New(rand.NewPCG(seed, 7))
		tun := sim.Defaults()
		w := sim.NewWorld(static, 30, tun)
		var load []sim.Item
		for i := range 12 * int(seed%2) { // 12 hides weigh 24, 13 would be over encumberedAt 25
			load = append(load, sim.Item{ID: fmt.Sprint("hide-", i), Kind: "hide"})
		}
		load = append(load, sim.Item{ID: "sword", Kind: "sword"})
		id := w.JoinPlayer(sim.PlayerSpec{Tag: "c", Inventory: load})
		bag := w.Content().Bag
		c := &Client{static: static, speed: tun.PlayerSpeed, dt: 1.0 / 30, changed: make(chan struct{}), welcome: protocol.Welcome{PlayerID: id,
			Bag: protocol.BagView{Capacity: bag.Capacity, MaxWeight: bag.MaxWeight, EncumberedAt: bag.EncumberedAt, EncumberedSpeed: bag.EncumberedSpeed}}}
		inv := &protocol.Inventory{Weight: w.Owned(id).Weight}
		if encumbered := inv.Weight > bag.EncumberedAt; encumbered != (seed%2 == 1) {
			t.Fatalf("seed %d: weight %v, encumbered %v", seed, inv.Weight, encumbered)
		}
		type prediction struct {
			upTo     uint32 // the last input pending when it was made
			x, y     float32
			lossless uint64 // the server's skipped + dropped count before its first pending input was sent
		}
		var open []prediction
		seq, checked := uint32(0), 0
		lostBefore := map[uint32]uint64{} // by seq: skipped + dropped before the input was sent
		send := func(n int) {
			for _, in := range inputs(seq, n, rng) {
				lostBefore[in.Seq] = w.SkippedInputs + w.DroppedInputs
				c.pending = append(c.pending, in)
				w.QueueInput(id, sim.Input{Seq: in.Seq, X: in.X, Y: in.Y})
				seq = in.Seq
			}
		}
		for tick := range 900 {
			switch r := rng.IntN(10); {
			case r < 2: // a gap
			case r < 8:
				send(1)
			default:
				send(1 + rng.IntN(6))
			}
			w.Step()
			me, _ := w.Frame(64).Lookup(id)
			if err := c.applyEntities(uint64(tick+1), me.LastSeq, []protocol.EntityState{{ID: id, Kind: protocol.EntityPlayer, X: me.X, Y: me.Y}}, inv, 0); err != nil {
				t.Fatal(err)
			}
			lost := w.SkippedInputs + w.DroppedInputs
			kept := open[:0]
			for _, p := range open {
				switch {
				case me.LastSeq < p.upTo:
					kept = append(kept, p)
				case me.LastSeq == p.upTo && p.lossless == lost:
					if p.x != me.X || p.y != me.Y {
						t.Fatalf("seed %d tick %d: predicted (%v,%v) for input %d, the server is at (%v,%v)", seed, tick, p.x, p.y, p.upTo, me.X, me.Y)
					}
					checked++
				}
			}
			open = kept
			s := c.Snapshot()
			if s.Pending == 0 && (s.PredictedX != me.X || s.PredictedY != me.Y) {
				t.Fatalf("seed %d tick %d: nothing pending, predicted (%v,%v), server (%v,%v)", seed, tick, s.PredictedX, s.PredictedY, me.X, me.Y)
			}
			if s.Pending > 0 {
				open = append(open, prediction{upTo: seq, x: s.PredictedX, y: s.PredictedY, lossless: lostBefore[me.LastSeq+1]})
			}
		}
		if checked < 100 {
			t.Fatalf("seed %d: only %d predictions could be checked", seed, checked)
		}
	}
}

// inputs are n inputs after seq in one random direction, quantized as a
// binary frame carries them half the time.
func inputs(seq uint32, n int, rng *rand.Rand) []protocol.Input {
	a := rng.Float64() * 2 * math.Pi
	x, y := float32(math.Cos(a)), float32(math.Sin(a))
	if rng.IntN(2) == 0 {
		x, y = protocol.QuantizeDirection(x), protocol.QuantizeDirection(y)
	}
	out := make([]protocol.Input, n)
	for i := range out {
		out[i] = protocol.Input{Seq: seq + uint32(i) + 1, X: x, Y: y}
	}
	return out
}
