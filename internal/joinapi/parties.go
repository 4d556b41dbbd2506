package joinapi

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"net/http"
	"time"

	"github.com/go-logr/logr"

	gamev1 "github.com/roomkeeper/roomkeeper/api/v1"
	"github.com/roomkeeper/roomkeeper/internal/token"
)

// Parties (docs/joinapi.md, "Parties"). A party is a signed token, not an
// object: the join API makes a party id and signs a party token for its
// leader with the room's key; the leader's token asks for members' tokens;
// a join with a party token puts the party's id in the player's ticket,
// which the room server carries into its transfer and destination tokens.
// Nobody can join a party by knowing its id, and the instance a party
// plays seats at most the room's parties.maxSize players.

const (
	// partyIDBytes is the random part of a party id: 96 bits.
	partyIDBytes = 12
	// partyIDPrefix starts every party id.
	partyIDPrefix = "p-"
	// maxPartyLifetime bounds a party token: a day, or the room's key
	// rotation interval when shorter, so that the key that signed it is
	// still the room's current or previous one until it expires.
	maxPartyLifetime = 24 * time.Hour
)

// createParty answers POST .../gamerooms/{room}/parties, and POST
// /v1/parties naming the room in its body, with 201 and the leader's
// party token: a new party, led by the authKey's user (or a guest).
func (h *Handler) createParty(r *http.Request) (int, any, error) {
	var req CreatePartyRequest
	if err := decodeBody(r, &req); err != nil {
		return 0, nil, err
	}
	key, err := normalAuthKey(req.AuthKey)
	if err != nil {
		return 0, nil, err
	}
	leader := guestID()
	if key != "" {
		leader = UserID(key)
	}
	ns, name, err := partyRoom(r, req)
	if err != nil {
		return 0, nil, err
	}
	room, keys, err := h.roomAndKeys(r.Context(), ns, name)
	if err != nil {
		return 0, nil, err
	}
	p, err := h.signParty(room, keys, token.Claims{Subject: leader, Party: newPartyID(), Role: token.RoleLeader}, partyLifetime(room))
	if err != nil {
		return 0, nil, err
	}
	logr.FromContextOrDiscard(r.Context()).V(1).Info("Created a party", "party", p.Party, "leader", leader)
	return http.StatusCreated, p, nil
}

// invite answers POST .../parties/{party}/invites with 201 and a member's
// party token, for the party's leader (its token as bearer). The member's
// token expires with the leader's: the party ends for everyone at once.
func (h *Handler) invite(r *http.Request) (int, any, error) {
	raw, ok := bearer(r)
	if !ok {
		return 0, nil, fail(CodeUnauthorized, "send the party leader's token as Authorization: Bearer <token>")
	}
	room, keys, err := h.roomAndKeys(r.Context(), r.PathValue("ns"), r.PathValue("room"))
	if err != nil {
		return 0, nil, err
	}
	leader, err := h.verifyParty(room, keys, raw, r.PathValue("party"))
	if err != nil {
		return 0, nil, err
	}
	if leader.Role != token.RoleLeader {
		return 0, nil, fail(CodeNotOwner, "only the party's leader invites members")
	}
	ttl := leader.ExpiresAt.Sub(h.clock()).Truncate(time.Second)
	if ttl < time.Second {
		return 0, nil, fail(CodeUnauthorized, "the party's token expires now: create a new party")
	}
	p, err := h.signParty(room, keys, token.Claims{Subject: leader.Subject, Party: leader.Party, Role: token.RoleMember}, ttl)
	if err != nil {
		return 0, nil, err
	}
	return http.StatusCreated, p, nil
}

// partyRoom is the namespace and name of the room a party's creation is
// for: the path's, or on POST /v1/parties the body's.
func partyRoom(r *http.Request, req CreatePartyRequest) (ns, room string, err error) {
	ns, room = r.PathValue("ns"), r.PathValue("room")
	switch {
	case room == "" && (req.Namespace == "" || req.Room == ""):
		return "", "", fail(CodeBadRequest, "namespace and room are required: the party's room")
	case room == "":
		return req.Namespace, req.Room, nil
	case (req.Namespace != "" && req.Namespace != ns) || (req.Room != "" && req.Room != room):
		return "", "", fail(CodeBadRequest, "namespace and room, when given, must be the path's")
	}
	return ns, room, nil
}

// roomAndKeys is the room ns/name and its token keys.
func (h *Handler) roomAndKeys(ctx context.Context, ns, name string) (*gamev1.GameRoom, token.KeySet, error) {
	room, err := h.room(ctx, ns, name)
	if err != nil {
		return nil, token.KeySet{}, err
	}
	keys, err := h.roomKeys(ctx, room)
	return room, keys, err
}

// signParty signs a party token of the room for c's party and role.
func (h *Handler) signParty(room *gamev1.GameRoom, keys token.KeySet, c token.Claims, ttl time.Duration) (Party, error) {
	c.Type, c.Room = token.TypeParty, room.Name
	raw, signed, err := token.NewSigner(token.StaticKeys(keys), h.clock).Sign(c, ttl)
	if err != nil {
		return Party{}, err
	}
	return Party{Party: signed.Party, Token: raw, Role: signed.Role, Leader: signed.Subject,
		MaxSize: int32(room.Spec.Parties.MaxSizeOrDefault()), ExpiresAt: signed.ExpiresAt}, nil
}

// verifyParty checks a party token of the room; party, when not empty,
// is the party it must be for.
func (h *Handler) verifyParty(room *gamev1.GameRoom, keys token.KeySet, raw, party string) (token.Claims, error) {
	claims, err := token.NewVerifier(token.StaticKeys(keys), h.clock).Verify(raw,
		token.Expect{Room: room.Name, AnyMap: true, Types: []string{token.TypeParty}, MaxLifetime: maxPartyLifetime})
	switch {
	case errors.Is(err, token.ErrExpired):
		return token.Claims{}, fail(CodeUnauthorized, "the party token expired: create a new party").because(err)
	case err != nil:
		return token.Claims{}, fail(CodeUnauthorized, "the party token is not valid for this room").because(err)
	case party != "" && claims.Party != party:
		return token.Claims{}, fail(CodeUnauthorized, "the party token is for another party")
	}
	return claims, nil
}

// joinParty is the party a join puts in its ticket: the party token's, or
// none. A party named without its token is refused: knowing a party's id
// does not make one a member.
func (h *Handler) joinParty(room *gamev1.GameRoom, keys token.KeySet, req JoinRequest) (string, error) {
	switch {
	case req.PartyToken == "" && req.Party != "":
		return "", fail(CodeUnauthorized, "joining party %s needs its partyToken: ask the party's leader for an invitation", req.Party)
	case req.PartyToken == "":
		return "", nil
	}
	claims, err := h.verifyParty(room, keys, req.PartyToken, req.Party)
	return claims.Party, err
}

// partyLifetime is how long a room's new party lasts: maxPartyLifetime,
// or the room's key rotation interval when shorter.
func partyLifetime(room *gamev1.GameRoom) time.Duration {
	ttl := maxPartyLifetime
	if d := room.Spec.Tokens.RotationInterval; d != nil && d.Duration >= time.Second {
		ttl = min(ttl, d.Duration)
	}
	return ttl
}

// newPartyID is partyIDPrefix and 96 random bits in hex.
func newPartyID() string {
	b := make([]byte, partyIDBytes)
	_, _ = rand.Read(b) // crypto/rand.Read never fails (Go 1.24+)
	return partyIDPrefix + hex.EncodeToString(b)
}
