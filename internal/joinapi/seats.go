package joinapi

import (
	"slices"
	"sync"
	"time"

	gamev1 "github.com/roomkeeper/roomkeeper/api/v1"
)

// A join never hands out a ticket for a full map: the seats a map has
// (the room's maxPlayersPerMap; a party instance, parties.maxSize) less
// the players it last reported less the tickets this replica signed for
// it that are still valid. A ticket holds its seat until it expires,
// whether or not it is used by then, so joins racing for the last seats
// get one ticket a seat and the rest a room_full with the seconds until a
// held seat frees up. A portal's destination holds a seat the same way,
// for its transfer token's life. The room server checks its seats again
// at hello (replicas of the join API each hold their own).

// holdSeat holds a seat of mi until until (a ticket's or a transfer
// token's expiry), or refuses room_full with the seconds until one may be
// free. A party's instance seats the party's size (parties.maxSize).
func (h *Handler) holdSeat(room *gamev1.GameRoom, mi *gamev1.MapInstance, until time.Time) error {
	seats := room.Spec.Seats(mi.Spec.Instanced)
	ok, wait := h.seats.reserve(mi, int(seats), h.clock(), until)
	switch {
	case ok:
		return nil
	case mi.Spec.Instanced:
		return fail(CodeRoomFull, "your party's instance of map %s seats %d players (the room's parties.maxSize), all taken", mi.Spec.MapName, seats).
			retryIn(max(1, retrySeconds(wait)))
	default:
		return fail(CodeRoomFull, "map %s has no free seat of its %d: try again shortly", mi.Spec.MapName, seats).
			retryIn(max(1, retrySeconds(wait)))
	}
}

// heartbeatEvery is how often a room server reports its players: how
// long a map full of players may take to show a seat freed.
const heartbeatEvery = 5 * time.Second

// seatBook is the seats held by this replica's valid tickets, by
// MapInstance.
type seatBook struct {
	mu   sync.Mutex
	held map[string][]time.Time // a ticket's expiry per held seat, by instance
}

// reserve holds a seat of mi for a ticket that expires at until, if the
// map has one free at now; otherwise it returns how long until one may.
func (b *seatBook) reserve(mi *gamev1.MapInstance, seats int, now, until time.Time) (bool, time.Duration) {
	key := mi.Namespace + "/" + mi.Name
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.held == nil {
		b.held = map[string][]time.Time{}
	}
	b.dropExpired(now)
	held := b.held[key]
	if int(mi.Status.Players)+len(held) >= seats {
		wait := heartbeatEvery
		if len(held) > 0 {
			wait = min(wait, slices.MinFunc(held, time.Time.Compare).Sub(now))
		}
		return false, wait
	}
	b.held[key] = append(held, until)
	return true, 0
}

// dropExpired forgets the tickets expired at now, and the maps left with
// none.
func (b *seatBook) dropExpired(now time.Time) {
	for key, held := range b.held {
		held = slices.DeleteFunc(held, func(until time.Time) bool { return !until.After(now) })
		if len(held) == 0 {
			delete(b.held, key)
		} else {
			b.held[key] = held
		}
	}
}
