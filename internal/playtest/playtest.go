// Package playtest has the moves the tests and bots make as a player:
// dial a busy map, find loot or anything else in sight, walk to it, and
// how they measure (Percentile). The room-server, process and end-to-end
// tests, roomctl's bots and roomload all use it, so a change to how
// players move is made once.
package playtest

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"time"

	"github.com/roomkeeper/roomkeeper/internal/protocol"
	"github.com/roomkeeper/roomkeeper/pkg/client"
)

// Reach is how close WalkTo gets: within the server's default pickup reach.
const Reach = 12

// Dist is the distance between two entities.
func Dist(a, b protocol.EntityState) float32 {
	return float32(math.Hypot(float64(a.X-b.X), float64(a.Y-b.Y)))
}

// Nearest is the nearest entity s sees that keep keeps.
func Nearest(s client.State, keep func(protocol.EntityState) bool) (protocol.EntityState, bool) {
	var best protocol.EntityState
	found := false
	for _, e := range s.Entities {
		if keep(e) && (!found || Dist(e, s.Self) < Dist(best, s.Self)) {
			best, found = e, true
		}
	}
	return best, found
}

func isLoot(e protocol.EntityState) bool { return e.Kind == protocol.EntityLoot }

// NearestLoot waits until c sees loot and returns the nearest.
func NearestLoot(ctx context.Context, c *client.Client) (protocol.EntityState, error) {
	var loot protocol.EntityState
	_, err := c.WaitFor(ctx, func(s client.State) bool {
		var ok bool
		loot, ok = Nearest(s, isLoot)
		return ok
	})
	if err != nil {
		return protocol.EntityState{}, fmt.Errorf("no loot in sight: %w", err)
	}
	return loot, nil
}

// WalkTo steers c within Reach of target, a few ticks of input at a time,
// waiting for the server to apply each batch.
func WalkTo(ctx context.Context, c *client.Client, target protocol.EntityState) error {
	for range 200 {
		self := c.Snapshot().Self
		d := Dist(self, target)
		if d < Reach {
			return nil
		}
		seq, err := c.MoveSteps((target.X-self.X)/d, (target.Y-self.Y)/d, 4)
		if err != nil {
			return err
		}
		if _, err := c.WaitFor(ctx, func(s client.State) bool { return s.AckSeq >= seq }); err != nil {
			return err
		}
	}
	return fmt.Errorf("could not walk to (%v,%v)", target.X, target.Y)
}

// EnterPortal walks c to its map's portal to map to, enters it and waits
// for the outcome: the ack, and when it is ok, the client playing on the
// far side (or back here, should the destination have failed it).
func EnterPortal(ctx context.Context, c *client.Client, to string) (protocol.Ack, error) {
	portal, err := WalkToPortal(ctx, c, to)
	if err != nil {
		return protocol.Ack{}, err
	}
	return CrossPortal(ctx, c, portal)
}

// WalkToPortal walks c to its map's portal to map to.
func WalkToPortal(ctx context.Context, c *client.Client, to string) (protocol.PortalView, error) {
	portal, ok := PortalTo(c, to)
	if !ok {
		return portal, fmt.Errorf("map %s has no portal to %s", c.Welcome().Map, to)
	}
	// Around the colliders and through a dungeon's doors, then straight on.
	if err := Travel(ctx, c, Point{X: portal.X, Y: portal.Y}); err != nil {
		return portal, err
	}
	return portal, WalkTo(ctx, c, protocol.EntityState{X: portal.X, Y: portal.Y})
}

// CrossPortal enters portal, where c stands, and waits for the outcome:
// the ack, and when it is ok, the client playing on the far side (or
// back here, should the destination have failed it). Its time is the
// crossing a player feels, from stepping in to playing beyond.
func CrossPortal(ctx context.Context, c *client.Client, portal protocol.PortalView) (protocol.Ack, error) {
	before := c.Snapshot()
	ack, err := c.Do(ctx, protocol.FeaturePortal, protocol.ActionEnter, protocol.PortalEnter{Portal: portal.Entity})
	if err != nil || !ack.OK {
		return ack, err
	}
	_, err = c.WaitFor(ctx, func(s client.State) bool {
		return s.Transfers+s.Returns > before.Transfers+before.Returns && s.Snapshots > 0
	})
	return ack, err
}

// PortalTo finds c's map's portal to map to.
func PortalTo(c *client.Client, to string) (protocol.PortalView, bool) {
	for _, p := range c.Welcome().Portals {
		if p.To == to {
			return p, true
		}
	}
	return protocol.PortalView{}, false
}

// SameItems reports whether a and b hold the same item ids, in any order.
func SameItems(a, b []protocol.ItemView) bool {
	if len(a) != len(b) {
		return false
	}
	ids := make(map[string]bool, len(a))
	for _, it := range a {
		ids[it.ID] = true
	}
	for _, it := range b {
		if !ids[it.ID] {
			return false
		}
	}
	return true
}

// DialPatiently dials, and dials again with backoff while the map is busy
// (a thousand bots dialing at once from one address meet the server's
// bound on connections waiting to say hello); the ticket is not used by a
// refused dial.
func DialPatiently(ctx context.Context, endpoint, ticket string, opts client.Options) (*client.Client, error) {
	for backoff := 50 * time.Millisecond; ; backoff = min(2*backoff, time.Second) {
		c, err := client.Dial(ctx, endpoint, protocol.Hello{Ticket: ticket}, opts)
		if !errors.Is(err, client.ErrBusy) {
			return c, err
		}
		select {
		case <-ctx.Done():
			return nil, err
		case <-time.After(backoff + rand.N(backoff)):
		}
	}
}

// Percentile is the p-quantile (0 <= p <= 1) of sorted, the element at
// rank floor(p*n) (the largest for p = 1), rounded to the microsecond; 0
// for none.
func Percentile(sorted []time.Duration, p float64) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	return sorted[int(math.Min(float64(len(sorted)-1), p*float64(len(sorted))))].Round(time.Microsecond)
}
