// Package directory is the room server's client of the manager's
// destination route (docs/joinapi.md, "Portal destinations"): when a player
// walks into a portal, the map pod asks where the portal's map runs. Each
// request carries a fresh destination token signed with the room's key.
//
// It imports no Kubernetes and not the join API itself: the room server
// links it, and the wire format is the contract.
package directory

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/roomkeeper/roomkeeper/internal/protocol"
	"github.com/roomkeeper/roomkeeper/internal/token"
)

// Codes of the join API's error answers to a destination request
// (docs/joinapi.md). Error.Code holds one of them, or whatever else a newer
// join API sends.
const (
	// CodeBadRequest: the map is not one of the room's, or the body is bad.
	CodeBadRequest = "bad_request"
	// CodeUnauthorized: the token was refused: wrong key, expired, another
	// room, map or party.
	CodeUnauthorized = "unauthorized"
	// CodeRoomNotFound: the join API has no such GameRoom (join APIs
	// before this one; today an unknown room is unauthorized, so that the
	// route tells nothing to a caller without a valid token).
	CodeRoomNotFound = "room_not_found"
	// CodeRoomNotReady: the map's instance is not Ready (yet); for an
	// instanced map, it did not become Ready in time.
	CodeRoomNotReady = "room_not_ready"
	// CodeRateLimited: too many destination requests in flight.
	CodeRateLimited = "rate_limited"
	// CodeRoomFull: the party may not start another instance of the map:
	// the map's, the guests' or the player's budget is spent.
	CodeRoomFull = "room_full"
	// CodeMapQuarantined: the map crashed too often; RetryAfter says for
	// how long it is held down.
	CodeMapQuarantined = "map_quarantined"
	// CodeInternal: a failure on the join API's side, or an answer that is
	// not the join API's (a proxy's error page).
	CodeInternal = "internal"
)

// tokenTTL is the lifetime of the token each request carries: long enough
// for clock skew between pod and manager, short enough that a captured one
// is soon useless.
const tokenTTL = 10 * time.Second

// defaultTimeout bounds a request when New is given no http.Client. The
// join API may wait up to 30 s for a party's map to start.
const defaultTimeout = 40 * time.Second

// maxAnswerBytes bounds what is read of an answer; a real one is a few
// hundred bytes.
const maxAnswerBytes = 64 << 10

// Destination is where a portal leads (the join API's answer).
type Destination = protocol.Destination

// Error is an error answer of the join API.
type Error struct {
	// Code is the join API's error code (the Code constants).
	Code string
	// Message is for humans.
	Message string
	// RetryAfter is in whole seconds, for map_quarantined and rate_limited;
	// zero otherwise.
	RetryAfter int
}

func (e *Error) Error() string {
	return "destination: " + e.Code + ": " + e.Message
}

// Client asks one room's join API for destinations on behalf of one
// MapInstance. It is safe for concurrent use.
type Client struct {
	url      string
	room     string
	instance string
	keys     token.KeySource
	signer   *token.Signer
	hc       *http.Client
}

// New returns a client of the join API at baseURL (such as
// http://roomkeeper-join-api.roomkeeper-system.svc:8090) for the MapInstance
// instance of room in namespace, signing with keys' current key. A nil hc
// means a client with a 40 s timeout.
func New(baseURL, namespace, room, instance string, keys token.KeySource, hc *http.Client) *Client {
	if hc == nil {
		hc = &http.Client{Timeout: defaultTimeout}
	}
	return &Client{
		url: strings.TrimSuffix(baseURL, "/") + "/v1/internal/namespaces/" + url.PathEscape(namespace) +
			"/gamerooms/" + url.PathEscape(room) + "/destinations",
		room:     room,
		instance: instance,
		keys:     keys,
		signer:   token.NewSigner(keys, nil),
		hc:       hc,
	}
}

// WithClock makes the client sign its tokens at clock's time (tests); it
// returns the client.
func (c *Client) WithClock(clock func() time.Time) *Client {
	c.signer = token.NewSigner(c.keys, clock)
	return c
}

// Player is who walks through a portal.
type Player struct {
	// User and Character are the player's ids.
	User, Character string
	// Party is the player's party (optional): players of one party share
	// an instanced map.
	Party string
	// Address is the player's network address as clientaddr.Key gives it
	// (optional): the join API budgets what one address starts. It is
	// sent hashed (AddressClaim).
	Address string
}

// AddressClaim is the adr claim of an address: a hash, so the join API
// compares addresses without learning them.
func AddressClaim(address string) string {
	if address == "" {
		return ""
	}
	sum := sha256.Sum256([]byte("roomkeeper.dev/address/v1\x00" + address))
	return hex.EncodeToString(sum[:16])
}

// Resolve asks where map mapName leads p. An answer of the join API that
// is an error is an *Error; failing to reach it is another error.
func (c *Client) Resolve(ctx context.Context, mapName string, p Player) (Destination, error) {
	party := p.Party
	raw, _, err := c.signer.Sign(token.Claims{
		Type: token.TypeDestination, Subject: p.User, Character: p.Character,
		Room: c.room, Map: mapName, From: c.instance, Party: party, Address: AddressClaim(p.Address),
	}, tokenTTL)
	if err != nil {
		return Destination{}, fmt.Errorf("destination: %w", err)
	}
	body, err := json.Marshal(protocol.DestinationRequest{Map: mapName, Party: party})
	if err != nil {
		return Destination{}, err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.url, bytes.NewReader(body))
	if err != nil {
		return Destination{}, fmt.Errorf("destination: %w", err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+raw)
	resp, err := c.hc.Do(req)
	if err != nil {
		return Destination{}, fmt.Errorf("destination: asking the join API: %w", err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, maxAnswerBytes))
	if err != nil {
		return Destination{}, fmt.Errorf("destination: reading the answer: %w", err)
	}
	if resp.StatusCode != http.StatusOK {
		return Destination{}, answerError(resp, data)
	}
	var d Destination
	if err := json.Unmarshal(data, &d); err != nil {
		return Destination{}, fmt.Errorf("destination: decoding the answer: %w", err)
	}
	if d.Instance == "" || d.Endpoint == "" {
		return Destination{}, errors.New("destination: the answer has no instance or endpoint")
	}
	return d, nil
}

// answerError decodes an error answer. One that is not the join API's JSON
// (a proxy's page, say) is CodeInternal with its status and the start of
// its body.
func answerError(resp *http.Response, data []byte) *Error {
	var body protocol.APIErrorBody[string]
	if err := json.Unmarshal(data, &body); err != nil || body.Code == "" {
		return &Error{Code: CodeInternal, Message: fmt.Sprintf("HTTP %d: %s",
			resp.StatusCode, strings.TrimSpace(string(data[:min(len(data), 200)])))}
	}
	e := &Error{Code: body.Code, Message: body.Message, RetryAfter: body.RetryAfter}
	if s, err := strconv.Atoi(resp.Header.Get("Retry-After")); err == nil && e.RetryAfter == 0 {
		e.RetryAfter = s
	}
	return e
}
