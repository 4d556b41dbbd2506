package roomserver

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"time"

	"github.com/roomkeeper/roomkeeper/internal/protocol"
	"github.com/roomkeeper/roomkeeper/internal/sim"
	"github.com/roomkeeper/roomkeeper/internal/store"
	"github.com/roomkeeper/roomkeeper/internal/token"
)

// A transfer moves a character from one map to another (through a portal,
// portal.go, or a whole pod's players at a handover, handover.go). Its
// row in the transfers table goes through the states of
// docs/architecture.md ("Transfers"), and each transition is one function
// here:
//
//	transition    side         state after                      function
//	request       source       requested                        requestTransfer
//	issue tokens  source       token_issued                     issueTokens
//	accept        destination  destination_accepted             acceptTransfer
//	complete      destination  source_released, then completed  completeTransfer
//	abort         source       aborted (the tokens expired)     abortTransfer
//	undo          source       aborted (returned to the source) undoTransfer
//
// A handover commits request and issue tokens for all its players in
// one transaction (beginHandover); a guest has no row and only gets its
// tokens.

// databaseStep bounds one of a transfer's database steps by
// CriticalTimeout, as any critical action is: a frozen database answers
// persistence_unavailable in seconds, not when the whole transfer's time
// (TransferTimeout, which includes waiting for a destination to start)
// runs out.
func (s *Server) databaseStep(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(ctx, s.cfg.CriticalTimeout)
}

// transferGrace is how long past its token's expiry a transfer stays
// pending: the verifier's leeway and a little margin.
const transferGrace = token.DefaultLeeway + time.Second

// transferTo commits the transfer of st to dest, signs its tokens and takes
// the player out of the world (depart). HandOver, a pod handing its players
// over, uses it one by one when the batch fails.
func (s *Server) transferTo(ctx context.Context, st *seat, dest Destination) (protocol.Transfer, error) {
	id := newTransferID()
	if err := s.requestTransfer(ctx, st, dest, id); err != nil {
		return protocol.Transfer{}, err
	}
	msg, err := s.issueTokens(ctx, st, dest, id)
	if err != nil {
		return protocol.Transfer{}, s.undoTransfer(st, id, err)
	}
	s.depart(st, msg)
	return msg, nil
}

// requestTransfer is the commit point (-> requested): the character's
// checkpoint and its lease handed to dest, in one transaction. A guest
// has nothing to commit.
func (s *Server) requestTransfer(ctx context.Context, st *seat, dest Destination, id string) error {
	if !s.persisted(st) {
		return nil
	}
	ctx, cancel := s.databaseStep(ctx)
	defer cancel()
	var record sim.PlayerRecord
	var ok bool
	if err := s.loop.Do(ctx, func(w *sim.World) { record, ok = w.Record(st.player) }); err != nil || !ok {
		return protocol.Errorf(protocol.CodeInternal, "the player is not in the world")
	}
	deadline := s.transferDeadline()
	s.db.leases.expectSweep(deadline) // before the commit: a sweep must follow it
	t := store.Transfer{ID: id, CharacterID: st.character, FromInstance: s.cfg.Instance, ToInstance: dest.Instance,
		ToMap: dest.Map, FromX: record.X, FromY: record.Y, ExpiresAt: deadline}
	err := s.db.BeginTransfer(ctx, t, encodeState(s.cfg.Map, record))
	if errors.Is(err, store.ErrCommitUnknown) {
		s.settleTransfer(st, id)
	}
	if errors.Is(err, store.ErrLeaseLost) {
		s.work.Go(func() { s.evict(st, "the character became active in another map") })
	}
	if err != nil {
		return s.storeError(err, "saving the transfer")
	}
	s.logTransfer(st, record, dest)
	return nil
}

// eventTransfer is the event log's type of a transfer out of the map,
// through a portal or a handover (its detail the destination instance).
const eventTransfer = "transfer"

// logTransfer logs a committed transfer out of the map.
func (s *Server) logTransfer(st *seat, record sim.PlayerRecord, dest Destination) {
	s.db.logEvent(store.LoggedEvent{Type: eventTransfer, Tick: int64(record.Tick), Entity: int64(st.player),
		Character: st.character, X: record.X, Y: record.Y, Detail: dest.Instance})
}

