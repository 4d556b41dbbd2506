package roomserver

import (
	"context"
	"errors"
	"strings"
	"time"

	"github.com/roomkeeper/roomkeeper/internal/fanout"
	"github.com/roomkeeper/roomkeeper/internal/protocol"
	"github.com/roomkeeper/roomkeeper/internal/sim"
	"github.com/roomkeeper/roomkeeper/internal/store"
	"github.com/roomkeeper/roomkeeper/internal/token"
)

// handleHello admits the client with a ticket or a resume token. A refused
// hello gets an error with its code and the connection is closed.
func (sess *session) handleHello(env protocol.Envelope) {
	if env.Kind != protocol.KindHello {
		sess.refuseHello(protocol.Errorf(protocol.CodeBadRequest, "the first message must be hello"))
		return
	}
	var h protocol.Hello
	if err := protocol.DecodePayload(env, &h); err != nil {
		sess.refuseHello(err)
		return
	}
	codec := h.Codec
	if codec == "" {
		codec = protocol.CodecJSON
	}
	if codec != protocol.CodecJSON && codec != protocol.CodecBinary {
		sess.refuseHello(protocol.Errorf(protocol.CodeBadRequest, "unknown codec %q: use json or binary", codec))
		return
	}
	sess.binary.Store(codec == protocol.CodecBinary)
	start, mode := time.Now(), "join"
	var err error
	if h.Resume != "" {
		sess.startEvents(h.LastEvent)
		mode, err = sess.resume(h.Resume)
	} else {
		sess.startEvents(0)
		err = sess.join(h.Ticket)
	}
	if err != nil {
		sess.refuseHello(err)
		return
	}
	sess.srv.metrics.hello.WithLabelValues(mode).Observe(time.Since(start).Seconds())
	sess.seated()
}

func (sess *session) refuseHello(err error) {
	pe := asProtocolError(err)
	sess.srv.metrics.refused.WithLabelValues(string(pe.Code)).Inc()
	sess.closeWith(string(pe.Code), pe.Message)
}

// join checks a ticket (signature, expiry, room and map, one use) and
// seats a new player.
func (sess *session) join(raw string) error {
	srv := sess.srv
	if raw == "" {
		return protocol.Errorf(protocol.CodeUnauthorized, "hello needs a ticket or a resume token")
	}
	claims, err := srv.verifier.Verify(raw, token.Expect{Room: srv.cfg.Room, Map: srv.cfg.Instance,
		Types: []string{token.TypeJoin, token.TypeTransfer}, MaxLifetime: 2 * srv.cfg.TokenTTL})
	if err != nil {
		return ticketError(err)
	}
	if strings.HasPrefix(claims.Subject, guestPrefix) != strings.HasPrefix(claims.Character, guestPrefix) {
		// A guest plays a guest character, and only a guest does: a guest
		// ticket naming a player's character would take its seat.
		return protocol.Errorf(protocol.CodeUnauthorized, "the ticket is not valid: guests play guest characters")
	}
	start := time.Now()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := srv.consumeTicket(ctx, claims); err != nil {
		return ticketError(err)
	}
	if err := srv.checkBan(ctx, claims.Subject); err != nil {
		return err
	}
	st := &seat{user: claims.Subject, character: claims.Character, id: randomToken(), party: claims.Party}
	if claims.Type == token.TypeTransfer {
		st.transfer, st.fromMap = claims.Transfer, srv.mapOfInstance(claims.From)
		st.handedOver = claims.From == srv.cfg.Instance // from this map's pod that this one replaces
	}
	if st.character == "" { // a guest without a character: one seat per ticket
		st.character = "guest:" + claims.ID
	}
	return sess.seatNew(ctx, st, start)
}

// consumeTicket spends the ticket's id, once for good. A guest's ticket is
// spent in this pod's memory first, and the guest is admitted on that alone
// while the database is down: a guest is never written anyway, and a
// ticket names one map, which one pod serves, so the memory refuses a
// second use on the only pod that would take it (also once the database is
// back; a pod restarted meanwhile has forgotten, which a ticket's ten
// seconds make a narrow window). Players need the database to play and
// are refused with persistence_unavailable.
func (s *Server) consumeTicket(ctx context.Context, claims token.Claims) error {
	if s.guestTickets == nil || !strings.HasPrefix(claims.Subject, guestPrefix) {
		return s.deps.Replay.Consume(ctx, claims.ID, claims.ExpiresAt)
	}
	err := s.consumeGuest(ctx, claims.ID, claims.ExpiresAt)
	if err == nil && claims.Type == token.TypeTransfer {
		// A guest's transfer has no row to settle who takes it: its
		// forward and return tickets share the transfer's id, spent here
		// until the later of them expires, so only one of them admits.
		err = s.consumeGuest(ctx, "transfer/"+claims.Transfer, claims.IssuedAt.Add(2*s.cfg.TokenTTL+transferGrace))
	}
	return err
}

