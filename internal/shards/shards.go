// Package shards holds the rules of a shared map's shards
// (spec.maps[].shards; docs/operations.md, "Shards"): which MapInstances
// are a map's shards and their numbers, when the operator adds or removes
// one, and in which order the join API offers them to a player. Each
// shard is a MapInstance of its own, with its own pod, players and world.
//
// The operator applies Add and Remove (controllers/gameroom_shards.go);
// the join API applies Order (internal/joinapi/shards.go) under its seat
// book's lock, so a seat is chosen and held in one step.
package shards

import (
	"cmp"
	"crypto/sha256"
	"slices"
	"strconv"
	"strings"
	"time"

	gamev1 "github.com/roomkeeper/roomkeeper/api/v1"
)

// Number is mi's number among its map's shards: 1 for <room>-<map>,
// which carries no LabelShard, else the label's.
func Number(mi *gamev1.MapInstance) int32 {
	n, err := strconv.Atoi(mi.Labels[gamev1.LabelShard])
	if err != nil || n < 2 {
		return 1
	}
	return int32(n)
}

// New returns shard n of the room's shared map m.
func New(room *gamev1.GameRoom, m gamev1.GameMap, n int32) *gamev1.MapInstance {
	mi := gamev1.NewMapInstance(room, m, gamev1.ShardName(room.Name, m.Name, n))
	if n > 1 {
		mi.Labels[gamev1.LabelShard] = strconv.Itoa(int(n))
	}
	return mi
}

// Of returns the shards of the shared map mapName among the room's
// instances, not being deleted, by number.
func Of(mapName string, instances []gamev1.MapInstance) []gamev1.MapInstance {
	var out []gamev1.MapInstance
	for i := range instances {
		mi := &instances[i]
		if mi.Spec.MapName == mapName && !mi.Spec.Instanced && mi.DeletionTimestamp.IsZero() {
			out = append(out, *mi)
		}
	}
	slices.SortFunc(out, func(a, b gamev1.MapInstance) int { return cmp.Compare(Number(&a), Number(&b)) })
	return out
}

// Headroom is how few free seats make a map nearly full: a fifth of a
// shard's seats, at least one. The operator adds a shard then, so a new
// one is starting before the last seat is taken.
func Headroom(seats int32) int32 {
	return max(1, seats/5)
}

// FreeSeats counts the seats players can still take across shards, each
// seating seats: a shard starting counts all its seats (it will have
// them soon); one crashed, backing off or quarantined counts none.
func FreeSeats(shards []gamev1.MapInstance, seats int32) int32 {
	var free int32
	for i := range shards {
		mi := &shards[i]
		switch mi.Status.Phase {
		case gamev1.MapBackoff, gamev1.MapQuarantined, gamev1.MapTerminating:
			continue
		}
		free += max(0, seats-mi.Status.Players)
	}
	return free
}

// NearlyFull reports whether shards, each seating seats, have no more
// free seats than their headroom.
func NearlyFull(shards []gamev1.MapInstance, seats int32) bool {
	return FreeSeats(shards, seats) <= Headroom(seats)
}

// Add returns the numbers of the shards to create: the missing ones of
// 1..lo, and when the map has fewer than hi and is nearly full, the
// lowest free number.
func Add(shards []gamev1.MapInstance, lo, hi, seats int32) []int32 {
	have := map[int32]bool{}
	for i := range shards {
		have[Number(&shards[i])] = true
	}
	var add []int32
	for n := int32(1); n <= lo; n++ {
		if !have[n] {
			add = append(add, n)
		}
	}
	if len(add) > 0 || int32(len(shards)) >= hi || !NearlyFull(shards, seats) {
		return add
	}
	n := int32(1)
	for have[n] {
		n++
	}
	return []int32{n}
}

// Remove returns the surplus shards to delete at now: numbered above lo
// (or above hi, when max was lowered), empty for timeout
// (status.emptySince), highest first, as long as the shards left are not
// nearly full. idleIn is how long until the next surplus shard would be
// removed as things stand (0: none would).
func Remove(shards []gamev1.MapInstance, lo, seats int32, timeout time.Duration, now time.Time) (remove []gamev1.MapInstance, idleIn time.Duration) {
	left := slices.Clone(shards)
	for i := len(shards) - 1; i >= 0; i-- {
		mi := &shards[i]
		if Number(mi) <= lo || mi.Status.Players > 0 || mi.Status.EmptySince == nil {
			continue
		}
		if remaining := mi.Status.EmptySince.Add(timeout).Sub(now); remaining > 0 {
			idleIn = soonest(idleIn, remaining)
			continue
		}
		without := slices.DeleteFunc(slices.Clone(left), func(o gamev1.MapInstance) bool { return o.Name == mi.Name })
		if NearlyFull(without, seats) {
			continue
		}
		left = without
		remove = append(remove, *mi)
	}
	return remove, idleIn
}

func soonest(a, b time.Duration) time.Duration {
	if a == 0 || b < a {
		return b
	}
	return a
}

// Order sorts the shards a player may be seated on, best first, leaving
// out those without a free seat; taken counts a shard's seats in use
// (its players and the seats held for tickets). A party's members go to
// the same shard: parties are spread by a hash of the party and each
// shard's name (rendezvous hashing), the same on every join API replica.
// Others go to the least full. Either way the shards in use come first:
// the base ones (numbered up to lo) and any with players. An empty
// surplus shard is offered only when those are full, so that it stays
// empty and the operator removes it.
func Order(candidates []gamev1.MapInstance, lo, seats int32, taken func(*gamev1.MapInstance) int32, party string) []*gamev1.MapInstance {
	var inUse, spare []*gamev1.MapInstance
	for i := range candidates {
		mi := &candidates[i]
		switch t := taken(mi); {
		case t >= seats:
		case t > 0 || Number(mi) <= lo:
			inUse = append(inUse, mi)
		default:
			spare = append(spare, mi)
		}
	}
	ranks := map[*gamev1.MapInstance]string{} // a party's hashes, once each
	if party != "" {
		for _, mi := range append(slices.Clone(inUse), spare...) {
			ranks[mi] = rank(party, mi)
		}
	}
	sortBy := func(list []*gamev1.MapInstance) {
		slices.SortFunc(list, func(a, b *gamev1.MapInstance) int {
			if party != "" {
				return strings.Compare(ranks[a], ranks[b])
			}
			return cmp.Or(cmp.Compare(taken(a), taken(b)), cmp.Compare(Number(a), Number(b)))
		})
	}
	sortBy(inUse)
	sortBy(spare)
	return append(inUse, spare...)
}

// rank is a party's rendezvous hash of a shard.
func rank(party string, mi *gamev1.MapInstance) string {
	sum := sha256.Sum256([]byte(party + "\x00" + mi.Name))
	return string(sum[:])
}
