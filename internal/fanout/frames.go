package fanout

import (
	"slices"
	"sync"
	"sync/atomic"

	"github.com/roomkeeper/roomkeeper/internal/aoi"
	"github.com/roomkeeper/roomkeeper/internal/protocol"
	"github.com/roomkeeper/roomkeeper/internal/sim"
)

// What a client is sent depends on the cell it watches, not on the
// client: the entities of the 3x3 cells around it, with the far ones (more
// than nearMargin outside that cell) at their position of the last
// frame that refreshed far entities. So every client of one cell shares one
// view of a frame, built once, and every client of that view that
// acknowledged the same earlier view shares one encoding of the delta
// between them: in a crowd a snapshot is encoded a handful of times, not
// once per client. Only the header (each client's ackSeq) is written per
// client. Views are immutable once built and they are the baselines too: a
// client keeps pointers to the views it was sent, not copies.
//
// Frames, views and encodings are recycled, so a steady stream of
// snapshots allocates nothing. Each counts its holders:
//   - a frame: the server while it is the latest, and each writer while it
//     builds a snapshot from it (acquire and release around the use);
//   - a view: the frame it was built for, and each client that keeps it
//     as a possible base;
//   - an encoding belongs to its frame alone (writers copy it out).
// The last holder to let go returns the object to its pool.

// view is what the clients of one cell see of one frame, sorted by ID.
type View struct {
	tick   uint64
	states []protocol.WireState
	once   sync.Once
	refs   atomic.Int32
}

var viewPool = sync.Pool{New: func() any { return new(View) }}

// newView returns an empty view of tick held once, by its frame.
func newView(tick uint64) *View {
	v := viewPool.Get().(*View)
	v.tick = tick
	v.refs.Store(1)
	return v
}

// hold adds a holder; only a holder may call it.
func (v *View) hold() { v.refs.Add(1) }

// release lets go of one hold; the last recycles the view.
func (v *View) release() {
	if v.refs.Add(-1) == 0 {
		v.tick, v.states, v.once = 0, v.states[:0], sync.Once{}
		viewPool.Put(v)
	}
}

// encoding is a view's binary body (removals and upserts) against one
// base, or in full (base nil).
type encoding struct {
	body []byte
	once sync.Once
}

// encodingKey names an encoding. A view's pointer is reused once it is
// recycled, but never for the same tick while a frame that may have keys
// on it lives, so the base's tick makes a key unambiguous.
type encodingKey struct {
	view, base *View
	baseTick   uint64
}

// frame is a published sim frame with what the clients' snapshots are
// built from: each entity's wire state, quantized once, and the views and
// encodings built so far. The frame, not the views, holds the encodings,
// so a view does not keep its bases.
type Frame struct {
	*sim.Frame
	wire []protocol.WireState // Frame.Entities, index for index
	// far is where far entities are shown: each entity's wire state at
	// the last frame that refreshed far entities (wire itself on those).
	far       []protocol.WireState
	ownFar    []protocol.WireState // far's buffer when it is not wire
	cellSteps int32                // a cell's side in quantization steps
	margin    int32                // how far outside the cell entities are near, in steps
	refs      atomic.Int32
	pool      *framePool

	mu        sync.Mutex
	views     map[aoi.Cell]*View
	encodings map[encodingKey]*encoding
	spare     []*encoding // encodings of earlier uses of this frame, to reuse
}

// Acquire adds a holder; only a holder (or the Stream, under its lock)
// may call it.
func (f *Frame) Acquire() { f.refs.Add(1) }

// Release lets go of one hold; the last lets go of the frame's views and
// returns the frame to its pool.
func (f *Frame) Release() {
	if f.refs.Add(-1) != 0 {
		return
	}
	for _, v := range f.views {
		v.release()
	}
	clear(f.views)
	for _, e := range f.encodings {
		e.body, e.once = e.body[:0], sync.Once{}
		f.spare = append(f.spare, e)
	}
	clear(f.encodings)
	f.pool.put(f)
}

// view returns the view of the clients watching cell, building it if it
// is the first asked for. idx is the caller's scratch buffer, returned
// grown. The caller holds the frame.
func (f *Frame) view(cell aoi.Cell, idx []int32) (*View, []int32) {
	f.mu.Lock()
	v := f.views[cell]
	if v == nil {
		v = newView(f.Tick)
		f.views[cell] = v
	}
	f.mu.Unlock()
	v.once.Do(func() { idx = f.build(v, cell, idx) })
	return v, idx
}

// build fills v with the entities of the 3x3 cells around cell, the far
// ones at their far position.
func (f *Frame) build(v *View, cell aoi.Cell, idx []int32) []int32 {
	idx = f.Grid.AppendNeighbourhood(idx[:0], cell)
	near := f.nearBox(cell)
	states := slices.Grow(v.states[:0], len(idx)) // a recycled view may have served a smaller cell
	for _, i := range idx {
		if e := f.wire[i]; near.holds(e) {
			states = append(states, e)
		} else {
			states = append(states, f.far[i])
		}
	}
	v.states = states
	return idx
}

// encoding returns v's body against base (nil: in full), encoding it if
// it is the first asked for. The caller holds the frame and base.
func (f *Frame) encoding(v, base *View) []byte {
	key := encodingKey{view: v, base: base}
	var from []protocol.WireState
	if base != nil {
		key.baseTick, from = base.tick, base.states
	}
	f.mu.Lock()
	e := f.encodings[key]
	if e == nil {
		e = f.newEncoding()
		f.encodings[key] = e
	}
	f.mu.Unlock()
	e.once.Do(func() {
		// About 4 bytes an entity in a delta; more only grows once.
		e.body = protocol.AppendBinaryBody(slices.Grow(e.body[:0], 8+4*len(v.states)), from, v.states)
	})
	return e.body
}

