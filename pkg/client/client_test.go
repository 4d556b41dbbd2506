package client

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/gorilla/websocket"

	"github.com/roomkeeper/roomkeeper/internal/mapgen"
	"github.com/roomkeeper/roomkeeper/internal/protocol"
)

// welcomingServer answers any hello with welcome. It stands in for a room
// server only to test the client's own checks; internal/roomserver tests
// the client against the real server.
func welcomingServer(t *testing.T, welcome protocol.Welcome) string {
	upgrader := websocket.Upgrader{Subprotocols: []string{protocol.Subprotocol}}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		conn, err := upgrader.Upgrade(w, r, nil)
		if err != nil {
			return
		}
		defer conn.Close()
		if _, _, err := conn.ReadMessage(); err != nil {
			return
		}
		data, _ := protocol.MarshalMessage(protocol.KindWelcome, 0, welcome)
		_ = conn.WriteMessage(websocket.TextMessage, data)
		_, _, _ = conn.ReadMessage() // until the client hangs up
	}))
	t.Cleanup(srv.Close)
	return "ws" + strings.TrimPrefix(srv.URL, "http")
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
		Combat:   []protocol.Health{{ID: 3, HP: 5}, {ID: 4, HP: 80}}}
	got := applyJSONSnapshot(base, delta)
	want := []protocol.EntityState{{ID: 1, Kind: 1, X: 2, Y: 1, HP: 100}, {ID: 3, Kind: 2, X: 9, Y: 9, HP: 5}, {ID: 4, Kind: 2, X: 3, Y: 3, HP: 80}}
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
	if err := c.applyEntities(5, 1, []protocol.EntityState{{ID: 9, Kind: protocol.EntityPlayer, X: x, Y: y}}, 10); err != nil {
		t.Fatal(err)
	}
	s := c.Snapshot()
	// Input 1 is applied (ackSeq 1); 2 and 3 are replayed: 3 units east, 3 south.
	if s.Pending != 2 || s.PredictedX != x+3 || s.PredictedY != y+3 {
		t.Errorf("pending %d predicted (%v,%v), want 2 at (%v,%v)", s.Pending, s.PredictedX, s.PredictedY, x+3, y+3)
	}
}
