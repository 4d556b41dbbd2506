package roomserver

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/gorilla/websocket"

	"github.com/roomkeeper/roomkeeper/internal/protocol"
	"github.com/roomkeeper/roomkeeper/pkg/client"
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

// dialRaw opens a WebSocket to h without saying hello.
func dialRaw(t *testing.T, h *harness) (*websocket.Conn, int) {
	t.Helper()
	d := websocket.Dialer{Subprotocols: []string{protocol.Subprotocol}}
	conn, resp, err := d.Dial(h.url, nil)
	status := 0
	if resp != nil {
		status = resp.StatusCode
		_ = resp.Body.Close()
	}
	if err != nil {
		return nil, status
	}
	t.Cleanup(func() { _ = conn.Close() })
	return conn, status
}

// TestNothingBeforeHelloKeepsAConnection: pongs, pings and binary frames
// sent before hello do not extend the hello timeout.
func TestNothingBeforeHelloKeepsAConnection(t *testing.T) {
	h := newHarness(t, func(c *Config) { c.HelloTimeout = 500 * time.Millisecond })
	conn, _ := dialRaw(t, h)
	closed := make(chan error, 1)
	go func() {
		for {
			if _, _, err := conn.ReadMessage(); err != nil {
				closed <- err
				return
			}
		}
	}()
	start := time.Now()
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	giveUp := time.NewTimer(10 * time.Second)
	defer giveUp.Stop()
	for i := 0; ; i++ {
		select {
		case err := <-closed:
			if took := time.Since(start); took > 3*time.Second {
				t.Fatalf("closed (%v) after %v of chatter, want at the hello timeout", err, took)
			}
			return
		case <-tick.C:
			deadline := time.Now().Add(time.Second)
			_ = conn.WriteControl(websocket.PongMessage, nil, deadline)
			_ = conn.WriteControl(websocket.PingMessage, nil, deadline)
			_ = conn.WriteMessage(websocket.BinaryMessage, []byte{byte(i)})
		case <-giveUp.C:
			t.Fatal("a connection that never said hello is still open after 10 s")
		}
	}
}

// TestConnectionsBeforeHelloAreCapped: one address may hold only so many
// connections that have not said hello; one that says hello frees its
// place.
func TestConnectionsBeforeHelloAreCapped(t *testing.T) {
	h := newHarness(t, func(c *Config) { c.MaxUnseated, c.MaxUnseatedPerAddress = 10, 3 })
	var waiting []*websocket.Conn
	for range 3 {
		conn, _ := dialRaw(t, h)
		if conn == nil {
			t.Fatal("refused under the cap")
		}
		waiting = append(waiting, conn)
	}
	if conn, status := dialRaw(t, h); conn != nil || status != 429 {
		t.Fatalf("a fourth silent connection from one address: status %d, want 429", status)
	}
	if _, err := client.Dial(context.Background(), h.url, protocol.Hello{Ticket: h.ticket()}, client.Options{}); !errors.Is(err, client.ErrBusy) {
		t.Fatalf("the client's dial meanwhile: %v, want ErrBusy", err)
	}
	hello, err := encodeHello(h.ticket())
	if err != nil {
		t.Fatal(err)
	}
	if err := waiting[0].WriteMessage(websocket.TextMessage, hello); err != nil {
		t.Fatal(err)
	}
	poll(t, func() error { // the seated one's place is free again
		if conn, _ := dialRaw(t, h); conn == nil {
			return errors.New("a hello did not free its place")
		}
		return nil
	})
}

func encodeHello(ticket string) ([]byte, error) {
	return protocol.MarshalMessage(protocol.KindHello, 1, protocol.Hello{Ticket: ticket})
}
