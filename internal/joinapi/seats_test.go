package joinapi

import (
	"fmt"
	"net/http"
	"sync"
	"testing"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/client"

	gamev1 "github.com/roomkeeper/roomkeeper/api/v1"
	"github.com/roomkeeper/roomkeeper/internal/wait"
)

// TestJoinsRacingForTheLastSeatsNeverOverfillAMap: a map's seats are its
// room's maxPlayersPerMap less the players it reported less the valid
// tickets signed for it; of joins racing for the last seats each free
// seat gets one ticket, and the others a room_full that says when to try
// again.
func TestJoinsRacingForTheLastSeatsNeverOverfillAMap(t *testing.T) {
	e := newEnv(t)
	e.readyRoom("demo", "ws://10.0.0.7:7350/ws", func(r *gamev1.GameRoom) { r.Spec.MaxPlayersPerMap = 5 }) // its ticket holds a seat
	mi := &gamev1.MapInstance{}
	mi.Namespace, mi.Name = e.ns, "demo-town"
	e.setStatus(mi, func(s *gamev1.MapInstanceStatus) { s.Players = 1 })
	wait.Eventually(t, pollTimeout, "the cache to see the map's player", func() error {
		cached := &gamev1.MapInstance{}
		if err := mgr.GetClient().Get(e.ctx, client.ObjectKeyFromObject(mi), cached); err != nil {
			return err
		}
		if cached.Status.Players != 1 {
			return fmt.Errorf("%d players", cached.Status.Players)
		}
		return nil
	})

	// 5 seats, 1 player, 1 ticket held (readyRoom's): 3 free, whoever races.
	answers := e.joinsAtOnce("demo", make([]JoinRequest, 12))
	tickets := 0
	for i, r := range answers {
		if r.status == http.StatusOK {
			tickets++
			continue
		}
		want(t, "a join of a full map", r, http.StatusConflict, CodeRoomFull)
		if b := r.errorBody(t); b.RetryAfter < 1 || b.RetryAfter > 10 || r.header.Get("Retry-After") == "" {
			t.Errorf("join %d: retryAfter %d (header %q), want the seconds until a held seat frees, 1 to 10", i, b.RetryAfter, r.header.Get("Retry-After"))
		}
	}
	if tickets != 3 {
		t.Errorf("%d of 12 racing joins got a ticket, want the 3 free seats", tickets)
	}
}

// TestTheSeatBookHoldsOneSeatATicket: racing reservations get exactly
// the free seats; a seat comes back when its ticket expires, and with it
// the wait a refusal names.
func TestTheSeatBookHoldsOneSeatATicket(t *testing.T) {
	var book seatBook
	mi := &gamev1.MapInstance{}
	mi.Namespace, mi.Name, mi.Status.Players = "ns", "demo-town", 2
	now := time.Date(2026, 3, 4, 5, 6, 7, 0, time.UTC)
	var mu sync.Mutex
	got := 0
	var wg sync.WaitGroup
	for i := range 50 {
		wg.Go(func() {
			if ok, _ := book.reserve(mi, 10, now, now.Add(time.Duration(10+i%3)*time.Second)); ok {
				mu.Lock()
				got++
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	if got != 8 {
		t.Fatalf("%d of 50 racing tickets got a seat of the 8 free", got)
	}
	if ok, wait := book.reserve(mi, 10, now.Add(3*time.Second), now.Add(13*time.Second)); ok || wait != 5*time.Second {
		t.Errorf("a ninth ticket 3s later: %v, wait %s; want refused, 5s (the heartbeat)", ok, wait)
	}
	if ok, wait := book.reserve(mi, 10, now.Add(8*time.Second), now.Add(18*time.Second)); ok || wait != 2*time.Second {
		t.Errorf("8s later: %v, wait %s; want refused until the first tickets expire in 2s", ok, wait)
	}
	if ok, _ := book.reserve(mi, 10, now.Add(10*time.Second), now.Add(20*time.Second)); !ok {
		t.Error("a ticket once the first ones expired: refused")
	}
	other := mi.DeepCopy()
	other.Name = "demo-plaza"
	if ok, _ := book.reserve(other, 10, now, now.Add(10*time.Second)); !ok {
		t.Error("another map's seat: refused")
	}
}
