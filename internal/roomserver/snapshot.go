package roomserver

import (
	"github.com/gorilla/websocket"

	"github.com/roomkeeper/roomkeeper/internal/fanout"
	"github.com/roomkeeper/roomkeeper/internal/protocol"
)

// writeSnapshot sends this client its view of the newest frame, and the
// frame's events that happened in view.
func (sess *session) writeSnapshot() bool {
	player := sess.player.Load()
	if player == 0 {
		return true
	}
	f := sess.srv.stream.Acquire()
	if f == nil {
		return true
	}
	messageType, data, ok := sess.buildSnapshot(f, player)
	f.Release() // data is the writer's own: a slow socket keeps no frame
	return ok && (data == nil || sess.write(messageType, data, sentSnapshot))
}

// buildSnapshot writes the frame's events in view and encodes the
// snapshot of f for this client; nil data when the player is not in the
// world, ok false when the connection failed.
func (sess *session) buildSnapshot(f *fanout.Frame, player uint32) (messageType int, data []byte, ok bool) {
	me, found := f.Lookup(player)
	if !found {
		return 0, nil, true // not in the world (yet, or any more)
	}
	sn := &sess.snap
	ackTick := sess.ackTick.Load()
	v, base := sn.Next(f, me, ackTick)
	if !sess.writeEvents(f.Frame) {
		return 0, nil, false
	}
	messageType, data = sess.encodeSnapshot(f, v, base, me.LastSeq, sn.Inventory(me.Owned, base))
	sn.Remember(v, ackTick)
	return messageType, data, data != nil
}

// encodeSnapshot encodes v against base in the client's codec; nil data
// if it cannot (failEncoding has then closed the connection).
func (sess *session) encodeSnapshot(f *fanout.Frame, v, base *fanout.View, ackSeq uint32, inv *protocol.Inventory) (int, []byte) {
	if sess.binary.Load() {
		data := sess.snap.Binary(f, v, base, ackSeq, inv)
		sess.srv.metrics.binarySnapshotSize.Observe(float64(len(data)))
		return websocket.BinaryMessage, data
	}
	data, err := sess.srv.cfg.marshal(protocol.KindSnapshot, 0, fanout.JSONSnapshot(v, base, ackSeq, inv))
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
