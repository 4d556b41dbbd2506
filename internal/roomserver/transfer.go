package roomserver

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"strings"
	"sync"
	"time"

	"github.com/gorilla/websocket"

	"github.com/roomkeeper/roomkeeper/internal/protocol"
	"github.com/roomkeeper/roomkeeper/internal/sim"
	"github.com/roomkeeper/roomkeeper/internal/store"
	"github.com/roomkeeper/roomkeeper/internal/token"
)

// A transfer out of this map, step by step (docs/architecture.md has the
// whole flow): the world freezes the player at the portal; the critical
// actions it has in flight end; the directory says where the portal leads
// (creating an instanced map if need be); one transaction checkpoints the
// character and hands its lease to the destination (requested); the
// tokens are signed and recorded (token_issued); the player leaves the
// world, and the client gets the transfer message. Any failure before the
// player leaves gives it back control where it stands.

// Destination is where a portal leads: the map, its MapInstance and the
// endpoint players connect to.
type Destination struct {
	Map, Instance, Endpoint string
}

// DestinationRequest asks where a portal to Map leads for one player.
type DestinationRequest struct {
	Map, Party, User, Character string
}

// Directory finds where a portal leads. A *protocol.ProtocolError it
// returns is told to the player as it is (map_quarantined, room_not_ready
// as persistence_unavailable, ...); any other error as internal.
type Directory interface {
	Resolve(ctx context.Context, req DestinationRequest) (Destination, error)
}

// StaticDirectory is a fixed directory by map name, for a map that runs
// without the operator (development, tests).
type StaticDirectory map[string]Destination

// Resolve looks the map up.
func (d StaticDirectory) Resolve(_ context.Context, req DestinationRequest) (Destination, error) {
	if dest, ok := d[req.Map]; ok {
		return dest, nil
	}
	return Destination{}, protocol.Errorf(protocol.CodeMapQuarantined, "map %s is not running", req.Map)
}

// transferGrace is how long past its token's expiry a transfer stays
// pending: the verifier's leeway and a little margin.
const transferGrace = token.DefaultLeeway + time.Second

func (sess *session) handlePortal(env protocol.Envelope) {
	var pe protocol.PortalEnter
	if err := protocol.DecodePayload(env, &pe); err != nil {
		sess.refuse(env.Seq, err)
		return
	}
	st, srv := sess.seat, sess.srv
	if !st.transferring.CompareAndSwap(false, true) {
		sess.refuse(env.Seq, protocol.Errorf(protocol.CodeInvalidAction, "already on the way through a portal"))
		return
	}
	srv.metrics.transfersInFlight.Inc()
	start := time.Now()
	if !srv.work.Go(func() {
		defer srv.metrics.transfersInFlight.Dec()
		srv.portalTransfer(st, env.Seq, pe.Portal, start)
	}) {
		srv.metrics.transfersInFlight.Dec()
		st.transferring.Store(false)
		sess.refuse(env.Seq, errShuttingDown)
	}
}

// portalTransfer runs the transfer of command seq through portal and
// answers it to the client attached to the seat by then: a client that
// resumed while its transfer was decided gets the answer on its new
// connection.
func (s *Server) portalTransfer(st *seat, seq, portal uint32, start time.Time) {
	msg, err := s.transferOut(st, portal)
	if err != nil {
		st.transferring.Store(false)
		ack := failed(err)
		ack.Seq = seq
		s.metrics.transfers.WithLabelValues(sideSource, string(ack.Code)).Inc()
		s.metrics.refused.WithLabelValues(string(ack.Code)).Inc()
		s.replyTo(st, protocol.KindAck, ack)
		return
	}
	s.metrics.transfers.WithLabelValues(sideSource, "ok").Inc()
	s.metrics.transferSeconds.WithLabelValues(sideSource).Observe(time.Since(start).Seconds())
	if sess := s.seats.sessionOf(st); sess != nil {
		sess.sendJSON(protocol.KindAck, 0, protocol.Ack{Seq: seq, OK: true})
		sess.sendTransfer(msg)
	}
}

// sendTransfer sends the client its transfer message and closes the
// connection after it: the player has left this map.
func (sess *session) sendTransfer(msg protocol.Transfer) {
	sess.sendJSON(protocol.KindTransfer, 0, msg)
	sess.setReason(protocol.EventTransferred)
	sess.closing.Store(true)
	sess.enqueue(outgoing{closeCode: websocket.CloseNormalClosure, closeReason: protocol.EventTransferred})
}

