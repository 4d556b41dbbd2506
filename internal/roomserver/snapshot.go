package roomserver

import (
	"slices"
	"sync"

	"github.com/gorilla/websocket"

	"github.com/roomkeeper/roomkeeper/internal/aoi"
	"github.com/roomkeeper/roomkeeper/internal/protocol"
	"github.com/roomkeeper/roomkeeper/internal/sim"
)

// baselineCount is how many sent snapshots a client can acknowledge back:
// at 20 Hz, 32 is 1.6 s of round trip before deltas fall back to full.
const baselineCount = 32

// What a client is sent depends on the cell it watches, not on the
// client: the entities of the 3x3 cells around it, with the far ones (more
// than a quarter cell outside that cell) at their position of the last
// frame that refreshed far entities. So every client of one cell shares one
// view of a frame, built once, and every client of that view that
// acknowledged the same earlier view shares one encoding of the delta
// between them, so in a crowd a snapshot is encoded a handful of times,
// not once per client. Only the header (each client's ackSeq) is written
// per client. Views are immutable once built and they are the baselines
// too: a client keeps pointers to the views it was sent, not copies.

// view is what the clients of one cell see of one frame, sorted by ID.
type view struct {
	tick   uint64
	states []protocol.WireState
	once   sync.Once
}

// encoding is a view's binary body (removals and upserts) against one
// base, or in full (base nil).
type encoding struct {
	body []byte
	once sync.Once
}

type encodingKey struct{ view, base *view }

// frame is a published sim frame with what the clients' snapshots are
// built from: each entity's wire state, quantized once, and the views and
// encodings built so far. The frame, not the views, holds the encodings,
// so a view does not keep its bases alive.
type frame struct {
	*sim.Frame
	wire []protocol.WireState // Frame.Entities, index for index
	// far is where far entities are shown: wire on the frames that
	// refresh them, else each entity's wire state at the last frame that
	// did (its current one if it is newer than that).
	far       []protocol.WireState
	cellSteps int32 // a cell's side in quantization steps

	mu        sync.Mutex
	views     map[aoi.Cell]*view
	encodings map[encodingKey]*encoding
}

// framer prepares the sim's frames for sending, refreshing far entities
// on one frame in farEvery. It belongs to the tick goroutine.
type framer struct {
	farEvery  uint64
	published uint64
	// refreshed is the wire states of the last frame that refreshed far
	// entities.
	refreshed []protocol.WireState
}

// next returns f prepared for sending.
func (fr *framer) next(f *sim.Frame) *frame {
	var refreshed []protocol.WireState // nil: this frame refreshes far entities
	if fr.published%max(1, fr.farEvery) != 0 {
		refreshed = fr.refreshed
	}
	next := newFrame(f, refreshed)
	if refreshed == nil {
		fr.refreshed = next.wire
	}
	fr.published++
	return next
}

// newFrame prepares f for sending. refreshed is the wire states of the
// last frame that refreshed far entities, nil if this one does.
func newFrame(f *sim.Frame, refreshed []protocol.WireState) *frame {
	wire := make([]protocol.WireState, len(f.Entities))
	for i := range f.Entities {
		v := &f.Entities[i]
		wire[i] = protocol.WireState{ID: v.ID, Kind: protocol.EntityKind(v.Kind),
			X: protocol.Quantize(v.X), Y: protocol.Quantize(v.Y), HP: v.HP}
	}
	return &frame{Frame: f, wire: wire, far: farPositions(wire, refreshed),
		cellSteps: int32(f.Grid.CellSize() * protocol.PositionScale),
		views:     map[aoi.Cell]*view{}, encodings: map[encodingKey]*encoding{}}
}

// farPositions returns wire with the positions of refreshed for the
// entities in both (both sorted by ID); wire itself when refreshed is nil.
func farPositions(wire, refreshed []protocol.WireState) []protocol.WireState {
	if refreshed == nil {
		return wire
	}
	far := slices.Clone(wire)
	j := 0
	for i := range far {
		for j < len(refreshed) && refreshed[j].ID < far[i].ID {
			j++
		}
		if j < len(refreshed) && refreshed[j].ID == far[i].ID {
			far[i].X, far[i].Y = refreshed[j].X, refreshed[j].Y
		}
	}
	return far
}

