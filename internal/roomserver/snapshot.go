package roomserver

import (
	"sync"

	"github.com/gorilla/websocket"

	"github.com/roomkeeper/roomkeeper/internal/aoi"
	"github.com/roomkeeper/roomkeeper/internal/protocol"
	"github.com/roomkeeper/roomkeeper/internal/sim"
)

// baselineCount is how many sent snapshots a client can acknowledge back:
// at 20 Hz, 32 is 1.6 s of round trip before deltas fall back to full.
const baselineCount = 32

// baseline is one sent snapshot a later delta may be built against. Only
// the snapshot the client acknowledged last and those sent after it are
// kept: a client acknowledges newer and newer ticks, so an older one is
// never a base again, and its states go back to baselinePool for any
// client to reuse. A client's baselines cost (1 + snapshots in flight) x
// entities in view, not baselineCount x entities in view.
type baseline struct {
	tick   uint64
	states []protocol.EntityState
	buf    *[]protocol.EntityState // nil while the slot is free
}

// baselinePool recycles the states of released baselines across clients.
var baselinePool = sync.Pool{New: func() any { return new([]protocol.EntityState) }}

// snapshotter builds one client's snapshots. It is owned by the client's
// writer goroutine and reuses its buffers, so a steady stream of snapshots
// allocates next to nothing.
type snapshotter struct {
	// near is the distance within which entities are refreshed in every
	// snapshot; farther ones only in every other (their last sent
	// position stands in between), which halves the bytes a crowd costs.
	near float32
	// farEvery is how often (in snapshots) far entities are refreshed.
	farEvery  uint64
	sent      uint64
	tracker   aoi.Tracker
	idx       []int32
	cur       []protocol.EntityState
	baselines [baselineCount]baseline
	// released is the ack below which baselines were last released.
	released uint64
	buf      []byte
}

func newSnapshotter(cellSize, hysteresis float32, farEvery int) snapshotter {
	return snapshotter{near: cellSize, farEvery: uint64(max(1, farEvery)), tracker: aoi.NewTracker(cellSize, hysteresis), buf: make([]byte, 0, 4096)}
}

// interest collects the entities in the 3x3 cells around the player, sorted
// by ID. Entities farther than near are refreshed on one snapshot in
// farEvery; on the others they keep the position the client has from the
// acknowledged base.
func (sn *snapshotter) interest(f *sim.Frame, me sim.View, ackTick uint64) []protocol.EntityState {
	cell, _ := sn.tracker.Update(me.X, me.Y)
	sn.idx = f.Grid.AppendNeighbourhood(sn.idx[:0], cell)
	sn.cur = sn.cur[:0]
	var base []protocol.EntityState
	if b := sn.base(ackTick); b != nil && sn.sent%sn.farEvery != 0 {
		base = b.states
	}
	sn.sent++
	near2 := sn.near * sn.near
	j := 0
	for _, i := range sn.idx {
		v := &f.Entities[i]
		e := protocol.EntityState{ID: v.ID, Kind: protocol.EntityKind(v.Kind), X: v.X, Y: v.Y, HP: v.HP}
		for j < len(base) && base[j].ID < e.ID {
			j++
		}
		if dx, dy := v.X-me.X, v.Y-me.Y; j < len(base) && base[j].ID == e.ID && dx*dx+dy*dy > near2 {
			e.X, e.Y = base[j].X, base[j].Y
		}
		sn.cur = append(sn.cur, e)
	}
	return sn.cur
}

// base returns the snapshot the client acknowledged, if it is still kept.
func (sn *snapshotter) base(ackTick uint64) *baseline {
	if ackTick == 0 {
		return nil
	}
	b := &sn.baselines[ackTick%baselineCount]
	if b.tick != ackTick {
		return nil
	}
	return b
}

// remember keeps the snapshot just sent as a future baseline, and
// releases those older than ackTick, the client's newest acknowledged.
func (sn *snapshotter) remember(tick, ackTick uint64, states []protocol.EntityState) {
	if ackTick > sn.released { // nothing older can be freed until the ack moves
		sn.released = ackTick
		for i := range sn.baselines {
			if b := &sn.baselines[i]; b.buf != nil && b.tick < ackTick {
				b.release()
			}
		}
	}
	b := &sn.baselines[tick%baselineCount]
	if b.buf == nil {
		b.buf = baselinePool.Get().(*[]protocol.EntityState)
	}
	*b.buf = append((*b.buf)[:0], states...)
	b.tick, b.states = tick, *b.buf
}

