package roomserver

import (
	"context"
	"errors"
	"strings"
	"time"

	"github.com/gorilla/websocket"

	"github.com/roomkeeper/roomkeeper/internal/mapgen"
	"github.com/roomkeeper/roomkeeper/internal/protocol"
	"github.com/roomkeeper/roomkeeper/internal/sim"
)

// A player walks into a portal (portal.enter): the world freezes it at
// the portal; the critical actions it has in flight end; the directory
// says where the portal leads (creating an instanced map if need be);
// then the transfer's transitions in transfer.go run: request, issue
// tokens, and the player leaves the world and its client gets the
// transfer message. Any failure before the player leaves gives it back
// control where it stands.

// Destination is where a portal leads: the map, its MapInstance and the
// endpoint players connect to.
type Destination struct {
	Map, Instance, Endpoint string
}

// DestinationRequest asks where a portal to Map leads for one player.
type DestinationRequest struct {
	Map, Party, User, Character string
	// Address is the player's network address (clientaddr.Key): the join
	// API budgets what one address starts.
	Address string
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
		srv.portalTransfer(st, env.Seq, pe.Portal, sess.address.String(), start)
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
func (s *Server) portalTransfer(st *seat, seq, portal uint32, address string, start time.Time) {
	msg, err := s.transferOut(st, portal, address)
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
func (s *Server) transferOut(st *seat, portal uint32, address string) (protocol.Transfer, error) {
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
	dest, err := s.destination(ctx, st, pt.To, address)
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
func (s *Server) destination(ctx context.Context, st *seat, mapName, address string) (Destination, error) {
	if s.deps.Directory == nil {
		return Destination{}, protocol.Errorf(protocol.CodeInvalidAction, "portals lead nowhere: this map runs without a directory")
	}
	dest, err := s.deps.Directory.Resolve(ctx, DestinationRequest{Map: mapName, Party: st.party, User: st.user, Character: st.character, Address: address})
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

// stay gives a player whose transfer failed control back.
func (s *Server) stay(st *seat) {
	s.applyInWorld(func(w *sim.World) { w.StayAfterPortal(st.player) })
}

// mapOfInstance names the map of another MapInstance of this room, as far
// as this map's portals know it: <room>-<map>, <room>-<map>-<party> or
// <room>-<map>-s<n> (a shard). The longest map name that fits wins, so
// map town-east's instances are not town's.
func (s *Server) mapOfInstance(instance string) string {
	return mapOfInstance(s.cfg.Room, s.static.Portals, instance)
}

func mapOfInstance(room string, portals []mapgen.PortalAnchor, instance string) string {
	rest, ok := strings.CutPrefix(instance, room+"-")
	if !ok {
		return ""
	}
	found := ""
	for _, p := range portals {
		if (rest == p.To || strings.HasPrefix(rest, p.To+"-")) && len(p.To) > len(found) {
			found = p.To
		}
	}
	return found
}
