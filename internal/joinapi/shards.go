package joinapi

import (
	"context"
	"sync"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	gamev1 "github.com/roomkeeper/roomkeeper/api/v1"
	"github.com/roomkeeper/roomkeeper/internal/shards"
)

// Joins and portals into a shared map seat the player on one of its
// shards (docs/joinapi.md, "Shards"): the one asked for (a friend's), the
// shard its party was seated on, or the best of internal/shards' Order,
// and hold that seat like any ticket (seats.go). A map with one shard is
// the same path with one candidate.

// partyShardMemory is how long a replica remembers the shard it seated
// a party on, from the party's last seat: its members joining later
// follow it there, even after new shards have changed the rendezvous.
const partyShardMemory = time.Hour

// seatOn chooses the shard of the shared map m that a player joins,
// want when set (an instance name), and holds a seat of it until until.
// A party's members go where the party went.
func (h *Handler) seatOn(ctx context.Context, room *gamev1.GameRoom, m gamev1.GameMap, want, party string, until time.Time) (*gamev1.MapInstance, error) {
	all, err := h.shardsOf(ctx, room, m.Name)
	if err != nil {
		return nil, err
	}
	candidates, err := h.candidateShards(room, m, all, want)
	if err != nil {
		return nil, err
	}
	pinned := false
	if party != "" && want == "" {
		candidates, pinned = h.partyShards.narrow(room, m.Name, party, candidates, h.clock())
	}
	seats := room.Spec.Seats(false)
	lo, hi := m.ShardBounds()
	order := func(c []gamev1.MapInstance, taken func(*gamev1.MapInstance) int32) []*gamev1.MapInstance {
		return shards.Order(c, lo, seats, taken, party)
	}
	mi, wait := h.seats.reserveFirst(candidates, order, int(seats), h.clock(), until)
	if mi == nil {
		return nil, shardsFull(m.Name, seats, len(all), hi, want != "", pinned).retryIn(max(1, retrySeconds(wait)))
	}
	if party != "" {
		h.partyShards.remember(room, m.Name, party, mi.Name, h.clock())
	}
	return mi, nil
}

// shardsFull is the room_full of a shared map, counted: of the shard
// asked for, of the party's, or of all of them.
func shardsFull(mapName string, seats int32, running int, hi int32, asked, party bool) *apiError {
	switch {
	case asked:
		seatsRefused.WithLabelValues(seatsAskedShard).Inc()
		return fail(CodeRoomFull, "the shard of map %s you asked for has no free seat of its %d: try again shortly, or join without naming one", mapName, seats)
	case party:
		seatsRefused.WithLabelValues(seatsPartyShard).Inc()
		return fail(CodeRoomFull, "your party's shard of map %s has no free seat of its %d: try again shortly", mapName, seats)
	}
	seatsRefused.WithLabelValues(seatsMap).Inc()
	if int32(running) >= hi {
		return fail(CodeRoomFull, "map %s has no free seat on its %d shards (its most): try again shortly", mapName, running)
	}
	return fail(CodeRoomFull, "map %s has no free seat: another shard is starting, try again shortly", mapName)
}

// shardsOf lists the shards of the room's shared map mapName in the
// cache: the room's own, not being deleted, by number.
func (h *Handler) shardsOf(ctx context.Context, room *gamev1.GameRoom, mapName string) ([]gamev1.MapInstance, error) {
	var list gamev1.MapInstanceList
	if err := h.cached.List(ctx, &list, client.InNamespace(room.Namespace),
		client.MatchingLabels{gamev1.LabelRoom: room.Name, gamev1.LabelMap: mapName}); err != nil {
		return nil, err
	}
	own := list.Items[:0]
	for _, mi := range list.Items {
		if mi.Spec.RoomName == room.Name && metav1.IsControlledBy(&mi, room) {
			own = append(own, mi)
		}
	}
	return shards.Of(mapName, own), nil
}

// candidateShards are the shards a player may be seated on now: want
// alone when asked for, else every joinable one. With none, the answer
// is why the first shard is not joinable (room_not_ready,
// map_quarantined).
func (h *Handler) candidateShards(room *gamev1.GameRoom, m gamev1.GameMap, all []gamev1.MapInstance, want string) ([]gamev1.MapInstance, error) {
	if want != "" {
		for i := range all {
			if all[i].Name == want {
				if err := h.joinable(room, &all[i]); err != nil {
					return nil, err
				}
				return all[i : i+1], nil
			}
		}
		return nil, fail(CodeBadRequest, "map %s has no shard %s", m.Name, want)
	}
	var out []gamev1.MapInstance
	var first error
	for i := range all {
		err := h.joinable(room, &all[i])
		if err == nil {
			out = append(out, all[i])
		} else if first == nil {
			first = err
		}
	}
	switch {
	case len(out) > 0:
		return out, nil
	case first != nil:
		return nil, first
	}
	return nil, fail(CodeRoomNotReady, "MapInstance %s does not exist (yet)", gamev1.MapInstanceName(room.Name, m.Name))
}

// partyShardBook remembers, per replica, the shard each party was last
// seated on, for partyShardMemory.
type partyShardBook struct {
	mu   sync.Mutex
	seen map[string]partySeat
	// pruned is when the expired entries were last dropped: once a
	// minute at most, not on every seat.
	pruned time.Time
}

type partySeat struct {
	instance string
	until    time.Time
}

func partyShardKey(room *gamev1.GameRoom, mapName, party string) string {
	return room.Namespace + "/" + room.Name + "/" + mapName + "/" + party
}

// narrow keeps, of candidates, the shard the party was seated on when it
// is one of them (pinned); else all of them.
func (b *partyShardBook) narrow(room *gamev1.GameRoom, mapName, party string, candidates []gamev1.MapInstance, now time.Time) ([]gamev1.MapInstance, bool) {
	b.mu.Lock()
	seat, ok := b.seen[partyShardKey(room, mapName, party)]
	b.mu.Unlock()
	if !ok || !now.Before(seat.until) {
		return candidates, false
	}
	for i := range candidates {
		if candidates[i].Name == seat.instance {
			return candidates[i : i+1], true
		}
	}
	return candidates, false
}

// remember records the party's shard at now, and forgets what has
// expired.
func (b *partyShardBook) remember(room *gamev1.GameRoom, mapName, party, instance string, now time.Time) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.seen == nil {
		b.seen = map[string]partySeat{}
	}
	if now.Sub(b.pruned) > time.Minute {
		b.pruned = now
		for k, seat := range b.seen {
			if !now.Before(seat.until) {
				delete(b.seen, k)
			}
		}
	}
	b.seen[partyShardKey(room, mapName, party)] = partySeat{instance: instance, until: now.Add(partyShardMemory)}
}
