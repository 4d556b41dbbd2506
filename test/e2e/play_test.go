package e2e

import (
	"context"
	"math"
	"testing"

	"github.com/roomkeeper/roomkeeper/internal/protocol"
	pkgclient "github.com/roomkeeper/roomkeeper/pkg/client"
)

// nearestLoot returns the nearest loot c sees.
func nearestLoot(t *testing.T, ctx context.Context, c *pkgclient.Client) protocol.EntityState {
	t.Helper()
	s, err := c.WaitFor(ctx, func(s pkgclient.State) bool {
		for _, e := range s.Entities {
			if e.Kind == protocol.EntityLoot {
				return true
			}
		}
		return false
	})
	if err != nil {
		t.Fatalf("no loot in sight: %v", err)
	}
	best, bestD := protocol.EntityState{}, math.MaxFloat64
	for _, e := range s.Entities {
		if d := math.Hypot(float64(e.X-s.Self.X), float64(e.Y-s.Self.Y)); e.Kind == protocol.EntityLoot && d < bestD {
			best, bestD = e, d
		}
	}
	return best
}

// walkTo steers c next to target, a few ticks of input at a time.
func walkTo(t *testing.T, ctx context.Context, c *pkgclient.Client, target protocol.EntityState) {
	t.Helper()
	for range 200 {
		self := c.Snapshot().Self
		d := math.Hypot(float64(target.X-self.X), float64(target.Y-self.Y))
		if d < 12 {
			return
		}
		seq, err := c.MoveSteps(float32(float64(target.X-self.X)/d), float32(float64(target.Y-self.Y)/d), 4)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := c.WaitFor(ctx, func(s pkgclient.State) bool { return s.AckSeq >= seq }); err != nil {
			t.Fatal(err)
		}
	}
	t.Fatalf("could not walk to %+v", target)
}
