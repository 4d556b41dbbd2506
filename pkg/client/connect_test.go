package client

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"sync/atomic"
	"testing"
	"time"

	"github.com/roomkeeper/roomkeeper/internal/protocol"
)

// rejoinWith is a reconnect policy whose Rejoin hands out ticket n for its
// n-th call (after the join API's answer for it, nil for none), to url.
func rejoinWith(url string, apiAnswer func(n int) error) (*Reconnect, *atomic.Int32) {
	var calls atomic.Int32
	return &Reconnect{BaseDelay: time.Millisecond, MaxDelay: 5 * time.Millisecond,
		Rejoin: func(context.Context) (string, string, error) {
			n := int(calls.Add(1)) - 1
			if err := apiAnswer(n); err != nil {
				return "", "", err
			}
			return url, fmt.Sprintf("ticket-%d", n), nil
		}}, &calls
}

// TestAFirstJoinRefusedForTheMomentIsTriedAgainWithANewTicket: a map
// whose database is away and then too busy, and a join API answering 500
// once, do not keep a player out; each try gets a ticket of its own.
func TestAFirstJoinRefusedForTheMomentIsTriedAgainWithANewTicket(t *testing.T) {
	url, hellos := scriptedServer(t, func(n int, _ protocol.Hello) [][]byte {
		switch n {
		case 0:
			return [][]byte{refusal(t, protocol.CodePersistenceUnavailable)}
		case 1:
			return [][]byte{refusal(t, protocol.CodeInternal)}
		}
		return [][]byte{welcomeTo(t, "town")}
	})
	policy, joins := rejoinWith(url, func(n int) error {
		if n == 1 {
			return &APIError{Status: http.StatusInternalServerError, Code: "internal", Message: "busy"}
		}
		return nil
	})
	c, err := Connect(context.Background(), Options{Reconnect: policy})
	if err != nil {
		t.Fatalf("Connect: %v", err)
	}
	defer c.Close()
	if got := c.Snapshot().JoinTries; got != 4 || joins.Load() != 4 {
		t.Errorf("in after %d tries (%d joins), want 4: two map refusals, one join API 500", got, joins.Load())
	}
	var tickets []string
	for _, h := range hellos() {
		tickets = append(tickets, h.Ticket)
	}
	if want := []string{"ticket-0", "ticket-2", "ticket-3"}; fmt.Sprint(tickets) != fmt.Sprint(want) {
		t.Errorf("hellos with tickets %v, want %v: a new ticket each try", tickets, want)
	}
}

// TestAFirstJoinRefusedForGoodIsNotTriedAgain: a refusal of the player
// (banned, unknown room) ends Connect at once, with the refusal.
func TestAFirstJoinRefusedForGoodIsNotTriedAgain(t *testing.T) {
	url, hellos := scriptedServer(t, func(int, protocol.Hello) [][]byte {
		return [][]byte{refusal(t, protocol.CodeBanned)}
	})
	policy, joins := rejoinWith(url, func(int) error { return nil })
	_, err := Connect(context.Background(), Options{Reconnect: policy})
	var se *ServerError
	if !errors.As(err, &se) || se.Code != protocol.CodeBanned {
		t.Fatalf("Connect: %v, want the map's %s", err, protocol.CodeBanned)
	}
	if joins.Load() != 1 || len(hellos()) != 1 {
		t.Errorf("%d joins and %d hellos, want one try", joins.Load(), len(hellos()))
	}

	policy, joins = rejoinWith(url, func(int) error {
		return &APIError{Status: http.StatusNotFound, Code: "not_found", Message: "no such room"}
	})
	if _, err := Connect(context.Background(), Options{Reconnect: policy}); err == nil || joins.Load() != 1 {
		t.Errorf("Connect to a room the join API does not know: %v after %d joins, want its 404 after one", err, joins.Load())
	}
}

// TestAFirstJoinGivesUpAfterTheAttemptsOrWithItsContext: a map that is
// never ready is tried Attempts times; a caller that stops waiting ends
// the tries.
func TestAFirstJoinGivesUpAfterTheAttemptsOrWithItsContext(t *testing.T) {
	url, _ := scriptedServer(t, func(int, protocol.Hello) [][]byte {
		return [][]byte{refusal(t, protocol.CodePersistenceUnavailable)}
	})
	policy, joins := rejoinWith(url, func(int) error { return nil })
	policy.Attempts = 3
	_, err := Connect(context.Background(), Options{Reconnect: policy})
	var se *ServerError
	if !errors.As(err, &se) || se.Code != protocol.CodePersistenceUnavailable || joins.Load() != 3 {
		t.Errorf("Connect: %v after %d joins, want the last refusal after 3", err, joins.Load())
	}

	policy, _ = rejoinWith(url, func(int) error { return nil })
	policy.BaseDelay, policy.MaxDelay = time.Hour, time.Hour
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { _, err := Connect(ctx, Options{Reconnect: policy}); done <- err }()
	cancel()
	if err := <-done; err == nil {
		t.Error("Connect went on after its context ended")
	}

	if _, err := Connect(context.Background(), Options{}); err == nil {
		t.Error("Connect without a Rejoin: no error")
	}
}
