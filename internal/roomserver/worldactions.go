package roomserver

import (
	"github.com/roomkeeper/roomkeeper/internal/protocol"
	"github.com/roomkeeper/roomkeeper/internal/sim"
)

// World actions are the commands the world answers between two ticks
// without the database: attacks and door toggles. Each seat runs its own
// one at a time, in command order, so its acks come in that order and one
// client holds at most one job in the map's shared control queue (where
// joins, resumes, reservations and transfers wait too); at most
// Config.MaxWorldActions wait behind it, and more are refused with
// rate_limited.

// worldAction is one queued command: act runs in the world, and refusal
// makes the client's answer of act's error.
type worldAction struct {
	seq     uint32
	act     func(*sim.World) error
	refusal func(error) error
}

// actionQueue is one seat's world actions waiting to run.
type actionQueue = drainQueue[worldAction]

// worldAction runs act in the world between two ticks, off the reader, in
// this seat's command order, and acks the command: ok, or refused with
// what refusal makes of act's error.
func (sess *session) worldAction(seq uint32, act func(*sim.World) error, refusal func(error) error) {
	srv, st := sess.srv, sess.seat
	queued, start := st.worldActions.push(worldAction{seq: seq, act: act, refusal: refusal}, srv.cfg.MaxWorldActions)
	switch {
	case !queued:
		sess.refuse(seq, protocol.Errorf(protocol.CodeRateLimited, "too many actions waiting for the world: wait for their acks"))
	case start && !srv.work.Go(func() { srv.runWorldActions(st) }):
		for a, ok := st.worldActions.next(); ok; a, ok = st.worldActions.next() {
			srv.refuseTo(st, a.seq, errShuttingDown)
		}
	}
}

// runWorldActions runs the seat's queued world actions until none is
// left, answering each to the client attached to the seat by then.
func (s *Server) runWorldActions(st *seat) {
	for a, ok := st.worldActions.next(); ok; a, ok = st.worldActions.next() {
		ctx, cancel := s.work.context(s.cfg.WorldActionTimeout)
		var actErr error
		err := s.loop.Do(ctx, func(w *sim.World) { actErr = a.act(w) })
		cancel()
		switch {
		case err != nil:
			s.refuseTo(st, a.seq, loopError(err))
		case actErr != nil:
			s.refuseTo(st, a.seq, a.refusal(actErr))
		default:
			s.replyTo(st, protocol.KindAck, protocol.Ack{Seq: a.seq, OK: true})
		}
	}
}
