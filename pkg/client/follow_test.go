package client

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gorilla/websocket"

	"github.com/roomkeeper/roomkeeper/internal/mapgen"
	"github.com/roomkeeper/roomkeeper/internal/protocol"
)

// scriptedServer answers the n-th hello (from 0) with what answer says:
// a message to send (a welcome, an error), and more to send after it; a
// nil message cuts the connection there, as a network failure would.
// It stands in for room servers only to drive the client's transfer
// rules; internal/roomserver tests transfers against the real server.
func scriptedServer(t *testing.T, answer func(n int, hello protocol.Hello) [][]byte) (url string, hellos func() []protocol.Hello) {
	handler, hellos := scriptedHandler(answer)
	srv := httptest.NewServer(handler)
	t.Cleanup(srv.Close)
	return "ws" + strings.TrimPrefix(srv.URL, "http"), hellos
}

// scriptedHandler is scriptedServer's handler.
func scriptedHandler(answer func(n int, hello protocol.Hello) [][]byte) (http.Handler, func() []protocol.Hello) {
	var mu sync.Mutex
	var seen []protocol.Hello
	upgrader := websocket.Upgrader{Subprotocols: []string{protocol.Subprotocol}}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			conn, err := upgrader.Upgrade(w, r, nil)
			if err != nil {
				return
			}
			defer conn.Close()
			_, data, err := conn.ReadMessage()
			if err != nil {
				return
			}
			var hello protocol.Hello
			if env, err := protocol.DecodeEnvelope(data); err == nil {
				_ = protocol.DecodePayload(env, &hello)
			}
			mu.Lock()
			n := len(seen)
			seen = append(seen, hello)
			mu.Unlock()
			for _, msg := range answer(n, hello) {
				if msg == nil {
					_ = conn.UnderlyingConn().Close()
					return
				}
				_ = conn.WriteMessage(websocket.TextMessage, msg)
			}
			_, _, _ = conn.ReadMessage() // until the client hangs up
		}), func() []protocol.Hello {
			mu.Lock()
			defer mu.Unlock()
			return append([]protocol.Hello(nil), seen...)
		}
}