// consumeGuest spends a guest's one-use id in this pod's memory and, when
// it answers, in the database: guests play on while the database is away,
// a replay across pods then goes unseen (counted in
// roomkeeper_roomserver_guest_joins_without_database_total).
func (s *Server) consumeGuest(ctx context.Context, id string, until time.Time) error {
	if err := s.guestTickets.Consume(ctx, id, until); err != nil {
		return err
	}
	err := s.deps.Replay.Consume(ctx, id, until)
	if errors.Is(err, store.ErrUnavailable) {
		s.metrics.guestsWithoutDatabase.Inc()
		return nil
	}
	return err
}

// seatNew admits st and places its player. When the character is seated
// here already, the old seat's critical actions end first (committed and
// in the world, or failed), so the new seat loads what they left in the
// database and nothing is applied to a player that is gone.
func (sess *session) seatNew(ctx context.Context, st *seat, start time.Time) error {
	srv := sess.srv
	if srv.world != nil {
		if err := srv.world.waitReady(ctx, st.handedOver); err != nil {
			return protocol.Errorf(protocol.CodePersistenceUnavailable, "%v", err)
		}
	}
	replaced := false
	if old := srv.seats.of(st.character); old != nil {
		old.closeActions()
		defer func() {
			if !replaced {
				old.reopenActions()
			}
		}()
		srv.saveSeated(ctx, old)
	}
	spec, err := srv.admit(ctx, st)
	if err != nil {
		return err
	}
	if err := srv.loop.Do(ctx, func(w *sim.World) { st.player = w.JoinPlayer(spec) }); err != nil {
		srv.releaseLease(st)
		return loopError(err)
	}
	st.markPlayed(srv.deps.Clock()) // joining is playing
	previous, bumped, full := srv.seats.add(st, sess, srv.cfg.MaxPlayers)
	if full {
		srv.removePlayer(st.player)
		srv.releaseLease(st)
		return protocol.Errorf(protocol.CodeRoomFull, "the map has %d players, its maximum", srv.cfg.MaxPlayers)
	}
	if bumped != nil {
		srv.releaseSeat(bumped)
	}
	if previous != nil { // the character was seated here already: its new connection wins
		replaced = true
		srv.removePlayer(previous.player)
		if previous.session != nil {
			previous.session.closeWith(string(protocol.CodeUnauthorized), "signed in elsewhere")
		}
	}
	sess.seat = st
	sess.welcome(st, st.restoring)
	if st.transfer != "" {
		srv.completeTransfer(st, start)
	}
	if st.handedOver && srv.world != nil {
		srv.world.resyncGround()
	}
	return nil
}

func (sess *session) welcome(st *seat, resumed bool) {
	srv := sess.srv
	resumeToken, _ := srv.resumeToken(st)
	var owned *sim.Owned
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	// A map too busy to answer leaves the welcome without the inventory;
	// the first snapshot carries it.
	srv.noteFailure(opWelcomeInventory, srv.loop.Do(ctx, func(w *sim.World) { owned = w.Owned(st.player) }))
	bag := srv.content.Bag
	sess.sendJSON(protocol.KindWelcome, 0, protocol.Welcome{Inventory: fanout.ItemViews(owned),
		Bag:      protocol.BagView{Capacity: bag.Capacity, MaxWeight: bag.MaxWeight, EncumberedAt: bag.EncumberedAt, EncumberedSpeed: bag.EncumberedSpeed},
		PlayerID: st.player, Room: srv.cfg.Room, Map: srv.cfg.Map, Instance: srv.cfg.Instance,
		Tick: srv.loop.Stats().Tick, TickRate: srv.cfg.TickRate, SnapshotRate: srv.cfg.SnapshotRate, PlayerSpeed: srv.cfg.Sim.PlayerSpeed,
		ResumeToken: resumeToken, Resumed: resumed, LastSeq: srv.seats.lastSeq(st),
		Codec: sess.codecName(), MapConfig: srv.cfg.MapConfig, MapHash: srv.static.Hash, ContentHash: srv.contentHash,
		Portals: srv.portalViews, Transfer: st.transfer, Party: st.party,
	})
	sess.player.Store(st.player)
	_ = sess.conn.SetReadDeadline(time.Now().Add(srv.cfg.IdleTimeout))
}

func (sess *session) handlePing(env protocol.Envelope) {
	var p protocol.Ping
	if err := protocol.DecodePayload(env, &p); err != nil {
		sess.refuse(0, err) // a ping is not a command: no ack
		return
	}
	sess.sendJSON(protocol.KindPong, env.Seq, protocol.Pong{ClientTime: p.ClientTime, ServerTime: sess.srv.deps.Clock().UnixMilli()})
}

// codecName is the codec the client chose, as hello names it.
func (sess *session) codecName() string {
	if sess.binary.Load() {
		return protocol.CodecBinary
	}
	return protocol.CodecJSON
}

// removePlayer takes a player out of the world from outside the tick.
func (s *Server) removePlayer(id uint32) {
	s.applyInWorld(func(w *sim.World) { w.RemovePlayer(id) })
}
