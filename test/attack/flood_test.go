package attack

import (
	"context"
	"fmt"
	"math"
	"testing"
	"time"

	"github.com/gorilla/websocket"

	"github.com/roomkeeper/roomkeeper/internal/protocol"
	"github.com/roomkeeper/roomkeeper/pkg/client"
)

// The flood: as fast as one connection goes, bounded in messages and time.
const (
	floodMessages = 2_000_000
	floodFor      = 15 * time.Second
)

// TestFloodIsCut: a seated client sending as fast as it can, far above
// its 60 messages a second, is answered rate_limited at most about once a
// second and closed with 1008 rate_limited (docs/protocol.md, Transport:
// after 2 s over the limit); another player plays on meanwhile.
func TestFloodIsCut(t *testing.T) {
	ctx := caseContext(t)
	r := startServer(t, newDatabase(t), townMap)
	bystander := join(t, ctx, r, newCharacter("bystander"))
	p := rawJoin(t, ctx, r, newCharacter("flooder"))
	const limited = `roomkeeper_roomserver_disconnects_total{reason="rate_limited"}`
	cutBefore := r.metrics()[limited]

	pings := make([][]byte, 64)
	for i := range pings {
		data, err := protocol.MarshalMessage(protocol.KindPing, uint32(i+2), protocol.Ping{ClientTime: float64(i)})
		if err != nil {
			t.Fatal(err)
		}
		pings[i] = data
	}
	_ = p.conn.SetWriteDeadline(time.Now().Add(floodFor + 5*time.Second))
	before := r.resources()
	start := time.Now()
	sent := 0
	for sent < floodMessages && time.Since(start) < floodFor {
		if err := p.send(pings[sent%len(pings)]); err != nil {
			break // the server closed the connection
		}
		if sent++; sent%1024 == 0 && closed(p) {
			break
		}
	}
	s, err := p.waitClosed(ctx)
	if err != nil {
		t.Fatal(err)
	}
	after := r.resources()
	cut := s.closedAt.Sub(start)
	record(t, "time to cut an unthrottled flood", "%s (%d messages sent, %.0f/s)", cut.Round(time.Millisecond), sent, float64(sent)/time.Since(start).Seconds())
	record(t, "server CPU during the flood", "%.2f cores", cores(before, after))
	record(t, "server during the flood", "%s", after)

	if cc, reason := closeCode(s.closed); cc != websocket.ClosePolicyViolation || reason != string(protocol.CodeRateLimited) {
		t.Fatalf("the flood ended with %d %q (%v) after %s and %d messages, want a close with 1008 rate_limited", cc, reason, s.closed, cut, sent)
	}
	replies := s.count(protocol.CodeRateLimited)
	record(t, "rate_limited replies before the cut", "%d in %s", replies, cut.Round(time.Millisecond))
	if bound := int(cut.Seconds()) + 2; replies < 1 || replies > bound {
		t.Errorf("%d rate_limited replies in %s of flood, want 1..%d (at most one a second, and the closing one)", replies, cut, bound)
	}
	if len(s.errors) == 0 || s.errors[len(s.errors)-1].Code != protocol.CodeRateLimited {
		t.Errorf("the errors before the close are %+v, want rate_limited last", s.errors)
	}
	if n := r.metrics()[limited] - cutBefore; n != 1 {
		t.Errorf("the server counts %v rate_limited disconnects, want 1", n)
	}
	expectPlaying(t, ctx, bystander, "the bystander")
	logResources(t, r, "after the flood")
}

// closed reports whether p's connection has closed.
func closed(p *peer) bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// sample is the player's server position at a tick.
type sample struct {
	tick uint64
	x, y float32
}

