package sim

import "math"

// rng is splitmix64: tiny, fast and fully specified, so the world's choices
// are the same on every platform and Go version for the same seed.
type rng struct{ state uint64 }

func newRNG(seed uint64) rng { return rng{state: seed} }

func (r *rng) next() uint64 {
	r.state += 0x9e3779b97f4a7c15
	z := r.state
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9
	z = (z ^ (z >> 27)) * 0x94d049bb133111eb
	return z ^ (z >> 31)
}

// direction is a unit vector at one of 16 headings.
func (r *rng) direction() (float32, float32) {
	a := float64(r.next()%16) * (2 * math.Pi / 16)
	return float32(math.Cos(a)), float32(math.Sin(a))
}

func sqrt32(v float32) float32 { return float32(math.Sqrt(float64(v))) }