func message(t *testing.T, kind protocol.Kind, payload any) []byte {
	t.Helper()
	data, err := protocol.MarshalMessage(kind, 0, payload)
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// welcomeTo is a welcome to a small generated map, its hash right.
func welcomeTo(t *testing.T, instance string) []byte {
	t.Helper()
	return welcomeWithToken(t, instance, "")
}

// welcomeWithToken is welcomeTo with a resume token.
func welcomeWithToken(t *testing.T, instance, resumeToken string) []byte {
	t.Helper()
	config := []byte(`{"seed":42,"width":64,"height":64}`)
	cfg, err := mapgen.ParseConfig(config)
	if err != nil {
		t.Fatal(err)
	}
	world, err := mapgen.Generate(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return message(t, protocol.KindWelcome, protocol.Welcome{PlayerID: 1, TickRate: 20, PlayerSpeed: 48,
		Instance: instance, MapConfig: config, MapHash: world.Hash, ResumeToken: resumeToken})
}

func refusal(t *testing.T, code protocol.Code) []byte {
	return message(t, protocol.KindError, protocol.Error{Code: code, Message: "refused"})
}

// sourceSending is a map that welcomes and then sends the player to dest.
func sourceSending(t *testing.T, dest string, later func(n int) [][]byte) (string, func() []protocol.Hello) {
	return scriptedServer(t, func(n int, _ protocol.Hello) [][]byte {
		if n > 0 {
			return later(n)
		}
		return [][]byte{welcomeTo(t, "source"), message(t, protocol.KindTransfer, protocol.Transfer{
			Endpoint: dest, Ticket: "go", ReturnTicket: "back", Map: "dest", Instance: "dest"})}
	})
}

// TestATransferRefusedForTheMomentIsTriedAgain: a destination that cannot
// admit the player just now (its database restarting) is asked again,
// with the same ticket, and the player crosses.
func TestATransferRefusedForTheMomentIsTriedAgain(t *testing.T) {
	dest, destHellos := scriptedServer(t, func(n int, _ protocol.Hello) [][]byte {
		if n < 2 {
			return [][]byte{refusal(t, protocol.CodePersistenceUnavailable)}
		}
		return [][]byte{welcomeTo(t, "dest")}
	})
	source, _ := sourceSending(t, dest, func(int) [][]byte { return [][]byte{refusal(t, protocol.CodeTokenExpired)} })
	c, err := Dial(context.Background(), source, protocol.Hello{Ticket: "t"}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	s, err := c.WaitFor(ctx, func(s State) bool { return s.Transfers == 1 })
	if err != nil {
		t.Fatalf("the transfer did not go through: %v (state %+v)", err, s.Closed)
	}
	if c.Welcome().Instance != "dest" || s.Returns != 0 {
		t.Errorf("on %s after %d returns, want dest", c.Welcome().Instance, s.Returns)
	}
	for i, h := range destHellos() {
		if h.Ticket != "go" {
			t.Errorf("hello %d at the destination with ticket %q, want the transfer's", i, h.Ticket)
		}
	}
}

// TestAFailedTransferBothWaysJoinsAgain: when the destination and the way
// back both refuse for good, a client that reconnects by itself joins
// again (its seat on the source is gone) instead of closing.
func TestAFailedTransferBothWaysJoinsAgain(t *testing.T) {
	dest, _ := scriptedServer(t, func(int, protocol.Hello) [][]byte { return [][]byte{refusal(t, protocol.CodeTokenExpired)} })
	source, _ := sourceSending(t, dest, func(int) [][]byte { return [][]byte{refusal(t, protocol.CodeTokenReplayed)} })
	c, lobbyHellos := joinsAgainAfter(t, source, "no new join after the failed transfer")
	if h := lobbyHellos(); len(h) != 1 || h[0].Ticket != "fresh" || c.Welcome().Instance != "lobby" {
		t.Errorf("hellos at the new join's map %+v, on %s", h, c.Welcome().Instance)
	}
}

// TestATransferWhoseWayBackWasDownIsNotGivenUp: a resume answered with a
// transfer whose destination ticket has expired and whose way back finds
// the source's database down is only the moment: the client tries again,
// and once the source says the seat is gone it joins again. It gave up
// before, "coming back was refused" by the expired ticket
// (docs/benchmarks.md, "Twelfth session").
func TestATransferWhoseWayBackWasDownIsNotGivenUp(t *testing.T) {
	dest, _ := scriptedServer(t, func(int, protocol.Hello) [][]byte { return [][]byte{refusal(t, protocol.CodeTokenExpired)} })
	var resumes atomic.Int32
	source, _ := scriptedServer(t, func(n int, h protocol.Hello) [][]byte {
		switch {
		case n == 0:
			return [][]byte{welcomeWithToken(t, "source", "resume-1"), nil}
		case h.Ticket == "back":
			return [][]byte{refusal(t, protocol.CodePersistenceUnavailable)}
		}
		if resumes.Add(1) == 1 { // the seat left through a portal while away
			return [][]byte{message(t, protocol.KindTransfer, protocol.Transfer{Endpoint: dest, Ticket: "go", ReturnTicket: "back",
				Map: "dest", Instance: "dest", ExpiresAt: time.Now().Add(300 * time.Millisecond).UnixMilli()})}
		}
		return [][]byte{refusal(t, protocol.CodeTokenExpired)} // the transfer is over: the seat is gone
	})
	joinsAgainAfter(t, source, "the client did not join again after the crossing failed")
}

// joinsAgainAfter dials source with a Reconnect whose new joins go to a
// lobby map (ticket "fresh"), and waits for the client to have joined
// again once; it returns the client and the lobby's hellos.
func joinsAgainAfter(t *testing.T, source, failure string) (*Client, func() []protocol.Hello) {
	t.Helper()
	lobby, lobbyHellos := scriptedServer(t, func(int, protocol.Hello) [][]byte { return [][]byte{welcomeTo(t, "lobby")} })
	rejoin := &Reconnect{BaseDelay: time.Millisecond, MaxDelay: 5 * time.Millisecond,
		Rejoin: func(context.Context) (string, string, error) { return lobby, "fresh", nil }}
	c, err := Dial(context.Background(), source, protocol.Hello{Ticket: "t"}, Options{Reconnect: rejoin})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if s, err := c.WaitFor(ctx, func(s State) bool { return s.Rejoins == 1 }); err != nil {
		t.Fatalf("%s: %v (closed: %v)", failure, err, s.Closed)
	}
	return c, lobbyHellos
}

// TestAResumeAnsweredWithATransferFollowsIt: a client whose connection
// dropped while its portal transfer was decided resumes, and the map
// answers with the transfer (the seat left meanwhile): the client follows
// it to the destination instead of giving the seat up.
func TestAResumeAnsweredWithATransferFollowsIt(t *testing.T) {
	dest, destHellos := scriptedServer(t, func(int, protocol.Hello) [][]byte { return [][]byte{welcomeTo(t, "dest")} })
	source, sourceHellos := scriptedServer(t, func(n int, _ protocol.Hello) [][]byte {
		if n == 0 {
			return [][]byte{welcomeWithToken(t, "source", "resume-1"), nil}
		}
		return [][]byte{message(t, protocol.KindTransfer, protocol.Transfer{
			Endpoint: dest, Ticket: "go", ReturnTicket: "back", Map: "dest", Instance: "dest"})}
	})
	reconnect := &Reconnect{BaseDelay: time.Millisecond, MaxDelay: 5 * time.Millisecond}
	c, err := Dial(context.Background(), source, protocol.Hello{Ticket: "t"}, Options{Reconnect: reconnect})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	s, err := c.WaitFor(ctx, func(s State) bool { return s.Transfers == 1 })
	if err != nil {
		t.Fatalf("the transfer was not followed: %v (closed: %v)", err, s.Closed)
	}
	if h := sourceHellos(); len(h) != 2 || h[1].Resume != "resume-1" {
		t.Errorf("hellos at the source %+v, want the join and a resume with its token", h)
	}
	if h := destHellos(); len(h) != 1 || h[0].Ticket != "go" || c.Welcome().Instance != "dest" {
		t.Errorf("hellos at the destination %+v, on %s", h, c.Welcome().Instance)
	}
	if s.Reconnects != 1 || s.Resumes != 0 || s.Rejoins != 0 || s.Transfer == nil || s.Transfer.Ticket != "go" {
		t.Errorf("state after the transfer: %+v", s)
	}
}

// TestARefusalCloseSaysWhy: a connection the server closes for a policy
// violation ends with the explanation of the error the server sent before
// it, not the bare code.
func TestARefusalCloseSaysWhy(t *testing.T) {
	closed := &websocket.CloseError{Code: websocket.ClosePolicyViolation, Text: "unauthorized"}
	errs := []protocol.Error{{Code: protocol.CodeRateLimited, Message: "slow down"}, {Code: protocol.CodeUnauthorized, Message: "signed in elsewhere"}}
	if got := explained(closed, errs); !strings.Contains(got.Error(), "signed in elsewhere") || !errors.As(got, new(*websocket.CloseError)) {
		t.Errorf("explained = %v, want the close with the server's explanation", got)
	}
	if got := explained(closed, errs[:1]); got.Error() != closed.Error() {
		t.Errorf("explained by another error's message: %v", got)
	}
	normal := &websocket.CloseError{Code: websocket.CloseNormalClosure}
	if got := explained(normal, errs); got.Error() != normal.Error() {
		t.Errorf("a normal close explained: %v", got)
	}
}

// TestATransferOverTLSResumesTheSession: a client following a transfer to
// a wss:// endpoint it reached before (a handover behind one gateway)
// resumes its TLS session there rather than making a full handshake.
func TestATransferOverTLSResumesTheSession(t *testing.T) {
	var mu sync.Mutex
	var resumed []bool
	var url string
	handler, _ := scriptedHandler(func(n int, _ protocol.Hello) [][]byte {
		if n == 0 {
			return [][]byte{welcomeTo(t, "old"), message(t, protocol.KindTransfer, protocol.Transfer{
				Endpoint: url, Ticket: "go", ReturnTicket: "back", Map: "same", Instance: "new"})}
		}
		return [][]byte{welcomeTo(t, "new")}
	})
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		resumed = append(resumed, r.TLS.DidResume)
		mu.Unlock()
		handler.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	url = "wss" + strings.TrimPrefix(srv.URL, "https")
	roots := x509.NewCertPool()
	roots.AddCert(srv.Certificate())
	c, err := Dial(context.Background(), url, protocol.Hello{Ticket: "t"}, Options{TLSConfig: &tls.Config{RootCAs: roots, MinVersion: tls.VersionTLS12}})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if s, err := c.WaitFor(ctx, func(s State) bool { return s.Transfers == 1 }); err != nil {
		t.Fatalf("the transfer did not go through: %v (state %+v)", err, s.Closed)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(resumed) != 2 || resumed[0] || !resumed[1] {
		t.Fatalf("sessions resumed: %v, want a full handshake, then a resumed one", resumed)
	}
}
