package client

import (
	"bytes"
	"context"
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
)

// maxAnswerBytes bounds what the client reads of a join API answer; a real
// one is well under a kilobyte, a character list a few.
const maxAnswerBytes = 1 << 20

// JoinAPI is a client of the manager's join API (docs/joinapi.md): it asks
// for a map's endpoint and a join ticket, and manages a player's characters.
type JoinAPI struct {
	// BaseURL is the join API's address, such as http://127.0.0.1:8090.
	BaseURL string
	// HTTPClient sends the requests; nil means http.DefaultClient.
	HTTPClient *http.Client
}

// The join API's bodies, defined once in internal/protocol (docs/joinapi.md).
type (
	// JoinRequest is what a join asks for. Every field is optional: the
	// zero value joins the room's default map as a guest.
	JoinRequest = protocol.JoinRequest
	// JoinResponse is where to connect and the ticket to say hello with.
	JoinResponse = protocol.JoinResponse
	// Character is one of a player's characters.
	Character = protocol.Character
	// RoomContent is the definitions of the content packs a room's maps
	// play (ContentCache).
	RoomContent = protocol.RoomContent
	// RoomList is a page of the lobby; RoomSummary one room in it,
	// MapSummary one of its maps, InstanceSummary one of a map's
	// instances (a shard's name is what JoinRequest.Instance asks for).
	RoomList        = protocol.RoomList
	RoomSummary     = protocol.RoomSummary
	MapSummary      = protocol.MapSummary
	InstanceSummary = protocol.InstanceSummary
	// Party is a party token and what it says (CreateParty, Invite).
	Party = protocol.Party
)

// LobbyQuery is what a lobby page asks for; every field is optional.
type LobbyQuery struct {
	// Namespace limits the list to one namespace; "" lists every one.
	Namespace string
	// LabelSelector filters by the rooms' labels, in the Kubernetes
	// syntax (mode=coop,region in (eu,us)).
	LabelSelector string
	// Limit is the page's size, 1 to 200 (0: the join API's 50).
	Limit int
	// Continue is the previous page's Continue, for the next page.
	Continue string
}

// Rooms asks the lobby for a page of rooms.
func (a *JoinAPI) Rooms(ctx context.Context, q LobbyQuery) (RoomList, error) {
	path := "/v1/gamerooms"
	if q.Namespace != "" {
		path = "/v1/namespaces/" + url.PathEscape(q.Namespace) + "/gamerooms"
	}
	v := url.Values{}
	if q.LabelSelector != "" {
		v.Set("labelSelector", q.LabelSelector)
	}
	if q.Limit > 0 {
		v.Set("limit", strconv.Itoa(q.Limit))
	}
	if q.Continue != "" {
		v.Set("continue", q.Continue)
	}
	if len(v) > 0 {
		path += "?" + v.Encode()
	}
	var list RoomList
	err := a.call(ctx, http.MethodGet, path, "", nil, &list)
	return list, err
}

// APIError is an error answer of the join API.
type APIError struct {
	// Status is the HTTP status.
	Status int
	// Code is the stable error code, such as room_not_ready or rate_limited.
	Code string
	// Message is for humans.
	Message string
	// RetryAfter is how long to wait before trying again, for
	// map_quarantined and rate_limited; zero otherwise.
	RetryAfter time.Duration
}

func (e *APIError) Error() string {
	return fmt.Sprintf("join API: %s (%d): %s", e.Code, e.Status, e.Message)
}

// Join asks for a ticket to the room's map.
func (a *JoinAPI) Join(ctx context.Context, namespace, room string, req JoinRequest) (JoinResponse, error) {
	var resp JoinResponse
	err := a.call(ctx, http.MethodPost, roomURL(namespace, room)+"/join", "", req, &resp)
	return resp, err
}

// Locate asks where the map a resume token names runs now (after its pod
// crashed or drained) and returns its endpoint, to resume there.
func (a *JoinAPI) Locate(ctx context.Context, namespace, room, resumeToken string) (string, error) {
	var resp struct {
		Endpoint string `json:"endpoint"`
	}
	err := a.call(ctx, http.MethodPost, roomURL(namespace, room)+"/resume", "", map[string]string{"resumeToken": resumeToken}, &resp)
	return resp.Endpoint, err
}

// Reconnect is a reconnect policy through this join API: it locates the
// map a resume token names, and joins again with req when the seat is gone.
func (a *JoinAPI) Reconnect(namespace, room string, req JoinRequest) *Reconnect {
	return &Reconnect{
		Locate: func(ctx context.Context, resumeToken string) (string, error) {
			return a.Locate(ctx, namespace, room, resumeToken)
		},
		Rejoin: func(ctx context.Context) (string, string, error) {
			resp, err := a.Join(ctx, namespace, room, req)
			return resp.Endpoint, resp.Ticket, err
		},
	}
}

// CreateParty makes a new party of the room led by the authKey's user (a
// guest without one) and returns the leader's party token: joins with it
// (JoinRequest.PartyToken) are the party's, and Invite makes more.
func (a *JoinAPI) CreateParty(ctx context.Context, namespace, room, authKey string) (Party, error) {
	var p Party
	err := a.call(ctx, http.MethodPost, roomURL(namespace, room)+"/parties", "", protocol.CreatePartyRequest{AuthKey: authKey}, &p)
	return p, err
}

