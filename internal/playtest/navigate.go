package playtest

import (
	"math"
	"time"

	"github.com/roomkeeper/roomkeeper/internal/mapgen"
	"github.com/roomkeeper/roomkeeper/internal/protocol"
	"github.com/roomkeeper/roomkeeper/pkg/client"
)

// Navigator steers a bot that acts on a ticker, one heading at a time,
// along Routes, so it finds its way through a dungeon's corridors
// instead of walking into walls. A route is planned again when the goal
// moves (a fleeing or chasing NPC) or has been followed for a while.
type Navigator struct {
	static  *mapgen.World
	goal    Point
	route   []Point
	next    int
	planned time.Time
}

// replanAfter bounds how long a route is followed before it is planned
// again, and goalSlack how far the goal may move before that.
const (
	replanAfter = 2 * time.Second
	goalSlack   = mapgen.CellSize
	// arrived is how near a corner counts as reached.
	arrived = 2
)

// NewNavigator steers over static.
func NewNavigator(static *mapgen.World) *Navigator {
	return &Navigator{static: static}
}

// Toward returns the heading from s's player towards goal, and the id of
// a closed door to open before going on (then the heading is zero). ok is
// false when no route leads there.
func (n *Navigator) Toward(s client.State, goal Point) (dx, dy float32, door uint32, ok bool) {
	self := Point{X: s.Self.X, Y: s.Self.Y}
	if n.stale(goal) {
		route, err := Route(n.static, self, goal)
		if err != nil {
			return 0, 0, 0, false
		}
		n.goal, n.route, n.next, n.planned = goal, route, 0, time.Now()
	}
	for n.next < len(n.route) && distance(self, n.route[n.next]) <= arrived {
		n.next++
	}
	target := goal
	if n.next < len(n.route) {
		target = n.route[n.next]
		if d, closed := n.closedDoorAt(s, target); closed {
			return 0, 0, d, true
		}
	}
	d := distance(self, target)
	if d <= arrived {
		return 0, 0, 0, true
	}
	return (target.X - self.X) / d, (target.Y - self.Y) / d, 0, true
}

// stale reports whether the route needs planning (again) for goal.
func (n *Navigator) stale(goal Point) bool {
	return n.route == nil || distance(goal, n.goal) > goalSlack || time.Since(n.planned) > replanAfter
}

// closedDoorAt returns the closed door entity at p, if p is a door's cell.
func (n *Navigator) closedDoorAt(s client.State, p Point) (uint32, bool) {
	i := doorAt(n.static, cellOf(p))
	if i < 0 {
		return 0, false
	}
	d, ok := DoorEntity(s, n.static.Doors[i])
	if !ok || d.State&protocol.DoorOpen != 0 {
		return 0, false
	}
	return d.ID, true
}

func distance(a, b Point) float32 {
	return float32(math.Hypot(float64(a.X-b.X), float64(a.Y-b.Y)))
}