// issueTokens signs the transfer's tokens and records them (requested ->
// token_issued); it returns the message that sends the client on its way.
func (s *Server) issueTokens(ctx context.Context, st *seat, dest Destination, id string) (protocol.Transfer, error) {
	msg, err := s.signTransfer(st, dest, id)
	if err != nil || !s.persisted(st) {
		return msg, err
	}
	ctx, cancel := s.databaseStep(ctx)
	defer cancel()
	if err := s.db.AdvanceTransfer(ctx, id, store.TransferRequested, store.TransferTokenIssued); err != nil {
		return protocol.Transfer{}, s.storeError(err, "issuing the transfer token")
	}
	return msg, nil
}

// signTransfer signs the tokens of transfer id and returns the message
// that sends the client on its way.
func (s *Server) signTransfer(st *seat, dest Destination, id string) (protocol.Transfer, error) {
	forward, back := s.transferClaims(st, dest, id)
	signer := token.NewSigner(s.deps.Keys, s.deps.Clock)
	raw, signed, err := signer.Sign(forward, s.cfg.TokenTTL)
	if err != nil {
		return protocol.Transfer{}, protocol.Errorf(protocol.CodeInternal, "signing the transfer token failed")
	}
	returnRaw, _, err := signer.Sign(back, 2*s.cfg.TokenTTL)
	if err != nil {
		return protocol.Transfer{}, protocol.Errorf(protocol.CodeInternal, "signing the transfer token failed")
	}
	return protocol.Transfer{Endpoint: dest.Endpoint, Ticket: raw, Map: dest.Map, Instance: dest.Instance, ID: id,
		ReturnTicket: returnRaw, ExpiresAt: signed.ExpiresAt.UnixMilli()}, nil
}

// transferClaims are the tokens of a transfer: forward to the destination,
// and back to this map should the destination not take the player.
func (s *Server) transferClaims(st *seat, dest Destination, id string) (forward, back token.Claims) {
	forward = token.Claims{Type: token.TypeTransfer, Subject: st.user, Character: st.character, Room: s.cfg.Room,
		Map: dest.Instance, From: s.cfg.Instance, Transfer: id, Party: st.party}
	back = forward
	back.Map, back.From = s.cfg.Instance, dest.Instance
	return forward, back
}

// completeTransfer finishes the destination side once the player is
// welcomed (destination_accepted -> source_released -> completed): the
// source's copy is gone (the lease fences it out) and the transfer is
// complete. The rows are completed in batches (transferCompleter), off the
// admissions' way. A failure leaves the row at destination_accepted, which
// is harmless: the lease, not the row, decides who plays the character.
func (s *Server) completeTransfer(st *seat, start time.Time) {
	result := "arrived"
	if st.returned {
		result = "returned"
	}
	s.metrics.transfers.WithLabelValues(sideDestination, result).Inc()
	s.metrics.transferSeconds.WithLabelValues(sideDestination).Observe(time.Since(start).Seconds())
	if !s.persisted(st) || st.returned {
		return
	}
	if _, drain := s.completer.push(st.transfer, 0); drain && !s.work.Go(s.completeTransfers) {
		s.completer.all() // shutting down: the rows stay accepted, which is harmless
	}
}

// completeTransfers completes the queued transfers until none is left.
func (s *Server) completeTransfers() {
	for {
		ids, ok := s.completer.all()
		if !ok {
			return
		}
		ctx, cancel := s.work.context(s.cfg.CriticalTimeout)
		_, err := s.db.CompleteTransfers(ctx, ids)
		cancel()
		s.noteFailure(opCompleteTransfer, err)
	}
}

// abortTransfer ends transfer t, which left this map and whose every
// token expired without the destination taking the character (-> aborted):
// the lease in transfer is freed, and the character's checkpoint still
// places it on this map.
func (s *Server) abortTransfer(ctx context.Context, t store.Transfer) error {
	if err := s.db.AbortTransfer(ctx, t.ID, "the transfer tokens expired unused"); err != nil {
		return err
	}
	s.metrics.transfers.WithLabelValues(sideSource, "expired").Inc()
	s.deps.Log.Info("Transfer expired unused", "transfer", t.ID, "character", t.CharacterID, "to", t.ToInstance)
	return nil
}

// undoTransfer takes the character back after its transfer was committed
// but could not be handed to the client: it returns to this map as if it
// had come back through the return ticket. If even that fails the player
// is sent away; the transfer expires and frees the character.
func (s *Server) undoTransfer(st *seat, id string, cause error) error {
	if !s.persisted(st) {
		return cause
	}
	ctx, cancel := context.WithTimeout(context.Background(), s.cfg.CriticalTimeout)
	defer cancel()
	a, err := s.db.arriveByTransfer(ctx, id, st.character)
	if err != nil {
		s.noteFailure(opUndoTransfer, err)
		s.sendBackUntransferred(st, id)
		return cause
	}
	s.reclaim(st, a)
	return cause
}

