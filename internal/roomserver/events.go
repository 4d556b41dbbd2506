package roomserver

// Events reach a client reliably, in order, once each, for as long as it
// is not a whole event log behind (internal/fanout/events.go): its writer
// sends, with each snapshot, the logged events after the last it passed
// that concern the client's area of interest.

import (
	"github.com/gorilla/websocket"

	"github.com/roomkeeper/roomkeeper/internal/sim"
)

// startEvents sets where this connection's events begin: after lastEvent,
// the last one a resumed client received (one of a pod gone before this
// one started: every event here), or after the newest event for a new
// player and a client that names none or one the map never had.
func (sess *session) startEvents(lastEvent uint64) {
	last := sess.srv.stream.Events.Last()
	if lastEvent == 0 || lastEvent > last {
		lastEvent = last
	}
	sess.eventsSent.Store(lastEvent)
}

// writeEvents sends the events after the last sent that happened inside
// this client's area of interest.
func (sess *session) writeEvents(f *sim.Frame) bool {
	cell := sess.snap.Cell()
	sess.eventBuf = sess.srv.stream.Events.Since(sess.eventsSent.Load(), sess.eventBuf[:0])
	for _, ev := range sess.eventBuf {
		if ev.Concerns(f.Grid, cell) && !sess.write(websocket.TextMessage, ev.Message(), sentEvent) {
			return false
		}
		sess.eventsSent.Store(ev.ID())
	}
	return true
}