// newEncoding returns a spare encoding or a new one; f.mu is held.
func (f *Frame) newEncoding() *encoding {
	if n := len(f.spare); n > 0 {
		e := f.spare[n-1]
		f.spare = f.spare[:n-1]
		return e
	}
	return &encoding{}
}

// box is an axis-aligned rectangle in quantization steps, ends included.
type box struct{ x0, y0, x1, y1 int32 }

func (b box) holds(e protocol.WireState) bool {
	x, y := int32(e.X), int32(e.Y)
	return x >= b.x0 && x <= b.x1 && y >= b.y0 && y <= b.y1
}

// nearBox is cell c widened by the near margin on every side.
func (f *Frame) nearBox(c aoi.Cell) box {
	side, margin := f.cellSteps, f.margin
	return box{x0: c.X*side - margin, y0: c.Y*side - margin,
		x1: (c.X+1)*side + margin, y1: (c.Y+1)*side + margin}
}

// nearMargin is how far outside a client's cell entities are near, in
// quantization steps: a quarter cell, so that wherever in its cell a client
// stands everything within a quarter cell of it is near (16 units with the
// default 64-unit cells) and most of what is within a cell (a box of 1.5
// cells a side has about the area of a circle of one cell's radius, so far
// entities save a crowd about half its bytes); and more than the
// hysteresis, how far outside its cell a client may stand, so that a
// client is always near itself and reconciles against its newest position.
func nearMargin(cellSize, hysteresis float32) int32 {
	return int32(max(cellSize/4, hysteresis+1.0/protocol.PositionScale) * protocol.PositionScale)
}

// framePool keeps released frames for the tick goroutine to fill again.
// Its size bounds what is kept; a frame released into a full pool is left
// to the garbage collector.
type framePool struct{ free chan *Frame }

func newFramePool() *framePool { return &framePool{free: make(chan *Frame, 8)} }

func (p *framePool) put(f *Frame) {
	select {
	case p.free <- f:
	default:
	}
}

// get returns a released frame, or nil.
func (p *framePool) get() *Frame {
	select {
	case f := <-p.free:
		return f
	default:
		return nil
	}
}

// framer prepares the sim's frames for sending, refreshing far entities
// on one frame in farEvery. It belongs to the tick goroutine.
type framer struct {
	farEvery  uint64
	margin    int32 // nearMargin
	published uint64
	pool      *framePool
	// refreshed is the wire states of the last frame that refreshed far
	// entities, owned by the framer (frames are recycled under it).
	refreshed []protocol.WireState
	// recycled is the frame whose sim frame Recycled handed out last.
	recycled *Frame
}

func newFramer(farEvery int, cellSize, hysteresis float32) *framer {
	return &framer{farEvery: uint64(max(1, farEvery)), margin: nearMargin(cellSize, hysteresis), pool: newFramePool()}
}

// recycledSimFrame is the sim loop's Recycled hook: the sim frame of a
// released frame, which next then wraps again.
func (fr *framer) recycledSimFrame() *sim.Frame {
	fr.recycled = fr.pool.get()
	if fr.recycled == nil {
		return nil
	}
	return fr.recycled.Frame
}

// next returns sf prepared for sending, held once (by the caller).
func (fr *framer) next(sf *sim.Frame) *Frame {
	f := fr.recycled
	fr.recycled = nil
	if f == nil || f.Frame != sf {
		f = &Frame{pool: fr.pool, views: map[aoi.Cell]*View{}, encodings: map[encodingKey]*encoding{}}
	}
	f.Frame = sf
	f.cellSteps, f.margin = int32(sf.Grid.CellSize()*protocol.PositionScale), fr.margin
	f.wire = quantize(f.wire[:0], sf.Entities)
	f.far = f.wire
	if fr.published%fr.farEvery == 0 {
		fr.refreshed = append(fr.refreshed[:0], f.wire...)
	} else {
		f.ownFar = farPositions(f.ownFar[:0], f.wire, fr.refreshed)
		f.far = f.ownFar
	}
	fr.published++
	f.refs.Store(1)
	return f
}

// quantize appends the wire state of each entity to dst.
func quantize(dst []protocol.WireState, entities []sim.View) []protocol.WireState {
	for i := range entities {
		v := &entities[i]
		dst = append(dst, protocol.WireState{ID: v.ID, Kind: protocol.EntityKind(v.Kind),
			X: protocol.Quantize(v.X), Y: protocol.Quantize(v.Y), HP: v.HP, State: v.State, Target: v.Target})
	}
	return dst
}

// farPositions appends wire to dst with the positions of refreshed for the
// entities in both (both sorted by ID).
func farPositions(dst, wire, refreshed []protocol.WireState) []protocol.WireState {
	dst = append(dst, wire...)
	j := 0
	for i := range dst {
		for j < len(refreshed) && refreshed[j].ID < dst[i].ID {
			j++
		}
		if j < len(refreshed) && refreshed[j].ID == dst[i].ID {
			dst[i].X, dst[i].Y = refreshed[j].X, refreshed[j].Y
		}
	}
	return dst
}
