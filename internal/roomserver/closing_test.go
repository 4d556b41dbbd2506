package roomserver

import (
	"context"
	"fmt"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/roomkeeper/roomkeeper/internal/protocol"
	"github.com/roomkeeper/roomkeeper/pkg/client"
)

// TestPlayersBehindAProxyHearTheGoodbyeWhileTheyMove: players who keep
// moving while the server closes their connections, through a reverse
// proxy as a Gateway's players are, each get the server's event and its
// close frame. Closed at once, a connection with a move still unread was
// reset, and the proxy could drop the player's side before passing on
// what came before the reset (1006, no close frame): a few of 60 players
// in one run of 10 on a busy machine.
func TestPlayersBehindAProxyHearTheGoodbyeWhileTheyMove(t *testing.T) {
	h := newHarness(t, nil)
	backend, err := url.Parse(h.http.URL)
	if err != nil {
		t.Fatal(err)
	}
	proxy := httptest.NewServer(httputil.NewSingleHostReverseProxy(backend))
	t.Cleanup(proxy.Close)
	endpoint := "ws" + strings.TrimPrefix(proxy.URL, "http") + "/ws"

	// A patient handshake: the test runs beside every other package's,
	// under the race detector, and fewer players or binary snapshots
	// (less in flight) did not show the reset in 20 runs.
	// Each moves as soon as it is in: one idle while the others dial (two
	// minutes once, under that load) is cut by the IdleTimeout, and never
	// gets an ack.
	players := make([]*client.Client, 60)
	var moving sync.WaitGroup
	for i := range players {
		c, err := client.Dial(context.Background(), endpoint, protocol.Hello{Ticket: h.ticket()},
			client.Options{HandshakeTimeout: time.Minute})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = c.Close() })
		players[i] = c
		moving.Go(func() { keepMoving(c) })
	}
	for i, p := range players {
		waitFor(t, p, fmt.Sprintf("player %d's first ack", i), func(s client.State) bool { return s.AckSeq > 0 })
	}

	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := h.srv.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
	for i, p := range players {
		s := waitFor(t, p, "the close", func(s client.State) bool { return s.Closed != nil })
		if !closedWith(s.Closed, 1001) || !sawEvent(s, protocol.EventServerShutdown) {
			t.Errorf("player %d: closed %v, events %+v: want server_shutdown then 1001", i, s.Closed, s.Events)
		}
	}
	moving.Wait()
}

// keepMoving moves p a step at a time, under the message rate a client
// is allowed, until its connection is closed.
func keepMoving(p *client.Client) {
	for p.Snapshot().Closed == nil {
		if _, err := p.MoveSteps(1, 0, 1); err != nil {
			return
		}
		time.Sleep(20 * time.Millisecond) // a player's pace, not a wait for a condition
	}
}

func sawEvent(s client.State, kind string) bool {
	for _, e := range s.Events {
		if e.Type == kind {
			return true
		}
	}
	return false
}

// TestAClientThatNeverClosesIsCutAfterTheLinger: the server waits for a
// client's close after its own for WriteTimeout only, so a client that
// neither reads nor closes does not hold up a shutdown.
func TestAClientThatNeverClosesIsCutAfterTheLinger(t *testing.T) {
	h := newHarness(t, func(c *Config) { c.HelloTimeout = time.Minute })
	dialRaw(t, h) // never reads, never closes
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	// Shutdown keeps a reserve of its time for the final checkpoint and
	// cuts short the clients that outlast the rest, with an error.
	if err := h.srv.Shutdown(ctx); err != nil {
		t.Fatalf("the shutdown waited on a silent client: %v", err)
	}
}
