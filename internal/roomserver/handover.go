package roomserver

import (
	"context"
	"errors"
	"time"

	"github.com/roomkeeper/roomkeeper/internal/protocol"
	"github.com/roomkeeper/roomkeeper/internal/sim"
	"github.com/roomkeeper/roomkeeper/internal/store"
)

// A pod that the operator replaces by handover (docs/operations.md) hands
// every connected player over to the pod that takes its place, through
// the transfer machinery with the same map as destination: the player's
// state is committed and its lease handed over in one transaction, and the
// client gets a transfer message to the new pod's endpoint, where it comes
// back where it stood. The player sees a pause, not a disconnect.

// sideHandover labels the transfers of a handover in the metrics.
const sideHandover = "handover"

// HandOver stops admitting players and hands every connected one over to
// the pod at endpoint; it returns how many it handed over. The players'
// transfers commit in one transaction (a handover moves a whole map at
// once, and one commit is far quicker than a hundred). A player whose
// handover fails stays, and Shutdown then drains it (its client resumes
// on the new pod). Call Shutdown after it.
func (s *Server) HandOver(ctx context.Context, endpoint string) int {
	s.draining.Store(true)
	dest := Destination{Map: s.cfg.Map, Instance: s.cfg.Instance, Endpoint: endpoint}
	var leaving []*seat
	for _, st := range s.seats.all() {
		// Detached seats are saved by Shutdown and resumed on the new pod;
		// a seat on its way through a portal goes where it was going.
		if s.seats.sessionOf(st) != nil && st.transferring.CompareAndSwap(false, true) {
			st.closeActions()
			leaving = append(leaving, st)
		}
	}
	ctx, cancel := context.WithTimeout(ctx, s.cfg.TransferTimeout)
	defer cancel()
	start := time.Now()
	if s.world != nil {
		// The world stops here and goes first: the new pod takes it when
		// released, before the first player arrives.
		s.noteFailure(opWorldCheckpoint, s.world.save(ctx, true))
	}
	handed := s.handOverAll(ctx, leaving, dest)
	for _, st := range leaving {
		if !handed[st] {
			st.reopenActions()
			st.transferring.Store(false)
		}
	}
	s.deps.Log.Info("Handed players over", "players", len(handed), "of", len(leaving), "to", endpoint,
		"seconds", time.Since(start).Seconds())
	return len(handed)
}

// handOverAll commits the transfers of the leaving seats to dest in one
// transaction and sends each client its transfer; should the batch fail,
// each seat is tried on its own. It returns the seats handed over.
func (s *Server) handOverAll(ctx context.Context, leaving []*seat, dest Destination) map[*seat]bool {
	handed := map[*seat]bool{}
	msgs, err := s.beginHandover(ctx, leaving, dest)
	if err != nil {
		s.deps.Log.Warn("Handing the players over at once failed; one by one", "err", err)
		for _, st := range leaving {
			if msg, err := s.transferTo(ctx, st, dest); err == nil {
				s.sendAway(st, msg)
				handed[st] = true
			} else {
				s.metrics.transfers.WithLabelValues(sideHandover, string(asProtocolError(err).Code)).Inc()
			}
		}
		return handed
	}
	for _, st := range leaving {
		s.depart(st, msgs[st])
		s.sendAway(st, msgs[st])
		handed[st] = true
	}
	return handed
}

// beginHandover reads the leaving players' state, signs their tokens and
// commits every transfer (state, lease, transfer row) in one transaction.
func (s *Server) beginHandover(ctx context.Context, leaving []*seat, dest Destination) (map[*seat]protocol.Transfer, error) {
	records := make([]sim.PlayerRecord, len(leaving))
	missing := false
	if err := s.loop.Do(ctx, func(w *sim.World) {
		for i, st := range leaving {
			var ok bool
			records[i], ok = w.Record(st.player)
			missing = missing || !ok
		}
	}); err != nil || missing {
		return nil, errors.Join(err, errors.New("a player is not in the world"))
	}
	msgs := make(map[*seat]protocol.Transfer, len(leaving))
	var transfers []store.Transfer
	var travellers []*seat // the seat of each transfer
	var states []store.CharacterState
	deadline := s.transferDeadline()
	if s.db != nil {
		s.db.leases.expectSweep(deadline)
	}
	for i, st := range leaving {
		id := newTransferID()
		msg, err := s.signTransfer(st, dest, id)
		if err != nil {
			return nil, err
		}
		msgs[st] = msg
		if s.persisted(st) {
			transfers = append(transfers, store.Transfer{ID: id, CharacterID: st.character, FromInstance: s.cfg.Instance,
				ToInstance: dest.Instance, ToMap: dest.Map, State: store.TransferTokenIssued,
				FromX: records[i].X, FromY: records[i].Y, ExpiresAt: deadline})
			states = append(states, encodeState(s.cfg.Map, records[i]))
			travellers = append(travellers, st)
		}
	}
	if len(transfers) > 0 {
		if err := s.db.BeginTransfers(ctx, transfers, states); err != nil {
			if errors.Is(err, store.ErrCommitUnknown) {
				// Taken back before each player is tried on its own, whose
				// transfer would otherwise find the lease in transfer and
				// sign the player out as active in another map.
				for i, st := range travellers {
					s.settleTransfer(st, transfers[i].ID)
				}
			}
			return nil, err
		}
		for i, st := range leaving {
			if s.persisted(st) {
				s.logTransfer(st, records[i], dest)
			}
		}
	}
	return msgs, nil
}

// sendAway sends a handed-over player's client its transfer and closes
// the connection, as a portal does.
func (s *Server) sendAway(st *seat, msg protocol.Transfer) {
	s.metrics.transfers.WithLabelValues(sideHandover, "ok").Inc()
	if sess := s.seats.sessionOf(st); sess != nil {
		sess.sendTransfer(msg)
	}
}