// TestSpeedHacksAreRefused: movement directions longer than 1 are refused
// with invalid_action and move nothing; numbers that do not fit (or are
// not numbers) are bad_request; and a client stuffing hundreds of inputs
// into its messages never moves faster than the server's speed:
// playerSpeed/tickRate per tick (docs/protocol.md, Commands and welcome).
func TestSpeedHacksAreRefused(t *testing.T) {
	ctx := caseContext(t)
	r := startServer(t, newDatabase(t), townMap)
	c := join(t, ctx, r, newCharacter("speeder"))
	w := c.Welcome()
	step := float64(w.PlayerSpeed) / float64(w.TickRate)
	origin := c.Snapshot().Self

	for i, in := range []protocol.Input{{X: 30}, {X: 0.8, Y: 0.8}, {X: -1.01}, {X: 1, Y: 1}, {X: 0, Y: -1e30}} {
		in.Seq = uint32(1_000_000 + i)
		seq, err := c.Command(protocol.FeatureMovement, protocol.ActionInput, protocol.MovementInput{Inputs: []protocol.Input{in}})
		if err != nil {
			t.Fatal(err)
		}
		if ack := waitAck(t, ctx, c, seq); ack.OK || ack.Code != protocol.CodeInvalidAction {
			t.Errorf("direction (%v, %v): %+v, want invalid_action", in.X, in.Y, ack)
		}
	}
	for i, x := range []string{`1e39`, `-1e39`, `"NaN"`, `"Infinity"`, `true`} {
		seq := uint32(60_000 + i)
		raw := fmt.Sprintf(`{"v":1,"kind":"command","seq":%d,"feature":"movement","action":"input","payload":{"inputs":[{"seq":%d,"x":%s,"y":0}]}}`,
			seq, 2_000_000+i, x)
		if err := c.SendRaw(websocket.TextMessage, []byte(raw)); err != nil {
			t.Fatal(err)
		}
		if ack := waitAck(t, ctx, c, seq); ack.OK || ack.Code != protocol.CodeBadRequest {
			t.Errorf("x = %s: %+v, want bad_request", x, ack)
		}
	}
	seq, err := c.MoveSteps(0, 0, 1) // a standstill input: once it is applied, every refused one would have been too
	if err != nil {
		t.Fatal(err)
	}
	s, err := c.WaitFor(ctx, func(s client.State) bool { return s.AckSeq >= seq })
	if err != nil {
		t.Fatal(err)
	}
	if d := math.Hypot(float64(s.Self.X-origin.X), float64(s.Self.Y-origin.Y)); d > 1e-3 {
		t.Fatalf("refused inputs moved the player %.3f units", d)
	}

	// Stuffing: 10 messages of 40 full-speed inputs each, turning a
	// quarter each message so the player stays clear of the map's edge.
	dirs := [][2]float32{{1, 0}, {0, 1}, {-1, 0}, {0, -1}}
	for i := range 10 {
		d := dirs[i%len(dirs)]
		if _, err := c.MoveSteps(d[0], d[1], 40); err != nil {
			t.Fatal(err)
		}
	}
	var samples []sample
	from := s.Tick
	if _, err := c.WaitFor(ctx, func(s client.State) bool {
		if len(samples) == 0 || samples[len(samples)-1].tick != s.Tick {
			samples = append(samples, sample{s.Tick, s.Self.X, s.Self.Y})
		}
		return s.Tick >= from+uint64(2*w.TickRate)
	}); err != nil {
		t.Fatal(err)
	}
	fastest, moved := 0.0, 0.0
	for i := 1; i < len(samples); i++ {
		a, b := samples[i-1], samples[i]
		d := math.Hypot(float64(b.x-a.x), float64(b.y-a.y))
		ticks := float64(b.tick - a.tick)
		moved += d
		fastest = max(fastest, d/ticks)
		// The direction may be 0.001 over 1 (rounding), and each position
		// is sent rounded to the wire's 1/16 grid: up to half a step off
		// on each axis at either end.
		grid := math.Sqrt2 / protocol.PositionScale
		if limit := step*ticks*1.001 + grid; d > limit {
			t.Errorf("ticks %d..%d: moved %.3f units, the speed allows %.3f", a.tick, b.tick, d, limit)
		}
	}
	if moved == 0 {
		t.Fatal("the stuffed inputs moved nothing: cannot check the speed clamp")
	}
	record(t, "fastest movement under input stuffing", "%.3f units/tick, clamp %.3f (%d snapshots over %d ticks)",
		fastest, step, len(samples), samples[len(samples)-1].tick-samples[0].tick)
	m := r.metrics()
	record(t, "inputs dropped by the backlog bound", "%v", m["roomkeeper_roomserver_dropped_inputs_total"])
	logResources(t, r, "after the speed hacks")
}

// waitAck waits for the ack of the command with seq.
func waitAck(t *testing.T, ctx context.Context, c *client.Client, seq uint32) protocol.Ack {
	t.Helper()
	var ack protocol.Ack
	if _, err := c.WaitFor(ctx, func(s client.State) bool {
		for _, a := range s.Acks {
			if a.Seq == seq {
				ack = a
				return true
			}
		}
		return false
	}); err != nil {
		t.Fatalf("no ack for command %d: %v", seq, err)
	}
	return ack
}