// transferOut runs the source side of a transfer through portal and
// returns the message that sends the client on its way.
func (s *Server) transferOut(st *seat, portal uint32) (protocol.Transfer, error) {
	ctx, cancel := s.work.context(s.cfg.TransferTimeout)
	defer cancel()
	var pt sim.Portal
	var enterErr error
	if err := s.loop.Do(ctx, func(w *sim.World) { pt, enterErr = w.EnterPortal(st.player, portal) }); err != nil {
		return protocol.Transfer{}, loopError(err)
	}
	if enterErr != nil {
		return protocol.Transfer{}, portalError(enterErr, portal)
	}
	st.critical.Wait() // a pickup or drop in flight completes or fails before the character moves
	dest, err := s.destination(ctx, st, pt.To)
	if err == nil {
		var msg protocol.Transfer
		if msg, err = s.transferTo(ctx, st, dest); err == nil {
			return msg, nil
		}
	}
	s.stay(st)
	return protocol.Transfer{}, err
}

// destination asks the directory where a portal to mapName leads.
func (s *Server) destination(ctx context.Context, st *seat, mapName string) (Destination, error) {
	if s.deps.Directory == nil {
		return Destination{}, protocol.Errorf(protocol.CodeInvalidAction, "portals lead nowhere: this map runs without a directory")
	}
	dest, err := s.deps.Directory.Resolve(ctx, DestinationRequest{Map: mapName, Party: st.party, User: st.user, Character: st.character})
	var pe *protocol.ProtocolError
	switch {
	case errors.As(err, &pe):
		return Destination{}, pe
	case err != nil:
		s.deps.Log.Warn("Finding a portal's destination failed", "map", mapName, "err", err)
		return Destination{}, protocol.Errorf(protocol.CodeInternal, "finding map %s failed", mapName)
	case dest.Instance == s.cfg.Instance || dest.Endpoint == "":
		return Destination{}, protocol.Errorf(protocol.CodeInvalidAction, "the portal to %s leads nowhere", mapName)
	}
	return dest, nil
}

// transferTo commits the transfer of st to dest, signs its tokens and takes
// the player out of the world (depart). HandOver, a pod handing its players
// over, uses it one by one when the batch fails.
func (s *Server) transferTo(ctx context.Context, st *seat, dest Destination) (protocol.Transfer, error) {
	id := newTransferID()
	if s.persisted(st) {
		if err := s.beginTransfer(ctx, st, dest, id, s.transferDeadline()); err != nil {
			return protocol.Transfer{}, err
		}
	}
	msg, err := s.signTransfer(st, dest, id)
	if err != nil {
		return protocol.Transfer{}, s.undoTransfer(st, id, err)
	}
	if s.persisted(st) {
		if err := s.deps.Store.AdvanceTransfer(ctx, id, store.TransferRequested, store.TransferTokenIssued); err != nil {
			return protocol.Transfer{}, s.undoTransfer(st, id, s.storeError(err, "issuing the transfer token"))
		}
	}
	s.depart(st, msg)
	return msg, nil
}

// depart takes a player whose transfer is committed and signed out of the
// world, and remembers its transfer for a client that comes back (resume)
// before it got the message: it dropped while the transfer was decided.
func (s *Server) depart(st *seat, msg protocol.Transfer) {
	now := s.deps.Clock()
	s.departures.add(st, s.seats.generation(st), msg, now, now.Add(2*s.cfg.TokenTTL))
	s.leave(st)
}

