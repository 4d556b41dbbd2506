package roomserver

import (
	"context"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/gorilla/websocket"

	"github.com/roomkeeper/roomkeeper/internal/protocol"
	"github.com/roomkeeper/roomkeeper/pkg/client"
)

func closedWith(err error, code int) bool {
	var ce *websocket.CloseError
	return errors.As(err, &ce) && ce.Code == code
}

func TestBinarySnapshotsDecodeAndUseDeltas(t *testing.T) {
	h := newHarness(t, nil)
	c := h.dial(protocol.Hello{Ticket: h.ticket()}, client.Options{Codec: protocol.CodecBinary})
	if c.Welcome().Codec != protocol.CodecBinary {
		t.Fatalf("codec = %s", c.Welcome().Codec)
	}
	walk(t, c, -1, 0, 12) // inputs carry acks, so later snapshots are deltas
	s := waitFor(t, c, "binary snapshots", func(s client.State) bool { return s.Snapshots >= 10 && s.Sees(c.Welcome().PlayerID) })
	if s.Closed != nil {
		t.Fatal(s.Closed)
	}
	body := get(t, h.http.URL+"/metrics")
	if !strings.Contains(body, `roomkeeper_roomserver_snapshot_bytes_count{codec="binary"}`) {
		t.Error("no binary snapshots were counted")
	}
}

// TestBinaryInputFramesMoveThePlayer: a binary-codec client's movement
// goes as binary input frames; the server applies them in order and the
// client's prediction (with the quantized directions) lands where the
// server says. A bad frame is refused and the connection stays; a JSON
// client's binary frame is refused.
func TestBinaryInputFramesMoveThePlayer(t *testing.T) {
	h := newHarness(t, nil)
	c := h.dial(protocol.Hello{Ticket: h.ticket()}, client.Options{Codec: protocol.CodecBinary})
	start := waitFor(t, c, "first snapshot", func(s client.State) bool { return s.Snapshots > 0 && s.Sees(c.Welcome().PlayerID) })
	var s client.State
	for _, d := range [][2]float32{{0.6, 0.8}, {-0.28, 0.96}, {0.6, 0.8}} { // each within the backlog of 8
		seq, err := c.MoveSteps(d[0], d[1], 7)
		if err != nil {
			t.Fatal(err)
		}
		s = waitFor(t, c, "the inputs applied", func(s client.State) bool { return s.AckSeq == seq && s.Pending == 0 })
	}
	if s.Self.Y <= start.Self.Y {
		t.Errorf("walking north moved y %v -> %v", start.Self.Y, s.Self.Y)
	}
	if s.PredictedX != s.Self.X || s.PredictedY != s.Self.Y {
		t.Errorf("prediction (%v,%v), server (%v,%v)", s.PredictedX, s.PredictedY, s.Self.X, s.Self.Y)
	}
	if err := c.SendRaw(websocket.BinaryMessage, []byte{protocol.InputMagic, protocol.InputVersion, 0, 1, 0}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, c, "the bad frame refused", func(s client.State) bool { return len(s.Errors) == 1 && s.Errors[0].Code == protocol.CodeBadRequest })
	if err := c.Ping(); err != nil {
		t.Fatal(err)
	}
	waitFor(t, c, "a pong after the bad frame", func(s client.State) bool { return len(s.RTTs) > 0 })

	plain := h.join()
	frame := protocol.AppendBinaryInput(nil, 0, []protocol.Input{{Seq: 1, X: 1}})
	if err := plain.SendRaw(websocket.BinaryMessage, frame); err != nil {
		t.Fatal(err)
	}
	waitFor(t, plain, "a JSON client's binary frame refused", func(s client.State) bool { return len(s.Errors) == 1 && s.Errors[0].Code == protocol.CodeBadRequest })
}

