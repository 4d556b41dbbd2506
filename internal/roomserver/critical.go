package roomserver

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/roomkeeper/roomkeeper/internal/fanout"
	"github.com/roomkeeper/roomkeeper/internal/protocol"
	"github.com/roomkeeper/roomkeeper/internal/sim"
	"github.com/roomkeeper/roomkeeper/internal/store"
)

// A critical action (picking loot up, dropping an item, using one)
// follows one path: the world reserves the item at once, so nobody else
// can take it; the event and the ownership change (and, for an action
// whose effect is on the character, its state as the action leaves it)
// commit in one database transaction, off the tick and off the
// connection's reader; only then does the world apply it and the client
// get ack ok. A failed commit rolls the reservation back and the client
// gets persistence_unavailable (or already_taken).

// criticalAction is one such action.
type criticalAction struct {
	kind    string // event kind, e.g. loot.pickup
	reserve func(w *sim.World) (sim.Item, error)
	// moves are the ownership changes to commit, the item's first.
	moves    func(item sim.Item) []store.Move
	complete func(w *sim.World)
	cancel   func(w *sim.World)
	// state, when set, is the character's record as complete will leave
	// it (a potion's heal), taken with the reservation and committed with
	// the event: a crash after the commit finds the action and its
	// effect, never one without the other.
	state func(w *sim.World, item sim.Item) (sim.PlayerRecord, bool)
}

// runCritical reserves, then commits and acks on a goroutine of its own, so
// neither the tick nor this client's other messages wait for the database.
// A command repeated with the seq of one this seat already ran (a client
// retrying after a lost ack) is not run again: it gets the first one's
// ack, once that is known.
func (sess *session) runCritical(seq uint32, a criticalAction) {
	st, srv := sess.seat, sess.srv
	if st.transferring.Load() {
		sess.refuse(seq, protocol.Errorf(protocol.CodeInvalidAction, "on the way through a portal"))
		return
	}
	if st.inFlight.Add(1) > srv.cfg.MaxInFlight {
		st.inFlight.Add(-1)
		sess.refuse(seq, protocol.Errorf(protocol.CodeRateLimited, "too many actions waiting for the database"))
		return
	}
	result, fresh := st.beginAction(seq)
	if result == nil {
		st.inFlight.Add(-1)
		sess.refuse(seq, protocol.Errorf(protocol.CodeInvalidAction, "the character is leaving this map"))
		return
	}
	started := srv.work.Go(func() {
		if fresh {
			result.finish(srv.runAction(st, seq, a))
			st.critical.Done()
		}
		<-result.done
		// No longer in flight before the client hears so: a client that
		// sends its next action on the ack must find the slot free.
		st.inFlight.Add(-1)
		srv.replyTo(st, protocol.KindAck, result.ack)
	})
	if !started { // shutting down: nothing may start now
		st.inFlight.Add(-1)
		if fresh {
			result.finish(failed(errShuttingDown))
			st.critical.Done()
		}
		sess.refuse(seq, errShuttingDown)
	}
}

// runAction runs a fresh critical action and returns its ack, counted.
func (s *Server) runAction(st *seat, seq uint32, a criticalAction) protocol.Ack {
	start := time.Now()
	ack := s.critical(st, seq, a)
	ack.Seq = seq
	s.metrics.criticalSeconds.WithLabelValues(codeLabel(ack)).Observe(time.Since(start).Seconds())
	if !ack.OK {
		s.metrics.refused.WithLabelValues(string(ack.Code)).Inc()
	}
	return ack
}

func codeLabel(ack protocol.Ack) string {
	if ack.OK {
		return "ok"
	}
	return string(ack.Code)
}