// transferDeadline is when a transfer begun now is over for good: the
// return ticket's expiry, plus the leeway.
func (s *Server) transferDeadline() time.Time {
	return s.deps.Clock().Add(2*s.cfg.TokenTTL + transferGrace)
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

// beginTransfer is the commit point: the checkpoint and the lease's hand
// over, in one transaction.
func (s *Server) beginTransfer(ctx context.Context, st *seat, dest Destination, id string, deadline time.Time) error {
	var record sim.PlayerRecord
	var ok bool
	if err := s.loop.Do(ctx, func(w *sim.World) { record, ok = w.Record(st.player) }); err != nil || !ok {
		return protocol.Errorf(protocol.CodeInternal, "the player is not in the world")
	}
	t := store.Transfer{ID: id, CharacterID: st.character, FromInstance: s.cfg.Instance, ToInstance: dest.Instance,
		ToMap: dest.Map, FromX: record.X, FromY: record.Y, ExpiresAt: deadline}
	err := s.deps.Store.BeginTransfer(ctx, t, encodeState(s.cfg.Map, record))
	if errors.Is(err, store.ErrLeaseLost) {
		s.work.Go(func() { s.evict(st, "the character became active in another map") })
	}
	if err != nil {
		return s.storeError(err, "saving the transfer")
	}
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
	a, err := s.deps.Store.ArriveByTransfer(ctx, id, st.character, s.cfg.Instance, s.cfg.Pod, s.cfg.LeaseTTL, s.deps.Clock())
	if err != nil {
		s.noteFailure(opUndoTransfer, err)
		if !s.work.Go(func() { s.sendBackLater(st, "the transfer could not complete: join again shortly") }) {
			s.deps.Log.Warn("A transfer could be neither completed nor undone at shutdown; it expires by itself", "transfer", id, "character", st.character)
		}
		return cause
	}
	st.setLease(a.Lease)
	s.applyInWorld(func(w *sim.World) { w.SetLeaseEpoch(st.player, a.Lease.Epoch) })
	return cause
}

// stay gives a player whose transfer failed control back.
func (s *Server) stay(st *seat) {
	s.applyInWorld(func(w *sim.World) { w.StayAfterPortal(st.player) })
}

// leave takes the transferred player out of the world and forgets its seat:
// its state belongs to the destination now.
func (s *Server) leave(st *seat) {
	s.applyInWorld(func(w *sim.World) { w.LeaveThroughPortal(st.player) })
	s.seats.remove(st)
	if s.persist != nil {
		s.persist.forget(st.character)
	}
}

// arrived finishes the destination side once the player is welcomed: the
// source's copy is gone (the lease fences it out) and the transfer is
// complete. A failure leaves the row at destination_accepted, which is
// harmless: the lease, not the row, decides who plays the character.
func (s *Server) arrived(st *seat, start time.Time) {
	result := "arrived"
	if st.returned {
		result = "returned"
	}
	s.metrics.transfers.WithLabelValues(sideDestination, result).Inc()
	s.metrics.transferSeconds.WithLabelValues(sideDestination).Observe(time.Since(start).Seconds())
	if !s.persisted(st) || st.returned {
		return
	}
	s.work.Go(func() {
		ctx, cancel := s.work.context(s.cfg.CriticalTimeout)
		defer cancel()
		for _, step := range [][2]store.TransferState{
			{store.TransferDestinationAccepted, store.TransferSourceReleased},
			{store.TransferSourceReleased, store.TransferCompleted},
		} {
			if err := s.deps.Store.AdvanceTransfer(ctx, st.transfer, step[0], step[1]); err != nil {
				s.noteFailure(opCompleteTransfer, err)
				return
			}
		}
	})
}

// mapOfInstance names the map of another MapInstance of this room, as far
// as this map's portals know it: <room>-<map> or <room>-<map>-<party>.
func (s *Server) mapOfInstance(instance string) string {
	rest, ok := strings.CutPrefix(instance, s.cfg.Room+"-")
	if !ok {
		return ""
	}
	for _, p := range s.static.Portals {
		if rest == p.To || strings.HasPrefix(rest, p.To+"-") {
			return p.To
		}
	}
	return ""
}

// newTransferID is a fresh random 128-bit id in hex.
func newTransferID() string {
	b := make([]byte, 16)
	_, _ = rand.Read(b) // crypto/rand.Read never fails on supported platforms
	return hex.EncodeToString(b)
}

// departures remember, by seat id, the transfers of the players who left
// this map until their return tickets expire: a client that dropped while
// its transfer was decided resumes into its transfer message, instead of
// into a seat that is gone (docs/protocol.md, Joining and resuming).
type departures struct {
	mu     sync.Mutex
	bySeat map[string]departure
}

// departure is one player's transfer out, as its client must get it.
type departure struct {
	msg             protocol.Transfer
	user, character string
	gen             uint32
	until           time.Time
}

// add records the transfer msg of st, at its attachment gen, until
// until, and forgets those expired at now.
func (d *departures) add(st *seat, gen uint32, msg protocol.Transfer, now, until time.Time) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.bySeat == nil {
		d.bySeat = map[string]departure{}
	}
	for id, dep := range d.bySeat {
		if !dep.until.After(now) {
			delete(d.bySeat, id)
		}
	}
	d.bySeat[st.id] = departure{msg: msg, user: st.user, character: st.character, gen: gen, until: until}
}

// take returns, once, the transfer of the seat a resume token names, if
// that seat left through a portal lately and the token is of its last
// attachment.
func (d *departures) take(claims token.Claims, now time.Time) (protocol.Transfer, bool) {
	d.mu.Lock()
	defer d.mu.Unlock()
	dep, ok := d.bySeat[claims.Session]
	if !ok || dep.user != claims.Subject || dep.character != claims.Character || dep.gen != claims.Generation || !dep.until.After(now) {
		return protocol.Transfer{}, false
	}
	delete(d.bySeat, claims.Session)
	return dep.msg, true
}
