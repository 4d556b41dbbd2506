package joinapi

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"time"

	"github.com/go-logr/logr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/roomkeeper/roomkeeper/internal/store"
)

// requestTimeout bounds everything one request does: cache and API reads,
// opening the database, the database calls.
const requestTimeout = 10 * time.Second

// maxBodyBytes bounds a request body; a real one is under 200 bytes.
const maxBodyBytes = 4 << 10

// roomPath is the prefix of every endpoint: one GameRoom.
const roomPath = "/v1/namespaces/{ns}/gamerooms/{room}"

// Options configure a Handler.
type Options struct {
	// Client reads GameRooms, MapInstances and the labelled key Secrets:
	// the manager's cached client.
	Client client.Reader
	// APIReader reads the rooms' database Secrets, which the manager's
	// cache does not hold: the manager's API reader.
	APIReader client.Reader
	// Log gets one line per request at V(1) and failures at error level.
	// It never sees an authKey or a ticket.
	Log logr.Logger
	// Clock signs tickets and times quarantines; nil means time.Now.
	Clock func() time.Time
	// Limits bound each client IP's request rate; zero fields take DefaultLimits.
	Limits Limits
	// Open opens a room's database; nil means store.Open. Each DSN is
	// opened once and kept until Close.
	Open OpenFunc
}

// Handler is the join API's http.Handler. It is safe for concurrent use;
// Close releases the databases it opened.
type Handler struct {
	cached  client.Reader
	live    client.Reader
	log     logr.Logger
	clock   func() time.Time
	limiter *clientLimiter
	dbs     *databases
	dsns    dsnCache
	mux     *http.ServeMux
}

// endpoint answers one request: a status and a body to send as JSON, or
// an error (an *apiError, a store error, or anything else for internal).
type endpoint func(r *http.Request) (int, any, error)

// NewHandler returns the join API.
func NewHandler(opts Options) *Handler {
	h := &Handler{
		cached:  opts.Client,
		live:    opts.APIReader,
		log:     opts.Log,
		clock:   opts.Clock,
		limiter: newClientLimiter(opts.Limits),
		mux:     http.NewServeMux(),
	}
	if h.clock == nil {
		h.clock = time.Now
	}
	open := opts.Open
	if open == nil {
		open = openPostgres
	}
	h.dbs = newDatabases(open)
	h.route("POST "+roomPath+"/join", true, h.join)
	h.route("GET "+roomPath+"/characters", false, h.listCharacters)
	h.route("POST "+roomPath+"/characters", false, h.createCharacter)
	h.route("GET "+roomPath+"/characters/{id}", false, h.getCharacter)
	h.route("DELETE "+roomPath+"/characters/{id}", false, h.deleteCharacter)
	h.mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		writeError(w, fail(CodeNotFound, "no endpoint %s %s", r.Method, r.URL.Path))
	})
	return h
}

// ServeHTTP implements http.Handler.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	h.mux.ServeHTTP(w, r)
}

// Close closes the databases the handler opened.
func (h *Handler) Close() error {
	return h.dbs.Close()
}

// route registers fn; metered endpoints count in the join metrics.
func (h *Handler) route(pattern string, metered bool, fn endpoint) {
	h.mux.HandleFunc(pattern, func(w http.ResponseWriter, r *http.Request) {
		h.serve(w, r, metered, fn)
	})
}

// serve runs fn under the rate limit and the request timeout, sends its
// answer, and records it in the log and, if metered, the metrics.
func (h *Handler) serve(w http.ResponseWriter, r *http.Request, metered bool, fn endpoint) {
	start := time.Now()
	ctx, cancel := context.WithTimeout(r.Context(), requestTimeout)
	defer cancel()
	log := h.log.WithValues("method", r.Method, "path", r.URL.Path)
	r = r.WithContext(logr.NewContext(ctx, log))
	r.Body = http.MaxBytesReader(w, r.Body, maxBodyBytes)

	status, body, err := h.call(r, fn)
	code := codeOK
	if err != nil {
		e := answer(log, err)
		code, status = string(e.body.Code), e.body.Code.Status()
		writeError(w, e)
	} else {
		writeJSON(w, status, body)
	}
	took := time.Since(start)
	if metered {
		joinRequests.WithLabelValues(code).Inc()
		joinSeconds.Observe(took.Seconds())
	}
	log.V(1).Info("Answered", "status", status, "code", code, "duration", took)
}

// call applies the client's rate limit, then fn. The limiter reads the
// wall clock, not the injected one: it meters real request rates.
func (h *Handler) call(r *http.Request, fn endpoint) (int, any, error) {
	if !h.limiter.allow(clientIP(r), time.Now()) {
		return 0, nil, fail(CodeRateLimited, "too many requests from this address").retryIn(1)
	}
	return fn(r)
}

// answer is what the client is told about err. Causes are logged, never
// sent: they may name Secrets, hosts or internals.
func answer(log logr.Logger, err error) *apiError {
	var e *apiError
	switch {
	case errors.As(err, &e):
	case errors.Is(err, store.ErrNotOwner):
		e = fail(CodeNotOwner, "the character belongs to another user")
	case errors.Is(err, store.ErrNotFound):
		e = fail(CodeNotFound, "no such character")
	case errors.Is(err, store.ErrTooManyCharacters):
		e = fail(CodeBadRequest, "a user has at most %d characters: delete one first", store.MaxCharactersPerUser)
	case errors.Is(err, store.ErrUnavailable):
		e = fail(CodePersistenceUnavailable, "the room's database is unavailable: try again later").because(err)
	default:
		e = fail(CodeInternal, "internal error").because(err)
	}
	switch {
	case e.cause == nil || e.body.Code.Status() < http.StatusInternalServerError:
	case errors.Is(e.cause, context.Canceled): // the client left: nothing for an operator to fix
		log.V(1).Info("Request cancelled", "err", e.cause.Error())
	default:
		log.Error(e.cause, "Request failed", "code", e.body.Code)
	}
	return e
}

// decodeBody reads the JSON body into v: at most maxBodyBytes (serve caps
// the body), no unknown fields, one value. An empty body is an empty
// object, so a bare POST joins as a guest.
func decodeBody(r *http.Request, v any) error {
	dec := json.NewDecoder(r.Body)
	dec.DisallowUnknownFields()
	err := dec.Decode(v)
	switch {
	case errors.Is(err, io.EOF):
		return nil
	case tooLarge(err):
		return fail(CodeBadRequest, "the body is larger than %d bytes", maxBodyBytes)
	case err != nil:
		return fail(CodeBadRequest, "the body is not valid JSON for this call: %v", err)
	}
	_, err = dec.Token()
	switch {
	case errors.Is(err, io.EOF):
		return nil
	case tooLarge(err):
		return fail(CodeBadRequest, "the body is larger than %d bytes", maxBodyBytes)
	}
	return fail(CodeBadRequest, "the body holds more than one JSON value")
}

// tooLarge reports whether err is http.MaxBytesReader's limit.
func tooLarge(err error) bool {
	_, ok := errors.AsType[*http.MaxBytesError](err)
	return ok
}