// view returns the view of the clients watching cell, building it if it
// is the first asked for. idx is the caller's scratch buffer, returned
// grown.
func (f *frame) view(cell aoi.Cell, idx []int32) (*view, []int32) {
	f.mu.Lock()
	v := f.views[cell]
	if v == nil {
		v = &view{tick: f.Tick}
		f.views[cell] = v
	}
	f.mu.Unlock()
	v.once.Do(func() { idx = f.build(v, cell, idx) })
	return v, idx
}

// build fills v with the entities of the 3x3 cells around cell, the far
// ones at their far position.
func (f *frame) build(v *view, cell aoi.Cell, idx []int32) []int32 {
	idx = f.Grid.AppendNeighbourhood(idx[:0], cell)
	near := f.nearBox(cell)
	states := make([]protocol.WireState, len(idx))
	for k, i := range idx {
		if e := f.wire[i]; near.holds(e) {
			states[k] = e
		} else {
			states[k] = f.far[i]
		}
	}
	v.states = states
	return idx
}

// encoding returns v's body against base (nil: in full), encoding it if
// it is the first asked for.
func (f *frame) encoding(v, base *view) []byte {
	key := encodingKey{view: v, base: base}
	f.mu.Lock()
	e := f.encodings[key]
	if e == nil {
		e = &encoding{}
		f.encodings[key] = e
	}
	f.mu.Unlock()
	e.once.Do(func() {
		var from []protocol.WireState
		if base != nil {
			from = base.states
		}
		e.body = protocol.AppendBinaryBody(make([]byte, 0, 8+len(v.states)*4), from, v.states)
	})
	return e.body
}

// box is an axis-aligned rectangle in quantization steps, ends included.
type box struct{ x0, y0, x1, y1 int32 }

func (b box) holds(e protocol.WireState) bool {
	x, y := int32(e.X), int32(e.Y)
	return x >= b.x0 && x <= b.x1 && y >= b.y0 && y <= b.y1
}

// nearBox is cell c widened by a quarter cell on every side: wherever in c
// a client stands, everything within a quarter cell of it is near (16
// units with the default 64-unit cells), and most of what is within a
// cell. A box of 1.5 cells a side has about the area of a circle of one
// cell's radius, so far entities save a crowd about half its bytes.
func (f *frame) nearBox(c aoi.Cell) box {
	side, margin := f.cellSteps, f.cellSteps/4
	return box{x0: c.X*side - margin, y0: c.Y*side - margin,
		x1: (c.X+1)*side + margin, y1: (c.Y+1)*side + margin}
}

// snapshotter is one client's side of its snapshots: the cell it watches
// and the views it was sent that a later delta may be built against. It is
// owned by the client's writer goroutine.
type snapshotter struct {
	tracker aoi.Tracker
	idx     []int32
	// sent are the views sent, by tick modulo baselineCount. Only the one
	// the client acknowledged last and those sent after it are kept: a
	// client acknowledges newer and newer ticks, so an older one is never
	// a base again.
	sent [baselineCount]*view
	buf  []byte
}

func newSnapshotter(cellSize, hysteresis float32) snapshotter {
	return snapshotter{tracker: aoi.NewTracker(cellSize, hysteresis), buf: make([]byte, 0, 4096)}
}

// next returns this client's view of f and the base it is a delta against
// (nil: a full snapshot), and keeps the view as a future base.
func (sn *snapshotter) next(f *frame, me sim.View, ackTick uint64) (v, base *view) {
	cell, _ := sn.tracker.Update(me.X, me.Y)
	base = sn.base(ackTick)
	v, sn.idx = f.view(cell, sn.idx)
	sn.remember(v, ackTick)
	return v, base
}

// base returns the view the client acknowledged, if it is still kept.
func (sn *snapshotter) base(ackTick uint64) *view {
	if ackTick == 0 {
		return nil
	}
	if v := sn.sent[ackTick%baselineCount]; v != nil && v.tick == ackTick {
		return v
	}
	return nil
}

// remember keeps v as a future base and forgets those older than ackTick,
// the client's newest acknowledged.
func (sn *snapshotter) remember(v *view, ackTick uint64) {
	for i, old := range sn.sent {
		if old != nil && old.tick < ackTick {
			sn.sent[i] = nil
		}
	}
	sn.sent[v.tick%baselineCount] = v
}

// close forgets every view; the snapshotter is done.
func (sn *snapshotter) close() {
	sn.sent = [baselineCount]*view{}
}

