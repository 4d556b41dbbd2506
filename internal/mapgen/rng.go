package mapgen

import "math/bits"

// Streams give each generation phase its own generator, so a change to how
// props are scattered cannot shift where the colliders or spawns land. The
// terrain stream is per biome (biomeSpec.stream).
const (
	streamProps uint64 = 2
	streamNPCs  uint64 = 3
	streamLoot  uint64 = 4
	// streamSpawns draws the candidate cells of extra player spawn points.
	streamSpawns uint64 = 5
)

// ID categories keep collider, prop and portal ids from coinciding by
// construction before the uniqueness check even runs.
const (
	idCollider uint64 = 1
	idProp     uint64 = 2
	idPortal   uint64 = 3
	idRoom     uint64 = 4
	idDoor     uint64 = 5
)

// golden is 2^64 divided by the golden ratio, splitmix64's increment.
const golden = 0x9E3779B97F4A7C15

// rng is splitmix64 (Steele, Lea and Flood, "Fast splittable pseudorandom
// number generators", 2014), written out here so the sequence is pinned by
// this file and not by whatever math/rand does in a future Go release.
type rng struct{ state uint64 }

// newRNG seeds one phase's generator from the map seed and the phase's
// stream number.
func newRNG(seed int64, stream uint64) *rng {
	return &rng{state: mix64(uint64(seed) ^ mix64(stream*golden))}
}

// mix64 is splitmix64's output function, a bijection on uint64 that
// spreads every input bit over every output bit.
func mix64(z uint64) uint64 {
	z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9
	z = (z ^ (z >> 27)) * 0x94D049BB133111EB
	return z ^ (z >> 31)
}

func (r *rng) next() uint64 {
	r.state += golden
	return mix64(r.state)
}

// intn returns a value in [0, n) for n > 0 by taking the high word of a
// 64x64-bit product (Lemire's method without the rejection step); the bias
// is below n/2^64, far too small to matter for map layout.
func (r *rng) intn(n int) int {
	hi, _ := bits.Mul64(r.next(), uint64(n))
	return int(hi)
}

// between returns a value in [lo, hi], both inclusive, for lo <= hi.
func (r *rng) between(lo, hi int) int {
	return lo + r.intn(hi-lo+1)
}

// idSet hands out ids derived from (seed, category, index) and guarantees
// they are unique and non-zero within one world, so zero can mean "none" in
// the protocol.
type idSet struct {
	seed int64
	used map[uint32]struct{}
}

func newIDSet(seed int64, capacity int) *idSet {
	return &idSet{seed: seed, used: make(map[uint32]struct{}, capacity)}
}

// next derives the id of the index-th object of a category. On a collision
// with an id already handed out it re-derives with an attempt counter; ids
// are handed out in generation order, so the resolution is deterministic.
func (s *idSet) next(category uint64, index int) uint32 {
	for attempt := uint64(0); ; attempt++ {
		key := category<<56 | attempt<<40 | uint64(index)
		id := uint32(mix64(uint64(s.seed)^mix64(key)) >> 32)
		if _, taken := s.used[id]; id != 0 && !taken {
			s.used[id] = struct{}{}
			return id
		}
	}
}

// weighted is a table entry chosen with probability weight/sum of weights.
type weighted interface{ weightOf() int }

// pickWeighted chooses one entry of a non-empty table.
func pickWeighted[T weighted](r *rng, table []T) T {
	total := 0
	for _, e := range table {
		total += e.weightOf()
	}
	n := r.intn(total)
	for _, e := range table {
		if n < e.weightOf() {
			return e
		}
		n -= e.weightOf()
	}
	return table[len(table)-1]
}
