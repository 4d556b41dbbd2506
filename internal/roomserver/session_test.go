package roomserver

import (
	"testing"
	"time"

	"github.com/gorilla/websocket"

	"github.com/roomkeeper/roomkeeper/internal/protocol"
)

// TestFloodWatch: a streak of refusals longer than the window is cut,
// whatever the rate and however many messages get through in between;
// replies come at most once a second; a quiet second ends the streak.
func TestFloodWatch(t *testing.T) {
	t0 := time.Unix(1000, 0)
	for _, every := range []time.Duration{200 * time.Microsecond, 10 * time.Millisecond, 500 * time.Millisecond} {
		var f floodWatch
		replies := 0
		var cutAt time.Duration
		for at := time.Duration(0); at < 10*time.Second; at += every {
			cut, reply := f.refused(t0.Add(at))
			if reply {
				replies++
			}
			if cut {
				cutAt = at
				break
			}
		}
		if cutAt <= floodWindow || cutAt > floodWindow+every {
			t.Errorf("refused every %v: cut at %v, want just after %v", every, cutAt, floodWindow)
		}
		if replies > 3 {
			t.Errorf("refused every %v: %d rate_limited replies before the cut, want at most one a second", every, replies)
		}
	}
	var f floodWatch
	f.refused(t0)
	f.refused(t0.Add(1500 * time.Millisecond)) // a quiet 1.5 s: a new streak
	if cut, _ := f.refused(t0.Add(3 * time.Second)); cut {
		t.Error("two short bursts 1.5 s apart were cut as one flood")
	}
}

// TestSteadyFloodIsCut: a client sending steadily above its limit is
// closed with 1008 rate_limited after the flood window, though the
// limiter lets some of its messages through, and it is answered
// rate_limited at most about once a second meanwhile.
func TestSteadyFloodIsCut(t *testing.T) {
	h := newHarness(t, nil) // 60 messages/s, bursts of 120
	c := h.join()
	tick := time.NewTicker(2 * time.Millisecond) // ~500 messages/s
	defer tick.Stop()
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline) && c.Snapshot().Closed == nil; {
		<-tick.C
		_ = c.Ping()
	}
	s := c.Snapshot()
	if !closedWith(s.Closed, websocket.ClosePolicyViolation) {
		t.Fatalf("a steady flood ended with %v, want a close with 1008", s.Closed)
	}
	limited := 0
	for _, e := range s.Errors {
		if e.Code == protocol.CodeRateLimited {
			limited++
		}
	}
	if limited == 0 || limited > 5 {
		t.Fatalf("%d rate_limited answers, want a few (at most one a second, then the closing one)", limited)
	}
}
