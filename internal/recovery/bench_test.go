package recovery

import (
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/roomkeeper/roomkeeper/internal/content"
)

// benchState is a map with 100 critical items: 40 unique kinds (one item
// each) and 3 quota kinds of quota 10 with 20 items each, in every kind of
// place, some of them pending.
func benchState() (State, []content.CriticalPolicy) {
	r := rand.New(rand.NewPCG(3, 4))
	s := State{Map: "bench", Tick: 1000}
	var policies []content.CriticalPolicy
	anchors := func(n int) []content.Anchor {
		at := make([]content.Anchor, n)
		for i := range at {
			at[i] = content.Anchor{X: float32(10 * i), Y: 5}
		}
		return at
	}
	for i := range 40 {
		kind := fmt.Sprintf("key%02d", i)
		policies = append(policies, content.CriticalPolicy{Kind: kind, Type: content.UniquePersistent,
			Anchors: anchors(2), CooldownTicks: 50, OfflineTimeout: 60})
		s.Items = append(s.Items, Item{ID: CanonicalID(s.Map, kind), Kind: kind, Place: benchPlace(r), Reachable: r.IntN(4) != 0})
	}
	for i := range 3 {
		kind := fmt.Sprintf("torch%d", i)
		policies = append(policies, content.CriticalPolicy{Kind: kind, Type: content.InstanceQuota,
			Anchors: anchors(10), CooldownTicks: 50, OfflineTimeout: 60, Quota: 10})
		for j := range 20 {
			s.Items = append(s.Items, Item{ID: fmt.Sprintf("%s/%d", kind, j), Kind: kind, Place: benchPlace(r), Reachable: r.IntN(4) != 0})
		}
	}
	for i, it := range s.Items {
		if i%3 == 0 {
			s.Pending = append(s.Pending, Pending{ItemID: it.ID, Kind: it.Kind, Since: 900 + uint64(i)})
		}
	}
	return s, policies
}

func benchPlace(r *rand.Rand) Place {
	switch r.IntN(4) {
	case 0:
		return Place{Kind: Held, Owner: "c", OfflineFor: time.Duration(r.IntN(120)) * time.Second}
	case 1:
		return Place{Kind: Destroyed}
	}
	return Place{Kind: Ground, Owner: "bench", X: float32(r.IntN(100)), Y: float32(r.IntN(100))}
}

func BenchmarkDecide(b *testing.B) {
	s, policies := benchState()
	b.ReportAllocs()
	for b.Loop() {
		Decide(s, policies)
	}
}