func TestSlowReaderIsDroppedWithoutStallingTheTick(t *testing.T) {
	h := newHarness(t, func(c *Config) {
		c.SendQueue, c.WriteTimeout, c.SnapshotRate, c.TickRate = 4, 300*time.Millisecond, 30, 30
		c.MapConfig = []byte(`{"seed":9,"width":512,"height":512,"npcDensity":0.6}`) // big snapshots
		c.CellSize = 256                                                             // and many entities in view
	})
	healthy := h.join()

	// The slow client says hello and then never reads; its tiny receive
	// buffer fills at once, so the server's writes to it block.
	dialer := websocket.Dialer{Subprotocols: []string{protocol.Subprotocol},
		NetDialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
			conn, err := (&net.Dialer{}).DialContext(ctx, network, addr)
			if tcp, ok := conn.(*net.TCPConn); ok {
				_ = tcp.SetReadBuffer(1024)
			}
			return conn, err
		}}
	slow, resp, err := dialer.Dial(h.url, nil)
	if err != nil {
		t.Fatal(err)
	}
	_ = resp.Body.Close()
	defer slow.Close()
	hello, _ := protocol.MarshalMessage(protocol.KindHello, 1, protocol.Hello{Ticket: h.ticket()})
	if err := slow.WriteMessage(websocket.TextMessage, hello); err != nil {
		t.Fatal(err)
	}

	poll(t, func() error {
		if !strings.Contains(get(t, h.http.URL+"/metrics"), `roomkeeper_roomserver_disconnects_total{reason="write_failed"}`) {
			return errors.New("the slow reader was never disconnected")
		}
		return nil
	})
	// Meanwhile the world ticked and the healthy client kept getting snapshots.
	before := healthy.Snapshot().Snapshots
	waitFor(t, healthy, "more snapshots", func(s client.State) bool { return s.Snapshots > before+5 })
}

func TestOriginAllowList(t *testing.T) {
	h := newHarness(t, func(c *Config) { c.AllowedOrigins = []string{"https://game.example"} })
	good := http.Header{"Origin": {"https://game.example"}}
	if _, err := client.Dial(context.Background(), h.url, protocol.Hello{Ticket: h.ticket()}, client.Options{Header: good}); err != nil {
		t.Fatalf("allowed origin refused: %v", err)
	}
	evil := http.Header{"Origin": {"https://evil.example"}}
	if _, err := client.Dial(context.Background(), h.url, protocol.Hello{Ticket: h.ticket()}, client.Options{Header: evil}); err == nil {
		t.Fatal("a foreign origin was let in")
	}
}

func TestSubprotocolIsRequired(t *testing.T) {
	h := newHarness(t, nil)
	conn, resp, err := websocket.DefaultDialer.Dial(h.url, nil)
	if err != nil {
		t.Fatal(err)
	}
	_ = resp.Body.Close()
	defer conn.Close()
	_ = conn.SetReadDeadline(time.Now().Add(10 * time.Second))
	_, _, err = conn.ReadMessage()
	if !closedWith(err, websocket.CloseProtocolError) {
		t.Fatalf("without the subprotocol: %v, want close 1002", err)
	}
}

func TestIdleClientsAreDisconnected(t *testing.T) {
	h := newHarness(t, func(c *Config) { c.IdleTimeout, c.PingInterval = 300*time.Millisecond, time.Hour })
	c := h.join()
	if _, err := c.WaitFor(waitCtx(t), func(s client.State) bool { return s.Closed != nil }); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for !strings.Contains(get(t, h.http.URL+"/metrics"), `roomkeeper_roomserver_disconnects_total{reason="idle_timeout"} 1`) {
		if time.Now().After(deadline) {
			t.Fatal("the idle client's disconnect was not counted as idle_timeout")
		}
	}
}

// TestTheGamePortServesOnlyItsPath: the game listener upgrades at /ws and
// answers 404 elsewhere, so nothing but the game is reachable on it.
func TestTheGamePortServesOnlyItsPath(t *testing.T) {
	h := newHarness(t, nil)
	game := httptest.NewServer(h.srv.GameHandler())
	defer game.Close()
	for _, path := range []string{"/", "/metrics", "/healthz", "/ws/x", "/debug/pprof/"} {
		resp, err := http.Get(game.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		_ = resp.Body.Close()
		if resp.StatusCode != http.StatusNotFound {
			t.Errorf("GET %s on the game port: %d, want 404", path, resp.StatusCode)
		}
	}
	c, err := client.Dial(context.Background(), "ws"+strings.TrimPrefix(game.URL, "http")+"/ws", protocol.Hello{Ticket: h.ticket()}, client.Options{})
	if err != nil {
		t.Fatalf("joining at /ws on the game port: %v", err)
	}
	_ = c.Close()
}
