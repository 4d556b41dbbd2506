package client

import (
	"errors"
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/gorilla/websocket"

	"github.com/roomkeeper/roomkeeper/internal/protocol"
)

// TestReconnectDecisions: what ends a connection for good, what is worth
// a new join, and what is only the moment.
func TestReconnectDecisions(t *testing.T) {
	server := func(code protocol.Code) error { return fmt.Errorf("hello: %w", &ServerError{Code: code}) }
	api := func(status int) error { return &APIError{Status: status} }
	for _, tc := range []struct {
		name          string
		err           error
		gone, forGood bool
	}{
		{"a network failure", errors.New("connection refused"), false, false},
		{"a busy map", fmt.Errorf("dial: %w", ErrBusy), false, false},
		{"the database down", server(protocol.CodePersistenceUnavailable), false, false},
		{"a quarantined map", server(protocol.CodeMapQuarantined), false, false},
		{"a character a pending transfer holds", server(protocol.CodeAlreadyTaken), false, false},
		{"a character of another user", server(protocol.CodeNotOwner), false, true},
		{"a spent token", server(protocol.CodeTokenReplayed), true, true},
		{"an expired token", server(protocol.CodeTokenExpired), true, true},
		{"a map that is restarting (join API)", api(http.StatusConflict), false, false},
		{"rate limited (join API)", api(http.StatusTooManyRequests), false, false},
		{"an expired token (join API)", api(http.StatusUnauthorized), true, true},
		{"no such room (join API)", api(http.StatusNotFound), false, true},
	} {
		if got := seatGone(tc.err); got != tc.gone {
			t.Errorf("%s: seat gone %v, want %v", tc.name, got, tc.gone)
		}
		if got := refusedForGood(tc.err); got != tc.forGood {
			t.Errorf("%s: refused for good %v, want %v", tc.name, got, tc.forGood)
		}
	}
	// A crossing refused both ways: joining again helps once the map it
	// left says the transfer is over, whatever the destination said.
	for _, tc := range []struct {
		name     string
		crossing *CrossingError
		rejoin   bool
	}{
		{"the transfer over", &CrossingError{Forward: server(protocol.CodeTokenReplayed), Return: server(protocol.CodeTokenExpired)}, true},
		{"a busy destination, the transfer over", &CrossingError{Forward: server(protocol.CodeInternal), Return: server(protocol.CodeTokenExpired)}, true},
		{"the way back busy", &CrossingError{Forward: server(protocol.CodeTokenReplayed), Return: server(protocol.CodePersistenceUnavailable)}, false},
		{"the way back unreachable", &CrossingError{Forward: errors.New("timeout"), Return: errors.New("connection refused")}, false},
		{"the ticket expired, the way back's database down", &CrossingError{Forward: server(protocol.CodeTokenExpired), Return: server(protocol.CodePersistenceUnavailable)}, false},
	} {
		if got := rejoinable(fmt.Errorf("resume: %w", tc.crossing)); got != tc.rejoin {
			t.Errorf("%s: rejoinable %v, want %v", tc.name, got, tc.rejoin)
		}
		// Tried again while the way back refuses only the moment, whatever
		// the destination said.
		if got, want := refusedForGood(fmt.Errorf("resume: %w", tc.crossing)), refusedForGood(tc.crossing.Return); got != want {
			t.Errorf("%s: refused for good %v, want %v (the return's)", tc.name, got, want)
		}
	}
	if rejoinable(nil) {
		t.Error("no error is rejoinable")
	}
	for code, want := range map[int]bool{websocket.CloseGoingAway: true, websocket.CloseAbnormalClosure: true,
		websocket.CloseServiceRestart: true, websocket.CloseTryAgainLater: true, websocket.ClosePolicyViolation: false, websocket.CloseNormalClosure: false} {
		if got := recoverable(&websocket.CloseError{Code: code}); got != want {
			t.Errorf("close %d: recoverable %v, want %v", code, got, want)
		}
	}
}

// TestReconnectBackoffIsBoundedAndJittered: every wait lies between a
// millisecond and its ceiling, the ceiling doubles up to MaxDelay, and the
// waits vary.
func TestReconnectBackoffIsBoundedAndJittered(t *testing.T) {
	r := &Reconnect{}
	if r.attempts() != 60 {
		t.Errorf("default attempts %d, want 60", r.attempts())
	}
	seen := map[time.Duration]bool{}
	for n := range 40 {
		ceiling := min(200*time.Millisecond<<min(n, 20), 2*time.Second)
		for range 20 {
			d := r.delay(n)
			if d < time.Millisecond || d > ceiling+time.Millisecond {
				t.Fatalf("try %d waited %s, want 1ms..%s", n, d, ceiling)
			}
			seen[d] = true
		}
	}
	if len(seen) < 100 {
		t.Errorf("only %d different waits in 800: no jitter", len(seen))
	}
}