// Invite asks, with the party leader's token, for a member's party token
// to hand a player who joins the party.
func (a *JoinAPI) Invite(ctx context.Context, namespace, room string, leader Party) (Party, error) {
	var p Party
	err := a.call(ctx, http.MethodPost, roomURL(namespace, room)+"/parties/"+url.PathEscape(leader.Party)+"/invites", leader.Token, nil, &p)
	return p, err
}

// Characters lists the player's characters in the room, oldest first.
func (a *JoinAPI) Characters(ctx context.Context, namespace, room, authKey string) ([]Character, error) {
	var list protocol.CharacterList
	err := a.call(ctx, http.MethodGet, roomURL(namespace, room)+"/characters", authKey, nil, &list)
	return list.Characters, err
}

// CreateCharacter gives the player a new character named name; active
// makes it the one joins play (a first character is active anyway).
func (a *JoinAPI) CreateCharacter(ctx context.Context, namespace, room, authKey, name string, active bool) (Character, error) {
	body := protocol.CreateCharacterRequest{Name: name, Active: active}
	var c Character
	err := a.call(ctx, http.MethodPost, roomURL(namespace, room)+"/characters", authKey, body, &c)
	return c, err
}

// Character returns one of the player's characters.
func (a *JoinAPI) Character(ctx context.Context, namespace, room, authKey, id string) (Character, error) {
	var c Character
	err := a.call(ctx, http.MethodGet, characterURL(namespace, room, id), authKey, nil, &c)
	return c, err
}

// DeleteCharacter deletes one of the player's characters.
func (a *JoinAPI) DeleteCharacter(ctx context.Context, namespace, room, authKey, id string) error {
	return a.call(ctx, http.MethodDelete, characterURL(namespace, room, id), authKey, nil, nil)
}

func roomURL(namespace, room string) string {
	return "/v1/namespaces/" + url.PathEscape(namespace) + "/gamerooms/" + url.PathEscape(room)
}

func characterURL(namespace, room, id string) string {
	return roomURL(namespace, room) + "/characters/" + url.PathEscape(id)
}

// call sends body as JSON (when not nil) with the authKey as bearer (when
// set) and decodes a success into out (when not nil), or returns *APIError.
func (a *JoinAPI) call(ctx context.Context, method, path, authKey string, body, out any) error {
	req, err := a.request(ctx, method, path, authKey, body)
	if err != nil {
		return err
	}
	_, data, err := a.send(req)
	if err != nil {
		return err
	}
	if out == nil {
		return nil
	}
	if err := json.Unmarshal(data, out); err != nil {
		return fmt.Errorf("join API: decoding the answer: %w", err)
	}
	return nil
}

// send sends req and reads the answer: a success or 304 Not Modified,
// else *APIError.
func (a *JoinAPI) send(req *http.Request) (int, []byte, error) {
	hc := a.HTTPClient
	if hc == nil {
		hc = http.DefaultClient
	}
	resp, err := hc.Do(req)
	if err != nil {
		return 0, nil, fmt.Errorf("join API: %w", err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, maxAnswerBytes))
	if err != nil {
		return 0, nil, fmt.Errorf("join API: reading the answer: %w", err)
	}
	if resp.StatusCode/100 != 2 && resp.StatusCode != http.StatusNotModified {
		return 0, nil, apiError(resp, data)
	}
	return resp.StatusCode, data, nil
}

func (a *JoinAPI) request(ctx context.Context, method, path, authKey string, body any) (*http.Request, error) {
	var rd io.Reader
	if body != nil {
		data, err := json.Marshal(body)
		if err != nil {
			return nil, err
		}
		rd = bytes.NewReader(data)
	}
	req, err := http.NewRequestWithContext(ctx, method, strings.TrimSuffix(a.BaseURL, "/")+path, rd)
	if err != nil {
		return nil, fmt.Errorf("join API: %w", err)
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if authKey != "" {
		req.Header.Set("Authorization", "Bearer "+authKey)
	}
	return req, nil
}

// apiError decodes an error answer. One that is not the API's JSON (a
// proxy's page, say) keeps its status and the start of its body.
func apiError(resp *http.Response, data []byte) *APIError {
	var body protocol.APIErrorBody[string]
	e := &APIError{Status: resp.StatusCode}
	if err := json.Unmarshal(data, &body); err != nil || body.Code == "" {
		e.Message = strings.TrimSpace(string(data[:min(len(data), 200)]))
		return e
	}
	e.Code, e.Message = body.Code, body.Message
	e.RetryAfter = time.Duration(body.RetryAfter) * time.Second
	if s, err := strconv.Atoi(resp.Header.Get("Retry-After")); err == nil && e.RetryAfter == 0 {
		e.RetryAfter = time.Duration(s) * time.Second
	}
	return e
}

// RetryAfter reports whether err is a join API answer worth trying again
// (rate_limited, map_quarantined, or persistence_unavailable with a
// retryAfter: the database was busy or away, not missing) and how long to
// wait first.
func RetryAfter(err error) (time.Duration, bool) {
	var e *APIError
	if !errors.As(err, &e) {
		return 0, false
	}
	switch {
	case e.Code == "rate_limited", e.Code == "map_quarantined":
	case e.Code == "persistence_unavailable" && e.RetryAfter > 0:
	default:
		return 0, false
	}
	return max(e.RetryAfter, time.Second), true
}