// release returns the baseline's states to the pool and frees the slot.
func (b *baseline) release() {
	baselinePool.Put(b.buf)
	*b = baseline{}
}

// close releases every baseline; the snapshotter is done.
func (sn *snapshotter) close() {
	for i := range sn.baselines {
		if sn.baselines[i].buf != nil {
			sn.baselines[i].release()
		}
	}
}

// retained is how many entity states the baselines hold, for benchmarks.
func (sn *snapshotter) retained() int {
	n := 0
	for _, b := range sn.baselines {
		if b.buf != nil {
			n += cap(*b.buf)
		}
	}
	return n
}

// binary encodes a full or delta binary snapshot into the reused buffer.
func (sn *snapshotter) binary(tick uint64, ackSeq uint32, ackTick uint64, cur []protocol.EntityState) []byte {
	h := protocol.BinaryHeader{Tick: tick, AckSeq: ackSeq}
	var base []protocol.EntityState
	if b := sn.base(ackTick); b != nil {
		h.Mode, h.BaseTick, base = protocol.BinaryModeDelta, b.tick, b.states
	}
	sn.buf = protocol.AppendBinarySnapshot(sn.buf[:0], h, base, cur)
	return sn.buf
}

// json builds a full or delta JSON snapshot.
func (sn *snapshotter) json(tick uint64, ackSeq uint32, ackTick uint64, cur []protocol.EntityState) protocol.Snapshot {
	snap := protocol.Snapshot{Tick: tick, AckSeq: ackSeq, Mode: protocol.ModeFull}
	b := sn.base(ackTick)
	if b == nil {
		for _, e := range cur {
			snap.Presence.Add = append(snap.Presence.Add, protocol.Arrival{ID: e.ID, Kind: e.Kind})
			snap.Movement = append(snap.Movement, protocol.Position{ID: e.ID, X: e.X, Y: e.Y})
			snap.Combat = append(snap.Combat, protocol.Health{ID: e.ID, HP: e.HP})
		}
		return snap
	}
	snap.Mode, snap.BaseTick = protocol.ModeDelta, b.tick
	diffStates(b.states, cur, &snap)
	return snap
}

// diffStates fills snap with what changed from base to cur; both are sorted by ID.
func diffStates(base, cur []protocol.EntityState, snap *protocol.Snapshot) {
	i, j := 0, 0
	for i < len(base) || j < len(cur) {
		switch {
		case j == len(cur) || (i < len(base) && base[i].ID < cur[j].ID):
			snap.Presence.Remove = append(snap.Presence.Remove, base[i].ID)
			i++
		case i == len(base) || cur[j].ID < base[i].ID:
			e := cur[j]
			snap.Presence.Add = append(snap.Presence.Add, protocol.Arrival{ID: e.ID, Kind: e.Kind})
			snap.Movement = append(snap.Movement, protocol.Position{ID: e.ID, X: e.X, Y: e.Y})
			snap.Combat = append(snap.Combat, protocol.Health{ID: e.ID, HP: e.HP})
			j++
		default:
			was, is := base[i], cur[j]
			if protocol.Quantize(was.X) != protocol.Quantize(is.X) || protocol.Quantize(was.Y) != protocol.Quantize(is.Y) {
				snap.Movement = append(snap.Movement, protocol.Position{ID: is.ID, X: is.X, Y: is.Y})
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
	ackTick := sess.ackTick.Load()
	cur := sn.interest(f, me, ackTick)
	if !sess.writeEvents(f) {
		return false
	}
	var sent bool
	if sess.codec.Load() == protocol.CodecBinary {
		data := sn.binary(f.Tick, me.LastSeq, ackTick, cur)
		sess.srv.metrics.snapshotBytes.WithLabelValues(protocol.CodecBinary).Observe(float64(len(data)))
		sent = sess.write(websocket.BinaryMessage, data, "snapshot")
	} else {
		data, err := protocol.MarshalMessage(protocol.KindSnapshot, 0, sn.json(f.Tick, me.LastSeq, ackTick, cur))
		if err != nil {
			return false
		}
		sess.srv.metrics.snapshotBytes.WithLabelValues(protocol.CodecJSON).Observe(float64(len(data)))
		sent = sess.write(websocket.TextMessage, data, "snapshot")
	}
	sn.remember(f.Tick, ackTick, cur)
	return sent
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
		if err != nil || !sess.write(websocket.TextMessage, data, "event") {
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
