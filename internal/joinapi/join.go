package joinapi

import (
	"context"
	"net/http"
	"time"

	"github.com/go-logr/logr"

	gamev1 "github.com/roomkeeper/roomkeeper/api/v1"
	"github.com/roomkeeper/roomkeeper/internal/token"
)

// defaultTicketTTL is the ticket lifetime when the room's tokens.ttl is
// unset (the CRD defaults it to the same).
const defaultTicketTTL = 10 * time.Second

// maxCharacterIDBytes bounds a characterId in a request.
const maxCharacterIDBytes = 64

// maxInstanceBytes bounds the instance a join asks for: a MapInstance
// name is a DNS label.
const maxInstanceBytes = 63

// maxPartyBytes bounds a party id.
const maxPartyBytes = 64

// player is who joins: a user id and the character they play.
type player struct {
	user, character string
}

// join answers POST .../join: it checks the room and the map, finds the
// player's character, and signs a ticket for the map's instance.
func (h *Handler) join(r *http.Request) (int, any, error) {
	req, err := readJoin(r)
	if err != nil {
		return 0, nil, err
	}
	ctx := r.Context()
	room, err := h.room(ctx, r.PathValue("ns"), r.PathValue("room"))
	if err != nil {
		return 0, nil, err
	}
	m, err := joinableMap(room, req.Map)
	if err != nil {
		return 0, nil, err
	}
	if req.AuthKey != "" && room.Spec.Database == nil {
		return 0, nil, fail(CodeBadRequest, "this room has no database: join without an authKey")
	}
	keys, err := h.roomKeys(ctx, room)
	if err != nil {
		return 0, nil, err
	}
	party, err := h.joinParty(room, keys, req)
	if err != nil {
		return 0, nil, err
	}
	who, err := h.joiner(ctx, room, req)
	if err != nil {
		return 0, nil, err
	}
	// The seat is held for the ticket's life, which starts now.
	mi, err := h.seatOn(ctx, room, m, req.Instance, party, h.clock().Add(ticketTTL(room)))
	if err != nil {
		return 0, nil, err
	}
	resp, err := h.ticket(room, mi, keys, who, party)
	if err != nil {
		return 0, nil, err
	}
	logr.FromContextOrDiscard(ctx).V(1).Info("Issued a join ticket",
		"user", who.user, "character", who.character, "instance", mi.Name, "expiresAt", resp.ExpiresAt)
	return http.StatusOK, resp, nil
}

// readJoin reads a join's body, normalises its authKey and refuses what
// no room accepts.
func readJoin(r *http.Request) (JoinRequest, error) {
	var req JoinRequest
	if err := decodeBody(r, &req); err != nil {
		return JoinRequest{}, err
	}
	var err error
	if req.AuthKey, err = normalAuthKey(req.AuthKey); err != nil {
		return JoinRequest{}, err
	}
	return req, checkJoin(req)
}

// checkJoin refuses what no room accepts.
func checkJoin(req JoinRequest) error {
	switch {
	case req.CharacterID != "" && req.AuthKey == "":
		return fail(CodeBadRequest, "characterId needs an authKey: guests play a fresh character")
	case len(req.CharacterID) > maxCharacterIDBytes:
		return fail(CodeBadRequest, "characterId is longer than %d bytes", maxCharacterIDBytes)
	case !safeID(req.CharacterID, maxCharacterIDBytes):
		return errCharacterID()
	case len(req.Instance) > maxInstanceBytes || !safeID(req.Instance, maxInstanceBytes):
		return fail(CodeBadRequest, "instance must be the name of a shard of the map, as a welcome names it")
	case !safeID(req.Party, maxPartyBytes):
		return fail(CodeBadRequest, "party must be up to %d letters, digits, '-' or '_'", maxPartyBytes)
	}
	return nil
}

// errCharacterID refuses a character id no character can have: it never
// reaches the database (a NUL byte there is an error of its own).
func errCharacterID() error {
	return fail(CodeBadRequest, "characterId must be up to %d letters, digits, '-' or '_'", maxCharacterIDBytes)
}

// safeID accepts "" and ids of at most max bytes of a safe alphabet:
// parties, and character ids (the store makes them c-<hex>, guests
// guest-<hex>).
func safeID(p string, max int) bool {
	if len(p) > max {
		return false
	}
	for _, r := range p {
		if !partyRune(r) {
			return false
		}
	}
	return true
}

func partyRune(r rune) bool {
	return r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '_'
}

// joiner is the joining user and character. A guest gets fresh random ids
// and never touches the database; a keyed user plays the character asked
// for, if it is theirs, or their active one.
func (h *Handler) joiner(ctx context.Context, room *gamev1.GameRoom, req JoinRequest) (player, error) {
	if req.AuthKey == "" {
		return player{user: guestID(), character: guestID()}, nil
	}
	who := player{user: UserID(req.AuthKey)}
	accounts, err := h.accounts(ctx, room)
	if err != nil {
		return player{}, err
	}
	if err := h.checkBan(ctx, accounts, who.user); err != nil {
		return player{}, err
	}
	if req.CharacterID != "" {
		c, err := accounts.CharacterOf(ctx, who.user, req.CharacterID)
		who.character = c.ID
		return who, err
	}
	c, err := h.activeCharacter(ctx, accounts, who.user)
	who.character = c.ID
	return who, err
}

// checkBan refuses a user an operator banned from the room (the maps
// refuse its hellos too: a ticket would be no use).
func (h *Handler) checkBan(ctx context.Context, accounts Accounts, user string) error {
	ban, banned, err := accounts.BanOf(ctx, user, h.clock())
	if err != nil {
		return err
	}
	if banned {
		return fail(CodeBanned, "%s", ban.Message())
	}
	return nil
}

// ticketTTL is how long the room's tickets and transfer tokens live: its
// tokens.ttl, or defaultTicketTTL.
func ticketTTL(room *gamev1.GameRoom) time.Duration {
	ttl := gamev1.DurationOr(room.Spec.Tokens.TTL, defaultTicketTTL)
	if ttl < time.Second { // the CRD refuses it; a ticket needs whole seconds
		ttl = defaultTicketTTL
	}
	return ttl
}

// ticket signs the join ticket for the map's instance with the room's
// current key.
func (h *Handler) ticket(room *gamev1.GameRoom, mi *gamev1.MapInstance, keys token.KeySet, who player, party string) (JoinResponse, error) {
	ttl := ticketTTL(room)
	raw, claims, err := token.NewSigner(token.StaticKeys(keys), h.clock).Sign(token.Claims{
		Type: token.TypeJoin, Subject: who.user, Character: who.character, Room: room.Name, Map: mi.Name, Party: party,
	}, ttl)
	if err != nil {
		return JoinResponse{}, err
	}
	return JoinResponse{Endpoint: mi.Status.Endpoint, Map: mi.Spec.MapName, Ticket: raw, ExpiresAt: claims.ExpiresAt}, nil
}
