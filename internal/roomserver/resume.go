package roomserver

import (
	"context"
	"errors"
	"time"

	"github.com/roomkeeper/roomkeeper/internal/protocol"
	"github.com/roomkeeper/roomkeeper/internal/token"
)

// A resume token (token.TypeResume) is signed with the room's key, so any
// pod of the map verifies it: the pod that seated the player, or the one
// that replaced it after a crash or a drain. It names the seat (sid), the
// seat's attachment (gen) and the character's lease epoch (ep), and lives
// as long as the seat's resume grace; attached clients get a fresh one
// (message session) every third of it.
//
// On the pod that holds the seat, the token must be of the seat's current
// attachment; the resume starts the next one, which spends every token of
// the last. On a pod that does not (the replacement), the token's id is
// spent in the database and the lease taken only while it is still the
// session's (store.ResumeLease): the player comes back from its last
// checkpoint, with every acknowledged action, as a resumed seat with a new
// id (its critical event ids are new: a client that numbers its commands
// from 1 again cannot hit an event of the old pod). A critical command
// sent again is checked against the state loaded from the database (the
// item is in the bag already, or no longer there), so it takes effect at
// most once.

// resume re-attaches a client to its seat, here or from the database, and
// returns the hello's mode for the metrics.
func (sess *session) resume(raw string) (string, error) {
	srv := sess.srv
	claims, err := srv.verifier.Verify(raw, token.Expect{Room: srv.cfg.Room, Map: srv.cfg.Instance,
		Types: []string{token.TypeResume}, MaxLifetime: resumeTTL(srv.cfg.ResumeGrace)})
	if err != nil {
		return "resume", resumeError(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := srv.checkBan(ctx, claims.Subject); err != nil {
		return "resume", err
	}
	st, old, outcome := srv.seats.resume(claims, sess)
	switch outcome {
	case superseded:
		return "resume", protocol.Errorf(protocol.CodeTokenReplayed, "the resume token was used, or the seat was taken again: join with a new ticket")
	case notHere:
		if msg, ok := srv.departures.take(claims, srv.deps.Clock()); ok {
			srv.spendResumeToken(claims)
			sess.sendTransfer(msg) // it left through a portal meanwhile: on its way
			return "resume_departed", nil
		}
		return "resume_restored", sess.restoreSeat(claims)
	}
	srv.spendResumeToken(claims)
	if old != nil { // the client came back before the server saw it go
		old.closeWith(string(protocol.CodeUnauthorized), "the seat was resumed on another connection")
	}
	sess.seat = st
	sess.welcome(st, true)
	return "resume", nil
}

// restoreSeat seats a resumed player this pod does not hold, from the
// database: the map's pod that held it is gone.
func (sess *session) restoreSeat(claims token.Claims) error {
	srv := sess.srv
	start := time.Now()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := srv.consumeTicket(ctx, claims); err != nil {
		return resumeError(err)
	}
	st := &seat{user: claims.Subject, character: claims.Character, id: randomToken(),
		party: claims.Party, restoring: true, restoredEpoch: claims.Epoch}
	return sess.seatNew(ctx, st, start)
}

// spendResumeToken records the id of a token resumed from memory, in the
// background: the next attachment already refuses it on this pod, and the
// database keeps a replacement pod from taking it should this one die.
func (s *Server) spendResumeToken(claims token.Claims) {
	if s.db == nil {
		return
	}
	s.work.Go(func() {
		ctx, cancel := s.work.context(s.cfg.CriticalTimeout)
		defer cancel()
		if err := s.deps.Replay.Consume(ctx, claims.ID, claims.ExpiresAt); !errors.Is(err, token.ErrReplayed) {
			s.noteFailure(opSpendResumeToken, err)
		}
	})
}

// resumeToken signs a resume token for the seat's current attachment.
func (s *Server) resumeToken(st *seat) (string, time.Time) {
	gen, epoch := s.seats.attachment(st, s.deps.Clock())
	raw, signed, err := token.NewSigner(s.deps.Keys, s.deps.Clock).Sign(token.Claims{Type: token.TypeResume,
		Subject: st.user, Character: st.character, Room: s.cfg.Room, Map: s.cfg.Instance, Party: st.party,
		Session: st.id, Generation: gen, Epoch: epoch}, resumeTTL(s.seats.graceOf(st)))
	if err != nil { // no usable key: the client can only join again
		s.deps.Log.Error("Signing a resume token failed", "err", err)
		return "", time.Time{}
	}
	return raw, signed.ExpiresAt
}

// resumeTTL is a resume token's lifetime for a seat kept grace: the grace
// in whole seconds (a JWT's times are), rounded up.
func resumeTTL(grace time.Duration) time.Duration {
	return max(time.Second, (grace + time.Second - 1).Truncate(time.Second))
}

// refreshResumeTokens sends every attached client whose resume token is a
// third of its grace old a new one, until ctx ends.
func (s *Server) refreshResumeTokens(ctx context.Context) {
	every := max(s.seats.guestGrace/6, 10*time.Millisecond)
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		for st, sess := range s.seats.staleTokens(s.deps.Clock()) {
			if raw, expires := s.resumeToken(st); raw != "" {
				sess.sendJSON(protocol.KindSession, 0, protocol.Session{ResumeToken: raw, ExpiresAt: expires.UnixMilli()})
			}
		}
	}
}