// critical runs one action to its durable end and returns the ack.
func (s *Server) critical(st *seat, seq uint32, a criticalAction) protocol.Ack {
	ctx, cancel := s.work.context(s.cfg.CriticalTimeout)
	defer cancel()
	var r reservation
	if err := s.loop.Do(ctx, func(w *sim.World) { r = reserveItem(w, a) }); err != nil {
		return failed(loopError(err))
	}
	if r.err != nil {
		return failed(worldError(r.err))
	}
	err := s.commit(ctx, st, seq, a, r)
	if errors.Is(err, store.ErrCommitUnknown) {
		err = s.settleCommit(st, seq, a, r)
	}
	if errors.Is(err, errCommitUnsettled) {
		return failed(errShuttingDown) // the item stays reserved: the stored outcome is the truth
	}
	if err != nil {
		s.applyInWorld(a.cancel)
		return failed(s.storeError(err, "saving the action"))
	}
	var owned *sim.Owned
	s.applyInWorld(func(w *sim.World) {
		a.complete(w)
		owned = w.Owned(st.player)
	})
	return protocol.Ack{OK: true, Inventory: fanout.ItemViews(owned)}
}

// errCommitUnsettled: the map shut down before it found out how an
// action whose commit went unanswered ended.
var errCommitUnsettled = errors.New("the commit's outcome is still unknown")

// settleCommit finds out how an action whose commit went unanswered
// (store.ErrCommitUnknown: it may have committed) ended, by committing it
// again under the same event id until the database answers: recorded
// before or now (nil), or refused. Until then the item stays reserved and
// the client waits for its ack, since undoing the action and completing it
// could each be untrue; a retry of the same seq waits for the same answer.
// A try that did nothing (the database unavailable, or the try not taken
// up by a group before its deadline) answers nothing.
func (s *Server) settleCommit(st *seat, seq uint32, a criticalAction, r reservation) error {
	var outcome error
	settled := s.retry(s.work.ctx, "committing again an action whose commit went unanswered", func() error {
		ctx, cancel := s.work.context(s.cfg.CriticalTimeout)
		defer cancel()
		if outcome = s.commit(ctx, st, seq, a, r); errors.Is(outcome, store.ErrUnavailable) {
			return outcome
		}
		return nil
	})
	if !settled || errors.Is(outcome, store.ErrGroupsClosed) {
		return errCommitUnsettled
	}
	return outcome
}

// reservation is what the world reserved for an action, at which tick,
// and the character's record as the action will leave it (when the
// action has a state).
type reservation struct {
	item     sim.Item
	tick     uint64
	record   sim.PlayerRecord
	recorded bool
	err      error
}

func reserveItem(w *sim.World, a criticalAction) reservation {
	r := reservation{tick: w.Tick()}
	if r.item, r.err = a.reserve(w); r.err == nil && a.state != nil {
		r.record, r.recorded = a.state(w, r.item)
	}
	return r
}

// commit writes the event and the ownership change (with the character's
// state, when the action has one); guests and maps without a database
// have nothing to write.
func (s *Server) commit(ctx context.Context, st *seat, seq uint32, a criticalAction, r reservation) error {
	if !s.persisted(st) {
		return nil
	}
	item := r.item
	payload, _ := json.Marshal(map[string]string{"item": item.ID, "kind": item.Kind})
	ev := store.CriticalEvent{EventID: eventID(st, seq), CharacterID: st.character, MapInstance: s.cfg.Instance,
		Kind: a.kind, ItemID: item.ID, Tick: int64(r.tick), Payload: payload, CreatedAt: s.deps.Clock(), Epoch: st.lease().Epoch}
	if r.recorded {
		state := encodeState(s.cfg.Map, r.record)
		ev.State = &state
	}
	err := s.db.CommitCritical(ctx, ev, a.moves(item)...)
	if errors.Is(err, store.ErrLeaseLost) {
		s.work.Go(func() { s.evict(st, "the character became active in another map") })
	}
	return err
}

// eventID is the idempotency key of a seat's command seq: the same action
// sent again has the same id, so the database records it once.
func eventID(st *seat, seq uint32) string {
	sum := sha256.Sum256(fmt.Appendf(nil, "%s\x00%s\x00%d", st.character, st.id, seq))
	return hex.EncodeToString(sum[:16])
}

func failed(err error) protocol.Ack {
	pe := asProtocolError(err)
	return protocol.Ack{OK: false, Code: pe.Code, Message: pe.Message}
}
