package playtest

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"

	"github.com/roomkeeper/roomkeeper/internal/mapgen"
	"github.com/roomkeeper/roomkeeper/internal/protocol"
	"github.com/roomkeeper/roomkeeper/pkg/client"
)

// Point is a place in world units.
type Point struct{ X, Y float32 }

// ErrNoRoute is returned when no walk on the static map leads there.
var ErrNoRoute = errors.New("no route")

// cell is a walkability cell's column and row.
type cell struct{ x, y int }

// Route is a shortest walk over the static map's cells (doors count as
// open) from one place to another: the corners to pass, each a cell
// centre, the cell before a door and the door's own cell being corners
// too (so a walker can open it first), the last corner the target's cell.
// Legs between corners are straight along one axis.
func Route(static *mapgen.World, from, to Point) ([]Point, error) {
	cols, rows := static.Cells()
	start, okStart := walkableNear(static, from)
	goal, okGoal := walkableNear(static, to)
	if !okStart || !okGoal {
		return nil, fmt.Errorf("%w from (%v,%v) to (%v,%v): blocked", ErrNoRoute, from.X, from.Y, to.X, to.Y)
	}
	prev := make([]int32, cols*rows)
	for i := range prev {
		prev[i] = -1
	}
	idx := func(c cell) int32 { return int32(c.y*cols + c.x) }
	prev[idx(start)] = idx(start)
	queue := []cell{start}
	for len(queue) > 0 && prev[idx(goal)] < 0 {
		c := queue[0]
		queue = queue[1:]
		for _, n := range [4]cell{{c.x + 1, c.y}, {c.x - 1, c.y}, {c.x, c.y + 1}, {c.x, c.y - 1}} {
			if n.x < 0 || n.y < 0 || n.x >= cols || n.y >= rows || prev[idx(n)] >= 0 || static.Blocked(centre(n)) {
				continue
			}
			prev[idx(n)] = idx(c)
			queue = append(queue, n)
		}
	}
	if prev[idx(goal)] < 0 {
		return nil, fmt.Errorf("%w from (%v,%v) to (%v,%v)", ErrNoRoute, from.X, from.Y, to.X, to.Y)
	}
	var path []cell
	for c := goal; c != start; {
		path = append(path, c)
		p := int(prev[idx(c)])
		c = cell{p % cols, p / cols}
	}
	slices.Reverse(path)
	return corners(static, path), nil
}

// walkableNear is p's cell, or the walkable cell next to it when p lies
// on its blocked edge: snapshots round positions to 1/16 unit, so an
// entity standing against a wall can seem to stand just inside it.
func walkableNear(static *mapgen.World, p Point) (cell, bool) {
	c := cellOf(p)
	cols, rows := static.Cells()
	for _, n := range [5]cell{c, {c.x - 1, c.y}, {c.x + 1, c.y}, {c.x, c.y - 1}, {c.x, c.y + 1}} {
		if n.x < 0 || n.y < 0 || n.x >= cols || n.y >= rows {
			continue
		}
		if cx, cy := centre(n); !static.Blocked(cx, cy) && math.Abs(cx-float64(p.X))+math.Abs(cy-float64(p.Y)) <= 1.5*mapgen.CellSize {
			return n, true
		}
	}
	return c, false
}

func cellOf(p Point) cell {
	return cell{int(p.X) / mapgen.CellSize, int(p.Y) / mapgen.CellSize}
}

// centre is a cell's middle in world units, as Blocked takes it.
func centre(c cell) (float64, float64) {
	return float64(c.x*mapgen.CellSize) + mapgen.CellSize/2, float64(c.y*mapgen.CellSize) + mapgen.CellSize/2
}

