// Package playtest has the moves the tests make as a player: find loot in
// sight and walk to it. The room-server, process and end-to-end tests all
// use it, so a change to how players move is made once.
package playtest

import (
	"context"
	"fmt"
	"math"

	"github.com/roomkeeper/roomkeeper/internal/protocol"
	"github.com/roomkeeper/roomkeeper/pkg/client"
)

// Reach is how close WalkTo gets: within the server's default pickup reach.
const Reach = 12

// Dist is the distance between two entities.
func Dist(a, b protocol.EntityState) float32 {
	return float32(math.Hypot(float64(a.X-b.X), float64(a.Y-b.Y)))
}

// NearestLoot waits until c sees loot and returns the nearest.
func NearestLoot(ctx context.Context, c *client.Client) (protocol.EntityState, error) {
	s, err := c.WaitFor(ctx, func(s client.State) bool {
		for _, e := range s.Entities {
			if e.Kind == protocol.EntityLoot {
				return true
			}
		}
		return false
	})
	if err != nil {
		return protocol.EntityState{}, fmt.Errorf("no loot in sight: %w", err)
	}
	best, bestD := protocol.EntityState{}, float32(math.MaxFloat32)
	for _, e := range s.Entities {
		if d := Dist(e, s.Self); e.Kind == protocol.EntityLoot && d < bestD {
			best, bestD = e, d
		}
	}
	return best, nil
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
	portal, ok := PortalTo(c, to)
	if !ok {
		return protocol.Ack{}, fmt.Errorf("map %s has no portal to %s", c.Welcome().Map, to)
	}
	// Around the colliders and through a dungeon's doors, then straight on.
	if err := Travel(ctx, c, Point{X: portal.X, Y: portal.Y}); err != nil {
		return protocol.Ack{}, err
	}
	if err := WalkTo(ctx, c, protocol.EntityState{X: portal.X, Y: portal.Y}); err != nil {
		return protocol.Ack{}, err
	}
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