// settleTransfer takes back a transfer whose commit went unanswered
// (store.ErrCommitUnknown), so that none is left behind. Had it
// committed, the character's lease would be in transfer to a map that
// never gets the token, and the lease keeper would sign the player out as
// active in another map once the portal's failure cleared the seat's
// transferring mark (seen on a 50-room soak's saturated database,
// docs/benchmarks.md). The source takes it back as a returning player
// would: the transfer aborted, the lease reclaimed under a new epoch; an
// unknown transfer never committed. While the database does not answer it
// tries again, the seat still marked as transferring; it gives up when
// the map shuts down, whose players are handed over then.
func (s *Server) settleTransfer(st *seat, id string) {
	s.retry(s.work.ctx, "taking back a transfer whose commit went unanswered", func() error {
		ctx, cancel := s.work.context(s.cfg.CriticalTimeout)
		defer cancel()
		a, err := s.db.arriveByTransfer(ctx, id, st.character)
		switch {
		case errors.Is(err, store.ErrUnavailable):
			return err
		case errors.Is(err, store.ErrTransferSettled):
			return s.reclaimSettled(ctx, st, id)
		case err == nil:
			s.reclaim(st, a)
		}
		return nil // never committed (ErrNotFound)
	})
}

// reclaimSettled takes the lease back for a seat whose transfer was
// settled while its take-back waited for the database: the expiry sweep
// aborted it past its deadline and freed the lease (the database away
// longer than the deadline: seen on a 50-room soak, docs/benchmarks.md,
// "Fifteenth session"), or an earlier try committed unanswered. The map
// never let the player go, so it claims the lease anew; had it left the
// seat on the lease that was gone, the lease keeper would sign the player
// out as active in another map. A lease another map holds by now (the
// player joined there) sends the player back to join again.
func (s *Server) reclaimSettled(ctx context.Context, st *seat, id string) error {
	lease, err := s.db.claimLease(ctx, st.character)
	switch {
	case errors.Is(err, store.ErrUnavailable):
		return err
	case err != nil:
		s.noteFailure(opUndoTransfer, err)
		s.sendBackUntransferred(st, id)
		return nil
	}
	s.reclaim(st, store.Arrival{Lease: lease})
	return nil
}

// sendBackUntransferred sends the player of a seat whose transfer id
// could be neither completed nor taken back to join again. The seat is
// out of the table at once, before the caller clears its transferring
// mark: a seat is closed once, by whoever takes it out, and the lease
// keeper finding the lease the transfer freed must not sign the player
// out as taken over elsewhere.
func (s *Server) sendBackUntransferred(st *seat, id string) {
	if s.seats.remove(st) && !s.work.Go(func() { s.closeSentBack(st, "the transfer could not complete: join again shortly") }) {
		s.deps.Log.Warn("A transfer could be neither completed nor undone at shutdown; it expires by itself", "transfer", id, "character", st.character)
	}
}

// reclaim seats st on the lease its transfer's return gave back.
func (s *Server) reclaim(st *seat, a store.Arrival) {
	st.setLease(a.Lease)
	s.applyInWorld(func(w *sim.World) { w.SetLeaseEpoch(st.player, a.Lease.Epoch) })
}

// depart takes a player whose transfer is committed and signed out of the
// world, and remembers its transfer for a client that comes back (resume)
// before it got the message: it dropped while the transfer was decided.
func (s *Server) depart(st *seat, msg protocol.Transfer) {
	now := s.deps.Clock()
	s.departures.add(st, s.seats.generation(st), msg, now, now.Add(2*s.cfg.TokenTTL))
	s.leave(st)
}

// leave takes the transferred player out of the world and forgets its seat:
// its state belongs to the destination now.
func (s *Server) leave(st *seat) {
	s.applyInWorld(func(w *sim.World) { w.LeaveThroughPortal(st.player) })
	s.seats.remove(st)
	if s.db != nil {
		s.db.checkpoints.forget(st.character)
	}
}

// transferDeadline is when a transfer begun now is over for good: the
// return ticket's expiry, plus the leeway.
func (s *Server) transferDeadline() time.Time {
	return s.deps.Clock().Add(2*s.cfg.TokenTTL + transferGrace)
}

// newTransferID is a fresh random 128-bit id in hex.
func newTransferID() string {
	b := make([]byte, 16)
	_, _ = rand.Read(b) // crypto/rand.Read never fails on supported platforms
	return hex.EncodeToString(b)
}