// binary encodes v for this client into the reused buffer.
func (sn *snapshotter) binary(f *frame, v, base *view, ackSeq uint32) []byte {
	h := protocol.BinaryHeader{Mode: protocol.BinaryModeFull, Tick: v.tick, AckSeq: ackSeq}
	if base != nil {
		h.Mode, h.BaseTick = protocol.BinaryModeDelta, base.tick
	}
	sn.buf = append(protocol.AppendBinaryHeader(sn.buf[:0], h), f.encoding(v, base)...)
	return sn.buf
}

// jsonSnapshot builds v as a full or delta JSON snapshot.
func jsonSnapshot(v, base *view, ackSeq uint32) protocol.Snapshot {
	snap := protocol.Snapshot{Tick: v.tick, AckSeq: ackSeq, Mode: protocol.ModeFull}
	if base == nil {
		for _, e := range v.states {
			addArrival(&snap, e)
		}
		return snap
	}
	snap.Mode, snap.BaseTick = protocol.ModeDelta, base.tick
	diffStates(base.states, v.states, &snap)
	return snap
}

// addArrival lists e in snap as an entity that came into view.
func addArrival(snap *protocol.Snapshot, e protocol.WireState) {
	snap.Presence.Add = append(snap.Presence.Add, protocol.Arrival{ID: e.ID, Kind: e.Kind})
	snap.Movement = append(snap.Movement, position(e))
	snap.Combat = append(snap.Combat, protocol.Health{ID: e.ID, HP: e.HP})
}

// position is e's position as a JSON snapshot carries it: on the binary
// codec's grid, so both codecs show a client the same world.
func position(e protocol.WireState) protocol.Position {
	return protocol.Position{ID: e.ID, X: protocol.Dequantize(e.X), Y: protocol.Dequantize(e.Y)}
}

// diffStates fills snap with what changed from base to cur; both are sorted by ID.
func diffStates(base, cur []protocol.WireState, snap *protocol.Snapshot) {
	i, j := 0, 0
	for i < len(base) || j < len(cur) {
		switch {
		case j == len(cur) || (i < len(base) && base[i].ID < cur[j].ID):
			snap.Presence.Remove = append(snap.Presence.Remove, base[i].ID)
			i++
		case i == len(base) || cur[j].ID < base[i].ID:
			addArrival(snap, cur[j])
			j++
		default:
			was, is := base[i], cur[j]
			if was.X != is.X || was.Y != is.Y {
				snap.Movement = append(snap.Movement, position(is))
			}
			if was.HP != is.HP {
				snap.Combat = append(snap.Combat, protocol.Health{ID: is.ID, HP: is.HP})
			}
			i, j = i+1, j+1
		}
	}
}

// writeSnapshot sends this client its view of the newest frame, and the
// frame's events that happened in view.
func (sess *session) writeSnapshot() bool {
	player := sess.player.Load()
	f := sess.srv.latest.Load()
	if player == 0 || f == nil {
		return true
	}
	me, ok := f.Lookup(player)
	if !ok {
		return true // not in the world (yet, or any more)
	}
	sn := &sess.snap
	v, base := sn.next(f, me, sess.ackTick.Load())
	if !sess.writeEvents(f.Frame) {
		return false
	}
	if sess.binary.Load() {
		data := sn.binary(f, v, base, me.LastSeq)
		sess.srv.metrics.binarySnapshotSize.Observe(float64(len(data)))
		return sess.write(websocket.BinaryMessage, data, sentSnapshot)
	}
	data, err := protocol.MarshalMessage(protocol.KindSnapshot, 0, jsonSnapshot(v, base, me.LastSeq))
	if err != nil {
		return false
	}
	sess.srv.metrics.jsonSnapshotSize.Observe(float64(len(data)))
	return sess.write(websocket.TextMessage, data, sentSnapshot)
}

// writeEvents sends the frame's events that happened inside this client's
// area of interest.
func (sess *session) writeEvents(f *sim.Frame) bool {
	cell := sess.snap.tracker.Cell()
	for _, ev := range f.Events {
		at := f.Grid.CellOf(ev.X, ev.Y)
		if abs32(at.X-cell.X) > 1 || abs32(at.Y-cell.Y) > 1 {
			continue
		}
		data, err := protocol.MarshalMessage(protocol.KindEvent, 0, protocol.Event{Type: ev.Type, Tick: ev.Tick, Entity: ev.Entity, X: ev.X, Y: ev.Y})
		if err != nil || !sess.write(websocket.TextMessage, data, sentEvent) {
			return false
		}
	}
	return true
}

func abs32(v int32) int32 {
	if v < 0 {
		return -v
	}
	return v
}
