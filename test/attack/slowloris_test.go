package attack

import (
	"context"
	"fmt"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/gorilla/websocket"

	"github.com/roomkeeper/roomkeeper/internal/protocol"
)

// The silent crowd: 2,000 connections that never say hello, from 8
// loopback addresses (250 each, under the per-address cap of 256), and
// one more address that fills its cap and is refused past it.
const (
	silentAddresses  = 8
	silentPerAddress = 250
	perAddressCap    = 256 // docs/protocol.md: connections before hello per source address
	dialWorkers      = 16
	chatterEvery     = 500 * time.Millisecond
	// maxLeftoverHeap bounds the heap still in use after the crowd left
	// and a GC: far less than the crowd's ~120 MiB, more than the
	// player's seat and the runtime's own noise.
	maxLeftoverHeap = 16 << 20
)

// silentConn is one connection of the crowd.
type silentConn struct {
	p      *peer
	opened time.Time
	// chatty ones send WebSocket pings and pongs until closed; garbage
	// ones a binary and a non-JSON frame. Neither may extend the hello
	// timeout.
	chatty, garbage bool
}

// loopback is 127.0.0.n.
func loopback(n int) net.IP { return net.IPv4(127, 0, 0, byte(n)) }

// TestSilentConnectionsAreClosedAndCapped: 2,000 connections that never
// say hello (some chatting with pings and pongs meanwhile) are all closed
// by the hello timeout, and those that send garbage at once; an address at its cap of connections
// before hello is refused with 429; a real player joins during all this;
// afterwards the server is back to its goroutines of before.
func TestSilentConnectionsAreClosedAndCapped(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), helloTimeout+90*time.Second)
	defer cancel()
	r := startServer(t, newDatabase(t), townMap, "--pprof") // pprof: to collect garbage on demand
	const idle = `roomkeeper_roomserver_disconnects_total{reason="idle_timeout"}`
	idleBefore := r.metrics()[idle]
	r.collectGarbage()
	base := logResources(t, r, "before the crowd (after a GC)")

	var mu sync.Mutex
	var crowd []*silentConn
	dialStart := time.Now()
	addresses := make(chan net.IP)
	errs := make(chan error, dialWorkers)
	var workers sync.WaitGroup
	for range dialWorkers {
		workers.Go(func() {
			for ip := range addresses {
				conn, status, err := dialRaw(ctx, r, dialOptions{local: ip})
				if err != nil {
					errs <- fmt.Errorf("a silent connection from %s under the cap was refused (HTTP %d): %w", ip, status, err)
					return
				}
				sc := &silentConn{p: newPeer(t, conn), opened: time.Now()}
				mu.Lock()
				n := len(crowd)
				sc.chatty, sc.garbage = n%5 == 0, n%50 == 1
				crowd = append(crowd, sc)
				mu.Unlock()
			}
		})
	}
	go func() {
		defer close(addresses)
		for a := range silentAddresses {
			for range silentPerAddress {
				select {
				case addresses <- loopback(2 + a):
				case <-ctx.Done():
					return
				}
			}
		}
		for range perAddressCap {
			select {
			case addresses <- loopback(2 + silentAddresses):
			case <-ctx.Done():
				return
			}
		}
	}()
	workers.Wait()
	close(errs)
	if err := <-errs; err != nil {
		t.Fatal(err)
	}
	total := silentAddresses*silentPerAddress + perAddressCap
	if len(crowd) != total {
		t.Fatalf("%d silent connections opened, want %d", len(crowd), total)
	}
	record(t, "opening the silent connections", "%d in %s", total, time.Since(dialStart).Round(time.Millisecond))

	capped := loopback(2 + silentAddresses)
	if conn, status, err := dialRaw(ctx, r, dialOptions{local: capped}); err == nil || status != 429 {
		if conn != nil {
			_ = conn.Close()
		}
		t.Fatalf("connection %d before hello from %s: HTTP %d (%v), want 429", perAddressCap+1, capped, status, err)
	}
	peak := logResources(t, r, fmt.Sprintf("with %d connections before hello", total))
	record(t, "per silent connection", "%.1f KiB RSS, %.2f goroutines",
		float64(peak.rssKiB-base.rssKiB)/float64(total), float64(peak.goroutines-base.goroutines)/float64(total))

	for _, sc := range crowd {
		if sc.garbage {
			_ = sc.p.conn.WriteMessage(websocket.BinaryMessage, []byte{1, 2, 3})
			_ = sc.p.send([]byte("{not json"))
		}
	}
	chatterDone := make(chan struct{})
	go chatter(ctx, crowd, chatterDone)

	joinStart := time.Now()
	player := join(t, ctx, r, newCharacter("legit"))
	record(t, "a real player's join during the crowd", "%s, with %d connections before hello open",
		time.Since(joinStart).Round(time.Millisecond), stillOpen(crowd))

	// Every connection is closed by the hello timeout, the chatty ones
	// included: the wait outlasts the timeout by far, and the chatter goes
	// on until each connection closes.
	eventually(t, helloTimeout+60*time.Second, func() error {
		if open := stillOpen(crowd); open > 0 {
			return fmt.Errorf("%d of %d connections that never said hello are still open", open, total)
		}
		return nil
	})
	<-chatterDone
	var longest, longestChatty time.Duration
	garbled := 0
	for _, sc := range crowd {
		s := sc.p.snapshot()
		if s.welcome != nil {
			t.Fatal("a connection without hello was welcomed")
		}
		if sc.garbage {
			garbled++
			if s.count(protocol.CodeBadRequest) != 1 {
				t.Errorf("garbage before hello answered %+v, want one bad_request, then the close", s.errors)
			}
		}
		lived := s.closedAt.Sub(sc.opened)
		longest = max(longest, lived)
		if sc.chatty {
			longestChatty = max(longestChatty, lived)
		}
	}
	record(t, "longest-lived connection without hello", "%s (chatty: %s; hello timeout %s)",
		longest.Round(time.Millisecond), longestChatty.Round(time.Millisecond), helloTimeout)
	if n := r.metrics()[idle] - idleBefore; n < float64(total-garbled) {
		t.Errorf("the server counts %v idle_timeout disconnects, want at least %d (one per silent connection)", n, total-garbled)
	}

	// The capped address has its places back, and the player still plays.
	conn, status, err := dialRaw(ctx, r, dialOptions{local: capped})
	if err != nil {
		t.Fatalf("after the crowd left, %s is still refused (HTTP %d): %v", capped, status, err)
	}
	_ = conn.Close()
	expectPlaying(t, ctx, player, "the real player")
	_ = player.Close()
	eventually(t, 30*time.Second, func() error {
		if g := int(r.metrics()["go_goroutines"]); g > base.goroutines+20 {
			return fmt.Errorf("%d goroutines after the crowd left, %d before it", g, base.goroutines)
		}
		return nil
	})
	// With the crowd gone nothing allocates enough to start a GC cycle
	// soon: the heap in use shows what was allocated for the crowd until
	// one runs. After a forced one, nothing of it may still be live.
	logResources(t, r, "after the crowd left")
	r.collectGarbage()
	after := logResources(t, r, "after the crowd left, after a GC")
	if leftover := after.heapBytes - base.heapBytes; leftover > maxLeftoverHeap {
		t.Errorf("%.1f MiB more heap in use after the crowd left and a GC than before it: "+
			"connections that never said hello leave memory behind", leftover/(1<<20))
	}
}

// stillOpen counts the connections of crowd that have not closed.
func stillOpen(crowd []*silentConn) int {
	open := 0
	for _, sc := range crowd {
		if !closed(sc.p) {
			open++
		}
	}
	return open
}

// chatter sends a WebSocket ping and pong on every chatty connection of
// crowd every chatterEvery, until each has closed or ctx ends.
func chatter(ctx context.Context, crowd []*silentConn, done chan<- struct{}) {
	defer close(done)
	tick := time.NewTicker(chatterEvery)
	defer tick.Stop()
	for {
		open := 0
		for _, sc := range crowd {
			if !sc.chatty {
				continue
			}
			if closed(sc.p) {
				continue
			}
			open++
			deadline := time.Now().Add(time.Second)
			_ = sc.p.conn.WriteControl(websocket.PingMessage, []byte("hi"), deadline)
			_ = sc.p.conn.WriteControl(websocket.PongMessage, nil, deadline)
		}
		if open == 0 {
			return
		}
		select {
		case <-tick.C:
		case <-ctx.Done():
			return
		}
	}
}