// corners keeps the cells of path where it turns, ends, or meets a door.
func corners(static *mapgen.World, path []cell) []Point {
	var out []Point
	for i, c := range path {
		last := i == len(path)-1
		turn := i > 0 && !last && (path[i-1].x != path[i+1].x && path[i-1].y != path[i+1].y)
		door := doorAt(static, c) >= 0 || (!last && doorAt(static, path[i+1]) >= 0)
		if last || turn || door {
			x, y := centre(c)
			out = append(out, Point{X: float32(x), Y: float32(y)})
		}
	}
	return out
}

// doorAt is the index of the static door covering c, or -1.
func doorAt(static *mapgen.World, c cell) int {
	x, y := centre(c)
	return slices.IndexFunc(static.Doors, func(d mapgen.Door) bool {
		r := d.Rect
		return x >= float64(r.X) && y >= float64(r.Y) && x < float64(r.X+r.W) && y < float64(r.Y+r.H)
	})
}

// Travel walks c to target along Route, opening the closed doors on the
// way (door.toggle, then waiting to see it open). A locked door it cannot
// open ends the walk with the refusal.
func Travel(ctx context.Context, c *client.Client, target Point) error {
	s, err := c.WaitFor(ctx, func(s client.State) bool { return s.Self.ID != 0 }) // the first snapshot is in
	if err != nil {
		return err
	}
	route, err := Route(c.Static(), Point{X: s.Self.X, Y: s.Self.Y}, target)
	if err != nil {
		return err
	}
	for _, p := range route {
		if err := openDoorAt(ctx, c, p); err != nil {
			return err
		}
		if err := Step(ctx, c, p); err != nil {
			return err
		}
	}
	return nil
}

// openDoorAt opens the door at p, if p is a door's cell and it is closed.
func openDoorAt(ctx context.Context, c *client.Client, p Point) error {
	static := c.Static()
	i := doorAt(static, cellOf(p))
	if i < 0 {
		return nil
	}
	door, ok := DoorEntity(c.Snapshot(), static.Doors[i])
	if !ok || door.State&protocol.DoorOpen != 0 {
		return nil
	}
	ack, err := c.Do(ctx, protocol.FeatureDoor, protocol.ActionToggle, protocol.DoorToggle{Door: door.ID})
	if err != nil {
		return err
	}
	if !ack.OK {
		return fmt.Errorf("door %d: %s: %s", door.ID, ack.Code, ack.Message)
	}
	_, err = c.WaitFor(ctx, func(s client.State) bool {
		d, ok := DoorEntity(s, static.Doors[i])
		return ok && d.State&protocol.DoorOpen != 0
	})
	return err
}

// DoorEntity finds the entity of a static door in a snapshot: the door
// entity standing in its middle.
func DoorEntity(s client.State, d mapgen.Door) (protocol.EntityState, bool) {
	c := d.Rect.Centre()
	for _, e := range s.Entities {
		if e.Kind == protocol.EntityDoor && e.X == float32(c.X) && e.Y == float32(c.Y) {
			return e, true
		}
	}
	return protocol.EntityState{}, false
}

// Step walks c straight to p, a few ticks of input at a time, waiting for
// the server to apply each batch, until it stands within a step of p.
func Step(ctx context.Context, c *client.Client, p Point) error {
	w := c.Welcome()
	stride := w.PlayerSpeed / float32(w.TickRate)
	for range 400 {
		self := c.Snapshot().Self
		dx, dy := p.X-self.X, p.Y-self.Y
		d := float32(math.Hypot(float64(dx), float64(dy)))
		if d <= stride {
			return nil
		}
		if self.HP == 0 { // dead: wait for the respawn, and go on from there
			if _, err := c.WaitFor(ctx, func(s client.State) bool { return s.Self.HP > 0 }); err != nil {
				return err
			}
			continue
		}
		seq, err := c.MoveSteps(dx/d, dy/d, max(1, min(8, int(d/stride))))
		if err != nil {
			return err
		}
		if _, err := c.WaitFor(ctx, func(s client.State) bool { return s.AckSeq >= seq }); err != nil {
			return err
		}
	}
	return fmt.Errorf("could not step to (%v,%v)", p.X, p.Y)
}
