package roomserver

import (
	"cmp"
	"math"
	"slices"
	"testing"

	"github.com/roomkeeper/roomkeeper/internal/protocol"
	"github.com/roomkeeper/roomkeeper/pkg/client"
)

// TestACrowdSeesOneWorld: many clients in one spot, most binary, some
// JSON, moving while their writers share and recycle views and encodings
// across goroutines, and others join and vanish mid-stream. Every delta
// decodes, and once they stop, every client sees every other where that
// one sees itself.
func TestACrowdSeesOneWorld(t *testing.T) {
	h := newHarness(t, func(c *Config) { c.SnapshotRate = 30; c.SpawnPoints = 1 })
	clients := make([]*client.Client, 24)
	for i := range clients {
		codec := protocol.CodecBinary
		if i%3 == 2 {
			codec = protocol.CodecJSON
		}
		clients[i] = h.dial(protocol.Hello{Ticket: h.ticket()}, client.Options{Codec: codec})
	}
	var passerby *client.Client
	for step := range 45 { // a second and a half of walking, each its own way
		for i, c := range clients {
			a := float64(i*7+step/10) * 0.9
			if _, err := c.Move(float32(math.Cos(a)), float32(math.Sin(a))); err != nil {
				t.Fatal(err)
			}
		}
		switch step % 9 { // someone joins, and drops without a goodbye
		case 0:
			passerby = h.dial(protocol.Hello{Ticket: h.ticket()}, client.Options{Codec: protocol.CodecBinary})
		case 4:
			if err := passerby.Drop(); err != nil {
				t.Fatal(err)
			}
		}
		waitFor(t, clients[0], "the step applied", func(s client.State) bool { return s.Pending == 0 })
	}
	stopped := h.srv.Stats().Tick + 6 // two far refreshes after every input applied
	for _, c := range clients {
		waitFor(t, c, "snapshots after the crowd stopped", func(s client.State) bool { return s.Tick >= stopped && s.Pending == 0 })
	}
	compared := 0
	for _, c := range clients {
		s := c.Snapshot()
		if s.Closed != nil {
			t.Fatalf("client %d was closed: %v", c.Welcome().PlayerID, s.Closed)
		}
		for _, other := range clients {
			self := other.Snapshot().Self
			i, ok := slices.BinarySearchFunc(s.Entities, self.ID, func(e protocol.EntityState, id uint32) int { return cmp.Compare(e.ID, id) })
			if !ok {
				continue // out of sight
			}
			if seen := s.Entities[i]; seen != self {
				t.Errorf("player %d sees player %d at %+v, that one sees itself at %+v", c.Welcome().PlayerID, self.ID, seen, self)
			}
			compared++
		}
	}
	if compared < len(clients)*len(clients)/2 {
		t.Errorf("only %d of %d pairs in sight of each other: not a crowd", compared, len(clients)*len(clients))
	}
}
