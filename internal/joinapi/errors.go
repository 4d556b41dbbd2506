package joinapi

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
)

// Code is a stable error code of the join API. Clients switch on it; the
// message is for humans. docs/joinapi.md lists each with its status.
type Code string

// Error codes and, in their comments, the HTTP status each is sent with.
const (
	// CodeBadRequest (400): bad JSON, unknown fields, a body over 4 KiB, an
	// unknown or instanced map, a keyed join to a room without a database,
	// a destination request without a map or for an unknown one.
	CodeBadRequest Code = "bad_request"
	// CodeUnauthorized (401): a characters call without a bearer authKey; a
	// destination request without a valid destination token of the room.
	CodeUnauthorized Code = "unauthorized"
	// CodeNotOwner (403): the character belongs to another user.
	CodeNotOwner Code = "not_owner"
	// CodeBanned (403): an operator banned the user from the room; the
	// message says until when (docs/operations.md, Moderation).
	CodeBanned Code = "banned"
	// CodeNotFound (404): no such character, or no such endpoint.
	CodeNotFound Code = "not_found"
	// CodeRoomNotFound (404): no such GameRoom.
	CodeRoomNotFound Code = "room_not_found"
	// CodeRoomNotReady (409): the map has no MapInstance yet, it is not
	// Ready, it has no endpoint, or the room's keys do not exist yet.
	CodeRoomNotReady Code = "room_not_ready"
	// CodeRoomFull (409): the map joined has no free seat (its players
	// and the valid tickets of this replica fill maxPlayersPerMap; with
	// retryAfter, seats.go); or the room's database holds its maximum
	// number of characters (Options.MaxCharactersPerRoom): a new one
	// cannot be made; or (destinations) the party may not start another
	// instance of the map: the map's, the guests' or the user's budget is
	// spent (internal/instanced).
	CodeRoomFull Code = "room_full"
	// CodeRateLimited (429): this client (IPv4 address or IPv6 /64) sent
	// too many requests, or too many destination requests are in flight.
	CodeRateLimited Code = "rate_limited"
	// CodeInternal (500): a failure that is not the client's.
	CodeInternal Code = "internal"
	// CodeMapQuarantined (503): the map crashed too often and is held down;
	// retryAfter says for how long.
	CodeMapQuarantined Code = "map_quarantined"
	// CodePersistenceUnavailable (503): the room's database cannot be
	// reached (retryAfter 2), or its database Secret or key is missing.
	CodePersistenceUnavailable Code = "persistence_unavailable"
)

// statuses maps each code to its HTTP status.
var statuses = map[Code]int{
	CodeBadRequest:             http.StatusBadRequest,
	CodeUnauthorized:           http.StatusUnauthorized,
	CodeNotOwner:               http.StatusForbidden,
	CodeBanned:                 http.StatusForbidden,
	CodeNotFound:               http.StatusNotFound,
	CodeRoomNotFound:           http.StatusNotFound,
	CodeRoomNotReady:           http.StatusConflict,
	CodeRoomFull:               http.StatusConflict,
	CodeRateLimited:            http.StatusTooManyRequests,
	CodeInternal:               http.StatusInternalServerError,
	CodeMapQuarantined:         http.StatusServiceUnavailable,
	CodePersistenceUnavailable: http.StatusServiceUnavailable,
}

// Status is the HTTP status the code is sent with.
func (c Code) Status() int {
	if s, ok := statuses[c]; ok {
		return s
	}
	return http.StatusInternalServerError
}

// apiError is an error the handlers answer with as is. Other errors become
// CodeInternal, with the cause logged and not sent.
type apiError struct {
	body  ErrorBody
	cause error // logged, never sent: it may name internals
}

func (e *apiError) Error() string {
	if e.cause != nil {
		return string(e.body.Code) + ": " + e.body.Message + ": " + e.cause.Error()
	}
	return string(e.body.Code) + ": " + e.body.Message
}

func (e *apiError) Unwrap() error { return e.cause }

// fail returns an apiError with a formatted message.
func fail(code Code, format string, args ...any) *apiError {
	return &apiError{body: ErrorBody{Code: code, Message: fmt.Sprintf(format, args...)}}
}

// because records the cause behind the answer, for the log.
func (e *apiError) because(err error) *apiError {
	e.cause = err
	return e
}

// retryIn sets retryAfter (at least one second).
func (e *apiError) retryIn(seconds int) *apiError {
	e.body.RetryAfter = max(1, seconds)
	return e
}

// persistenceRetrySeconds is the retryAfter of persistence_unavailable
// when the database (or its settings) could not be reached: long enough
// for a busy database to drain, short enough for a player to wait.
const persistenceRetrySeconds = 2

// unavailable is persistence_unavailable for a failure worth retrying.
func unavailable(message string, cause error) *apiError {
	return fail(CodePersistenceUnavailable, "%s", message).because(cause).retryIn(persistenceRetrySeconds)
}

// writeJSON sends v with status. Encoding errors are the client's loss:
// the status is already on the wire.
func writeJSON(w http.ResponseWriter, status int, v any) {
	writeBody(w, status, "no-store", v) // tickets must not be cached anywhere
}

// writeBody sends v as JSON with status and cacheControl.
func writeBody(w http.ResponseWriter, status int, cacheControl string, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", cacheControl)
	w.WriteHeader(status)
	if v != nil {
		enc := json.NewEncoder(w)
		enc.SetEscapeHTML(false) // answers are not HTML: keep "<authKey>" readable
		_ = enc.Encode(v)
	}
}

// writeError sends e with its status and, for retryable errors, Retry-After.
func writeError(w http.ResponseWriter, e *apiError) {
	if e.body.RetryAfter > 0 {
		w.Header().Set("Retry-After", strconv.Itoa(e.body.RetryAfter))
	}
	if e.body.Code == CodeUnauthorized {
		w.Header().Set("WWW-Authenticate", `Bearer realm="roomkeeper"`)
	}
	writeJSON(w, e.body.Code.Status(), e.body)
}
