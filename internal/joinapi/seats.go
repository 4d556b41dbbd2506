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
// for its transfer token's life. A shared map's seat is chosen among its
// shards and held in one step (shards.go); a party's instance's here.
// The room server checks its seats again at hello (replicas of the join
// API each hold their own).

// holdSeat holds a seat of the party instance mi until until (a
// transfer token's expiry), or refuses room_full with the seconds until
// one may be free: it seats the party's size (parties.maxSize).
func (h *Handler) holdSeat(room *gamev1.GameRoom, mi *gamev1.MapInstance, until time.Time) error {
	seats := room.Spec.Seats(mi.Spec.Instanced)
	if ok, wait := h.seats.reserve(mi, int(seats), h.clock(), until); !ok {
		seatsRefused.WithLabelValues(seatsPartyInstance).Inc()
		return fail(CodeRoomFull, "your party's instance of map %s seats %d players (the room's parties.maxSize), all taken", mi.Spec.MapName, seats).
			retryIn(max(1, retrySeconds(wait)))
	}
	return nil
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
	only := func(candidates []gamev1.MapInstance, _ func(*gamev1.MapInstance) int32) []*gamev1.MapInstance {
		return []*gamev1.MapInstance{&candidates[0]}
	}
	got, wait := b.reserveFirst([]gamev1.MapInstance{*mi}, only, seats, now, until)
	return got != nil, wait
}

// reserveFirst holds a seat, for a ticket that expires at until, on the
// first instance in order's answer with one free at now: order ranks the
// candidates knowing the seats each has taken (players reported and
// seats held), so that choosing and holding are one step. Without one, it
// returns how long until a seat of a candidate may free up.
func (b *seatBook) reserveFirst(candidates []gamev1.MapInstance, order func([]gamev1.MapInstance, func(*gamev1.MapInstance) int32) []*gamev1.MapInstance,
	seats int, now, until time.Time) (*gamev1.MapInstance, time.Duration) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.held == nil {
		b.held = map[string][]time.Time{}
	}
	b.dropExpired(now)
	taken := func(mi *gamev1.MapInstance) int32 { return mi.Status.Players + int32(len(b.held[seatKey(mi)])) }
	for _, mi := range order(candidates, taken) {
		if taken(mi) < int32(seats) {
			b.held[seatKey(mi)] = append(b.held[seatKey(mi)], until)
			return mi, 0
		}
	}
	wait := heartbeatEvery
	for i := range candidates {
		if held := b.held[seatKey(&candidates[i])]; len(held) > 0 {
			wait = min(wait, slices.MinFunc(held, time.Time.Compare).Sub(now))
		}
	}
	return nil, wait
}

func seatKey(mi *gamev1.MapInstance) string { return mi.Namespace + "/" + mi.Name }

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
