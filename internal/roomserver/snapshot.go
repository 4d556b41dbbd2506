package roomserver

import (
	"github.com/gorilla/websocket"

	"github.com/roomkeeper/roomkeeper/internal/aoi"
	"github.com/roomkeeper/roomkeeper/internal/protocol"
	"github.com/roomkeeper/roomkeeper/internal/sim"
)

// baselineCount is how many sent snapshots a client can acknowledge back:
// at 20 Hz, 32 is 1.6 s of round trip before deltas fall back to full.
const baselineCount = 32

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
	// owned is the player's inventory as last sent: a snapshot carries
	// the inventory channel when the world's differs (or in full mode).
	owned *sim.Owned
}

func newSnapshotter(cellSize, hysteresis float32) snapshotter {
	return snapshotter{tracker: aoi.NewTracker(cellSize, hysteresis), buf: make([]byte, 0, 4096)}
}

// next returns this client's view of f and the base it is a delta against
// (nil: a full snapshot). The caller holds f, and once it has encoded the
// snapshot, calls remember(v, ackTick), which may let go of base.
func (sn *snapshotter) next(f *frame, me sim.View, ackTick uint64) (v, base *view) {
	cell, _ := sn.tracker.Update(me.X, me.Y)
	v, sn.idx = f.view(cell, sn.idx)
	return v, sn.base(ackTick)
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

// remember keeps v as a future base and lets go of those older than
// ackTick, the client's newest acknowledged.
func (sn *snapshotter) remember(v *view, ackTick uint64) {
	for i, old := range sn.sent {
		if old != nil && old.tick < ackTick {
			old.release()
			sn.sent[i] = nil
		}
	}
	v.hold()
	slot := &sn.sent[v.tick%baselineCount]
	if *slot != nil { // baselineCount snapshots in flight: the oldest goes
		(*slot).release()
	}
	*slot = v
}

// close lets go of every view; the snapshotter is done.
func (sn *snapshotter) close() {
	for i, v := range sn.sent {
		if v != nil {
			v.release()
			sn.sent[i] = nil
		}
	}
}

// inventory is the inventory channel to send with the next snapshot: the
// player's when it changed since the last one sent, or when base is nil
// (a full snapshot); else nil.
func (sn *snapshotter) inventory(owned *sim.Owned, base *view) *protocol.Inventory {
	if owned == nil || (owned == sn.owned && base != nil) {
		return nil
	}
	sn.owned = owned
	return inventoryView(owned)
}

// inventoryView is what a player is shown of its own inventory.
func inventoryView(o *sim.Owned) *protocol.Inventory {
	inv := &protocol.Inventory{Items: itemViews(o), Weight: o.Weight, Skills: make([]protocol.SkillView, len(o.Skills))}
	for i, s := range o.Skills {
		inv.Skills[i] = protocol.SkillView{Name: s.Name, Level: s.Level, XP: s.XP}
	}
	return inv
}

// binary encodes v for this client into the reused buffer.
func (sn *snapshotter) binary(f *frame, v, base *view, ackSeq uint32, inv *protocol.Inventory) []byte {
	h := protocol.BinaryHeader{Mode: protocol.BinaryModeFull, Tick: v.tick, AckSeq: ackSeq, Inventory: inv}
	if base != nil {
		h.Mode, h.BaseTick = protocol.BinaryModeDelta, base.tick
	}
	sn.buf = append(protocol.AppendBinaryHeader(sn.buf[:0], h), f.encoding(v, base)...)
	sn.buf = protocol.AppendBinaryInventory(sn.buf, inv)
	return sn.buf
}

// jsonSnapshot builds v as a full or delta JSON snapshot.
func jsonSnapshot(v, base *view, ackSeq uint32, inv *protocol.Inventory) protocol.Snapshot {
	snap := protocol.Snapshot{Tick: v.tick, AckSeq: ackSeq, Mode: protocol.ModeFull, Inventory: inv}
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
	snap.Channel(e)
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
			if protocol.ExtrasChanged(was, is) {
				snap.Channel(is)
			}
			i, j = i+1, j+1
		}
	}
}

// writeSnapshot sends this client its view of the newest frame, and the
// frame's events that happened in view.
func (sess *session) writeSnapshot() bool {
	player := sess.player.Load()
	if player == 0 {
		return true
	}
	f := sess.srv.acquireFrame()
	if f == nil {
		return true
	}
	messageType, data, ok := sess.buildSnapshot(f, player)
	f.release() // data is the writer's own: a slow socket keeps no frame
	return ok && (data == nil || sess.write(messageType, data, sentSnapshot))
}

// buildSnapshot writes the frame's events in view and encodes the
// snapshot of f for this client; nil data when the player is not in the
// world, ok false when the connection failed.
func (sess *session) buildSnapshot(f *frame, player uint32) (messageType int, data []byte, ok bool) {
	me, found := f.Lookup(player)
	if !found {
		return 0, nil, true // not in the world (yet, or any more)
	}
	sn := &sess.snap
	ackTick := sess.ackTick.Load()
	v, base := sn.next(f, me, ackTick)
	if !sess.writeEvents(f.Frame) {
		return 0, nil, false
	}
	messageType, data = sess.encodeSnapshot(f, v, base, me.LastSeq, sn.inventory(me.Owned, base))
	sn.remember(v, ackTick)
	return messageType, data, data != nil
}

// encodeSnapshot encodes v against base in the client's codec; nil data
// if it cannot (failEncoding has then closed the connection).
func (sess *session) encodeSnapshot(f *frame, v, base *view, ackSeq uint32, inv *protocol.Inventory) (int, []byte) {
	if sess.binary.Load() {
		data := sess.snap.binary(f, v, base, ackSeq, inv)
		sess.srv.metrics.binarySnapshotSize.Observe(float64(len(data)))
		return websocket.BinaryMessage, data
	}
	data, err := sess.srv.cfg.marshal(protocol.KindSnapshot, 0, jsonSnapshot(v, base, ackSeq, inv))
	if err != nil {
		sess.failEncoding(err)
		return 0, nil
	}
	sess.srv.metrics.jsonSnapshotSize.Observe(float64(len(data)))
	return websocket.TextMessage, data
}

// failEncoding ends a connection whose snapshot could not be encoded (a
// bug: the world holds a value the codec refuses). Skipping the snapshot
// would leave the client connected and blind; closed with 1011 and
// internal, it resumes its seat, and the log and
// roomkeeper_roomserver_disconnects_total{reason="encode_failed"} say why.
func (sess *session) failEncoding(err error) {
	sess.srv.deps.Log.Error("Encoding a snapshot failed; closing the connection", "player", sess.player.Load(), "err", err)
	sess.setReason("encode_failed")
	sess.writeCloseNow(websocket.CloseInternalServerErr, string(protocol.CodeInternal))
}

func abs32(v int32) int32 {
	if v < 0 {
		return -v
	}
	return v
}
