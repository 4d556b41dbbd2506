package attack

import (
	"context"
	"encoding/binary"
	"strings"
	"testing"

	"github.com/gorilla/websocket"

	"github.com/roomkeeper/roomkeeper/internal/protocol"
)

// oversize is a text message one byte over the limit.
func oversize() []byte {
	msg := `{"v":1,"kind":"ping","seq":2,"payload":{"clientTime":1}`
	return []byte(msg + strings.Repeat(" ", protocol.MaxMessageBytes+1-len(msg)-1) + "}")
}

// expectClose waits until p is closed and asserts the close code.
func expectClose(t *testing.T, ctx context.Context, p *peer, code int) peerState {
	t.Helper()
	s, err := p.waitClosed(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if cc, reason := closeCode(s.closed); cc != code {
		t.Fatalf("closed with %d %q (%v), want %d", cc, reason, s.closed, code)
	}
	return s
}

// expectAlive fails unless p's connection still answers a ping.
func expectAlive(t *testing.T, ctx context.Context, p *peer, seq uint32) {
	t.Helper()
	pongs := p.snapshot().pongs
	if err := p.sendMessage(protocol.KindPing, seq, protocol.Ping{ClientTime: 1}); err != nil {
		t.Fatalf("the connection did not survive: %v", err)
	}
	if _, err := p.waitFor(ctx, "a pong", func(s peerState) bool { return s.pongs > pongs }); err != nil {
		t.Fatalf("the connection did not survive: %v", err)
	}
}

// TestOversizeMessagesClose1009: a message over 16 KiB closes the
// connection with 1009, before or after hello, in one frame or in
// fragments, or when a frame header merely declares a huge length; one
// of exactly 16 KiB is served.
func TestOversizeMessagesClose1009(t *testing.T) {
	ctx := caseContext(t)
	r := startServer(t, newDatabase(t), townMap)
	t.Run("before hello", func(t *testing.T) {
		conn, status, err := dialRaw(ctx, r, dialOptions{})
		if err != nil {
			t.Fatalf("dial (HTTP %d): %v", status, err)
		}
		p := newPeer(t, conn)
		if err := p.send(oversize()); err != nil {
			t.Fatal(err)
		}
		expectClose(t, ctx, p, websocket.CloseMessageTooBig)
	})
	t.Run("after hello", func(t *testing.T) {
		p := rawJoin(t, ctx, r, newCharacter("big"))
		if err := p.send(oversize()); err != nil {
			t.Fatal(err)
		}
		expectClose(t, ctx, p, websocket.CloseMessageTooBig)
	})
	t.Run("in 1 KiB fragments after hello", func(t *testing.T) {
		conn, status, err := dialRaw(ctx, r, dialOptions{writeBuffer: 1024})
		if err != nil {
			t.Fatalf("dial (HTTP %d): %v", status, err)
		}
		p := newPeer(t, conn)
		if err := p.sendMessage(protocol.KindHello, 1, protocol.Hello{Ticket: ticket(t, newCharacter("fragments"))}); err != nil {
			t.Fatal(err)
		}
		if _, err := p.waitFor(ctx, "welcome", func(s peerState) bool { return s.welcome != nil }); err != nil {
			t.Fatal(err)
		}
		// gorilla cuts a message into frames of its write buffer's size.
		if err := p.send(oversize()); err != nil {
			t.Fatal(err)
		}
		expectClose(t, ctx, p, websocket.CloseMessageTooBig)
	})
	t.Run("a header declaring a 1 TiB frame", func(t *testing.T) {
		p := rawJoin(t, ctx, r, newCharacter("liar"))
		header := []byte{0x81, 0x80 | 127} // FIN, text; masked, 64-bit length
		header = binary.BigEndian.AppendUint64(header, 1<<40)
		header = append(header, 1, 2, 3, 4) // mask key; no payload follows
		if _, err := p.conn.NetConn().Write(header); err != nil {
			t.Fatal(err)
		}
		expectClose(t, ctx, p, websocket.CloseMessageTooBig)
	})
	t.Run("control: exactly 16 KiB is served", func(t *testing.T) {
		p := rawJoin(t, ctx, r, newCharacter("limit"))
		msg := `{"v":1,"kind":"ping","seq":2,"payload":{"clientTime":1}`
		exact := msg + strings.Repeat(" ", protocol.MaxMessageBytes-len(msg)-1) + "}"
		if len(exact) != protocol.MaxMessageBytes {
			t.Fatalf("built %d bytes", len(exact))
		}
		if err := p.send([]byte(exact)); err != nil {
			t.Fatal(err)
		}
		if _, err := p.waitFor(ctx, "a pong to the 16 KiB ping", func(s peerState) bool { return s.pongs > 0 }); err != nil {
			t.Fatal(err)
		}
	})
	logResources(t, r, "after the oversize attacks")
}

// garbage are frames no client should send: [type, data].
var garbage = []struct {
	kind int
	data string
}{
	{websocket.BinaryMessage, "\x00\x01\x02binary"},
	{websocket.TextMessage, "{not json"},
	{websocket.TextMessage, "[]"},
	{websocket.TextMessage, "null"},
	{websocket.TextMessage, "\xff\xfe not utf-8"},
	{websocket.TextMessage, strings.Repeat("[", 10000)},
	{websocket.TextMessage, `{"v":2,"kind":"ping","payload":{"clientTime":1}}`},
	{websocket.TextMessage, `{"v":1,"kind":"ping","payload":{"clientTime":1}}{"v":1}`},
	{websocket.TextMessage, `{"v":1,"kind":"ping","payload":{"clientTime":1},"admin":true}`},
	{websocket.TextMessage, `{"v":1,"kind":"welcome","payload":{}}`},
	{websocket.TextMessage, `{"v":1,"kind":"dance","payload":{}}`},
	{websocket.TextMessage, `{"v":1,"kind":"ping","seq":99999999999,"payload":{"clientTime":1}}`},
	{websocket.TextMessage, `{"v":1,"kind":"ping","seq":-1,"payload":{"clientTime":1}}`},
	{websocket.TextMessage, `{"v":1,"kind":"ping","feature":"loot","payload":{"clientTime":1}}`},
	{websocket.TextMessage, `{"v":1,"kind":"command","feature":"movement","action":"fly","payload":{}}`},
	{websocket.TextMessage, `{"v":1,"kind":"command","feature":"admin","action":"grant","payload":{}}`},
}

// afterHelloGarbage are refused only once a client is seated (before
// hello, their kind is the problem).
var afterHelloGarbage = []string{
	`{"v":1,"kind":"hello","seq":40,"payload":{"ticket":"x"}}`,
	`{"v":1,"kind":"ping","seq":41}`,
	`{"v":1,"kind":"ping","seq":42,"payload":{"clientTime":"soon"}}`,
	`{"v":1,"kind":"command","seq":43,"feature":"loot","action":"pickup","payload":{"entity":-1}}`,
	`{"v":1,"kind":"command","seq":44,"feature":"loot","action":"pickup","payload":{"entity":1,"owner":"me"}}`,
	`{"v":1,"kind":"command","seq":45,"feature":"movement","action":"input","payload":{"inputs":"everywhere"}}`,
	`{"v":1,"kind":"command","seq":46,"feature":"inventory","action":"drop","payload":null}`,
}

// TestGarbageFramesAreRefused: malformed, binary and non-JSON frames are
// answered bad_request, before hello and after it; a seated client's
// connection survives them, one that has not said hello is closed with
// 1008 (docs/protocol.md, Envelope and Error codes).
// A first message that is well formed but not hello is a refused hello:
// bad_request and a close with 1008.
func TestGarbageFramesAreRefused(t *testing.T) {
	ctx := caseContext(t)
	r := startServer(t, newDatabase(t), townMap)
	t.Run("before hello", func(t *testing.T) {
		for _, g := range garbage { // each ends its connection: the first message must be a valid hello
			conn, status, err := dialRaw(ctx, r, dialOptions{})
			if err != nil {
				t.Fatalf("dial (HTTP %d): %v", status, err)
			}
			p := newPeer(t, conn)
			if err := conn.WriteMessage(g.kind, []byte(g.data)); err != nil {
				t.Fatalf("sending %.40q: %v", g.data, err)
			}
			s := expectClose(t, ctx, p, websocket.ClosePolicyViolation)
			if s.count(protocol.CodeBadRequest) != 1 || s.errorN != 1 {
				t.Fatalf("%.40q answered %+v, want one bad_request", g.data, s.errors)
			}
		}
	})
	for _, first := range []string{
		`{"v":1,"kind":"ping","seq":1,"payload":{"clientTime":1}}`,
		`{"v":1,"kind":"command","seq":1,"feature":"loot","action":"pickup","payload":{"entity":1}}`,
	} {
		t.Run("first message "+first[:25], func(t *testing.T) {
			conn, status, err := dialRaw(ctx, r, dialOptions{})
			if err != nil {
				t.Fatalf("dial (HTTP %d): %v", status, err)
			}
			p := newPeer(t, conn)
			if err := p.send([]byte(first)); err != nil {
				t.Fatal(err)
			}
			s := expectClose(t, ctx, p, websocket.ClosePolicyViolation)
			if s.count(protocol.CodeBadRequest) != 1 || s.welcome != nil {
				t.Fatalf("answered %+v %+v, want one bad_request", s.errors, s.acks)
			}
			if _, reason := closeCode(s.closed); reason != string(protocol.CodeBadRequest) {
				t.Fatalf("close reason %q, want %q", reason, protocol.CodeBadRequest)
			}
		})
	}
	t.Run("after hello", func(t *testing.T) {
		p := rawJoin(t, ctx, r, newCharacter("garbage"))
		for _, g := range garbage {
			if err := p.conn.WriteMessage(g.kind, []byte(g.data)); err != nil {
				t.Fatalf("sending %.40q: %v", g.data, err)
			}
		}
		for _, g := range afterHelloGarbage {
			if err := p.send([]byte(g)); err != nil {
				t.Fatal(err)
			}
		}
		want := len(garbage) + len(afterHelloGarbage)
		s, err := p.waitFor(ctx, "bad_request for each frame", func(s peerState) bool { return s.count(protocol.CodeBadRequest) >= want })
		if err != nil {
			t.Fatalf("%v (errors %+v, acks %+v)", err, s.errors, s.acks)
		}
		if n := s.count(protocol.CodeBadRequest); n != want || s.errorN+len(s.acks) != want {
			t.Fatalf("%d bad_request (of %d answers) for %d frames: errors %+v, acks %+v", n, s.errorN+len(s.acks), want, s.errors, s.acks)
		}
		expectAlive(t, ctx, p, 50)
	})
	t.Run("no subprotocol", func(t *testing.T) {
		conn, status, err := dialRaw(ctx, r, dialOptions{noSubprotocol: true})
		if err != nil {
			t.Fatalf("dial (HTTP %d): %v", status, err)
		}
		expectClose(t, ctx, newPeer(t, conn), websocket.CloseProtocolError)
	})
	logResources(t, r, "after the garbage attacks")
}
