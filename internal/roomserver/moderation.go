package roomserver

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"time"

	"github.com/roomkeeper/roomkeeper/internal/protocol"
	"github.com/roomkeeper/roomkeeper/internal/store"
	"github.com/roomkeeper/roomkeeper/internal/token"
)

// Moderation (docs/operations.md, "Moderation"): the manager's admin API
// decides, and tells each map what to do through the map's HTTP port with
// a one-use admin ticket it signs with the room's key for that map. A
// ban is the database's: every hello (a join or a resume) of a banned
// user is refused, on every map of the room.

// banChecker is the store's capability bans need.
type banChecker interface {
	BanOf(ctx context.Context, userID string, now time.Time) (store.Ban, bool, error)
}

// checkBan refuses a user banned from the room. Guests and maps without
// a database have no bans.
func (s *Server) checkBan(ctx context.Context, user string) error {
	if s.db == nil || strings.HasPrefix(user, guestPrefix) {
		return nil
	}
	bans, ok := s.db.Store.(banChecker)
	if !ok {
		return nil
	}
	ban, banned, err := bans.BanOf(ctx, user, s.deps.Clock())
	if err != nil {
		return s.storeError(err, "checking the user's bans")
	}
	if banned {
		return protocol.Errorf(protocol.CodeBanned, "%s", ban.Message())
	}
	return nil
}

// kick ends st's session with close code 4001 and code, saving the
// player's state and releasing its lease as the end of a resume grace
// does: what it did is kept, it just is no longer here.
func (s *Server) kick(st *seat, code protocol.Code, why string) {
	sess := s.seats.sessionOf(st)
	if !s.seats.remove(st) {
		return
	}
	if sess != nil {
		sess.sendErrorAndClose(protocol.CloseKicked, code, why)
	}
	s.releaseSeat(st)
}

// AdminPath is where the map takes the admin API's commands, on its HTTP
// port.
const AdminPath = "/admin/v1/commands"

// handleAdmin runs one command of the admin API: the bearer must be an
// admin ticket for this map, used once.
func (s *Server) handleAdmin(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost {
		http.Error(w, "POST only", http.StatusMethodNotAllowed)
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), 20*time.Second)
	defer cancel()
	answer, err := s.adminCommand(ctx, r)
	w.Header().Set("Content-Type", "application/json")
	if err != nil {
		pe := asProtocolError(err)
		status := http.StatusBadRequest
		switch pe.Code {
		case protocol.CodeUnauthorized, protocol.CodeTokenExpired, protocol.CodeTokenReplayed, protocol.CodeWrongMap:
			status = http.StatusUnauthorized
		case protocol.CodePersistenceUnavailable, protocol.CodeInternal:
			status = http.StatusServiceUnavailable
		}
		w.WriteHeader(status)
		_ = json.NewEncoder(w).Encode(pe)
		return
	}
	_ = json.NewEncoder(w).Encode(answer)
}

func (s *Server) adminCommand(ctx context.Context, r *http.Request) (protocol.AdminAnswer, error) {
	raw, _ := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	claims, err := s.verifier.Verify(raw, token.Expect{Room: s.cfg.Room, Map: s.cfg.Instance, Types: []string{token.TypeAdmin}})
	if err != nil {
		return protocol.AdminAnswer{}, ticketError(err)
	}
	if err := s.deps.Replay.Consume(ctx, claims.ID, claims.ExpiresAt); err != nil {
		return protocol.AdminAnswer{}, ticketError(err)
	}
	var cmd protocol.AdminCommand
	if err := json.NewDecoder(http.MaxBytesReader(nil, r.Body, 8<<10)).Decode(&cmd); err != nil {
		return protocol.AdminAnswer{}, protocol.Errorf(protocol.CodeBadRequest, "the command: %v", err)
	}
	s.deps.Log.Info("Admin command", "action", cmd.Action, "by", claims.Subject, "user", cmd.User, "character", cmd.Character)
	switch cmd.Action {
	case protocol.AdminKick, protocol.AdminBan:
		return s.kickMatching(cmd), nil
	case protocol.AdminSave:
		return s.saveNow(ctx)
	case protocol.AdminMessage:
		return s.broadcast(cmd.Text), nil
	}
	return protocol.AdminAnswer{}, protocol.Errorf(protocol.CodeBadRequest, "unknown action %q", cmd.Action)
}

// kickMatching kicks every seat of the command's user or character (a
// ban's with code banned).
func (s *Server) kickMatching(cmd protocol.AdminCommand) protocol.AdminAnswer {
	code, why := protocol.CodeKicked, "an operator ended the session"
	if cmd.Action == protocol.AdminBan {
		code, why = protocol.CodeBanned, "banned from this room"
	}
	if cmd.Reason != "" {
		why += ": " + cmd.Reason
	}
	var answer protocol.AdminAnswer
	for _, st := range s.seats.all() {
		if (cmd.User != "" && st.user == cmd.User) || (cmd.Character != "" && st.character == cmd.Character) {
			s.kick(st, code, why)
			answer.Affected++
		}
	}
	return answer
}

// saveNow writes every player's and the world's checkpoint now.
func (s *Server) saveNow(ctx context.Context) (protocol.AdminAnswer, error) {
	if s.db == nil {
		return protocol.AdminAnswer{}, protocol.Errorf(protocol.CodeInvalidAction, "the map has no database")
	}
	err := errors.Join(s.db.checkpoints.finalFlush(ctx), s.world.save(ctx, false))
	if err != nil {
		return protocol.AdminAnswer{}, s.storeError(err, "saving the map")
	}
	return protocol.AdminAnswer{Affected: len(s.seats.all())}, nil
}

// broadcast sends a system message to every connected client.
func (s *Server) broadcast(text string) protocol.AdminAnswer {
	ev := protocol.Event{Type: protocol.EventSystemMessage, Tick: s.loop.Stats().Tick, Detail: text}
	var answer protocol.AdminAnswer
	for _, st := range s.seats.all() {
		if sess := s.seats.sessionOf(st); sess != nil {
			sess.sendJSON(protocol.KindEvent, 0, ev)
			answer.Affected++
		}
	}
	return answer
}
