package joinapi

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net/http"
	"sync"
	"time"

	"github.com/go-logr/logr"
	"golang.org/x/sync/singleflight"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/roomkeeper/roomkeeper/internal/protocol"
	"github.com/roomkeeper/roomkeeper/internal/store"
)

// requestTimeout bounds everything one player request does: cache and API
// reads, opening the database, the database calls.
const requestTimeout = 10 * time.Second

// maxBodyBytes bounds a request body; a real one is under 200 bytes.
const maxBodyBytes = 4 << 10

// roomPath is the prefix of every player endpoint: one GameRoom.
const roomPath = "/v1/namespaces/{ns}/gamerooms/{room}"

// internalRoomPath is the prefix of the endpoints room servers call.
const internalRoomPath = "/v1/internal/namespaces/{ns}/gamerooms/{room}"

// Options configure a Handler.
type Options struct {
	// Client reads GameRooms, MapInstances and the labelled key Secrets:
	// the manager's cached client.
	Client client.Reader
	// Writer creates the MapInstances of instanced maps, one per party:
	// the manager's client. Without it, portals into instanced maps answer
	// internal errors.
	Writer client.Writer
	// APIReader reads the rooms' database Secrets, which the manager's
	// cache does not hold: the manager's API reader.
	APIReader client.Reader
	// Log gets one line per request at V(1) and failures at error level.
	// It never sees an authKey or a ticket.
	Log logr.Logger
	// Clock signs tickets and times quarantines; nil means time.Now.
	Clock func() time.Time
	// Limits bound each client's request rate (an IPv4 address or IPv6 /64);
	// zero fields take DefaultLimits.
	Limits Limits
	// MaxDestinationsInFlight bounds the destination requests of room
	// servers answered at once; DefaultMaxDestinationsInFlight when zero.
	MaxDestinationsInFlight int
	// Open opens a room's database; nil means store.Open. Each DSN is
	// opened once and kept until Close.
	Open OpenFunc
	// MaxCharactersPerRoom caps the characters the join API creates in a
	// room's database (a first join's, or a POST to characters); past it
	// they are refused with room_full. Rooms that share a database share
	// the cap. DefaultMaxCharactersPerRoom when zero or less.
	MaxCharactersPerRoom int

	// readyWait replaces destinationReadyTimeout, for tests.
	readyWait time.Duration
}

// Handler is the join API's http.Handler. It is safe for concurrent use;
// Close releases the databases it opened.
type Handler struct {
	cached  client.Reader
	live    client.Reader
	writer  client.Writer
	log     logr.Logger
	clock   func() time.Time
	limiter *clientLimiter
	// maxCharacters caps the characters of a room's database.
	maxCharacters int
	// internal holds one token per destination request in flight.
	internal chan struct{}
	// readyWait is how long a destination request waits for a party's
	// map: destinationReadyTimeout, shorter in tests.
	readyWait time.Duration
	// stopping is closed when the server stops: destination requests stop
	// waiting for maps.
	stopping chan struct{}
	stopOnce sync.Once
	dbs      *databases
	dsns     dsnCache
	dsnReads singleflight.Group // one read of a database Secret at a time
	// packs are the content packs' definitions served so far.
	packs packCache
	// seats are the seats this replica's valid tickets hold.
	seats seatBook
	// claims are the warm instances this replica claimed lately.
	claims claimBook
	// partyShards are the shards this replica seated parties on lately.
	partyShards partyShardBook
	mux         *http.ServeMux
}

// endpoint answers one request: a status and a body to send as JSON, or
// an error (an *apiError, a store error, or anything else for internal).
type endpoint func(r *http.Request) (int, any, error)

// routeOptions say how an endpoint is served: how long it may take, what
// lets a request in, and which series count it.
type routeOptions struct {
	// timeout bounds the request; past requestTimeout the connection's
	// write deadline is moved out to match.
	timeout time.Duration
	// admit lets a request in, or refuses it with an *apiError; release
	// is called when it is answered.
	admit func(r *http.Request) (release func(), err error)
	// metrics count the answers; nil counts nothing.
	metrics *requestMetrics
}

// NewHandler returns the join API.
func NewHandler(opts Options) *Handler {
	inFlight := opts.MaxDestinationsInFlight
	if inFlight <= 0 {
		inFlight = DefaultMaxDestinationsInFlight
	}
	h := &Handler{
		cached:    opts.Client,
		live:      opts.APIReader,
		writer:    opts.Writer,
		log:       opts.Log,
		clock:     opts.Clock,
		limiter:   newClientLimiter(opts.Limits),
		internal:  make(chan struct{}, inFlight),
		stopping:  make(chan struct{}),
		readyWait: destinationReadyTimeout,
		mux:       http.NewServeMux(),
	}
	if h.clock == nil {
		h.clock = time.Now
	}
	if opts.readyWait > 0 {
		h.readyWait = opts.readyWait
	}
	h.maxCharacters = opts.MaxCharactersPerRoom
	if h.maxCharacters <= 0 {
		h.maxCharacters = DefaultMaxCharactersPerRoom
	}
	open := opts.Open
	if open == nil {
		open = openPostgres
	}
	h.dbs = newDatabases(open)
	player := routeOptions{timeout: requestTimeout, admit: h.admitPlayer}
	joins := player
	joins.metrics = joinSeries
	h.route("POST "+roomPath+"/join", joins, h.join)
	h.route("POST "+roomPath+"/resume", player, h.resume)
	h.route("GET "+roomPath+"/characters", player, h.listCharacters)
	h.route("POST "+roomPath+"/characters", player, h.createCharacter)
	h.route("GET "+roomPath+"/characters/{id}", player, h.getCharacter)
	h.route("DELETE "+roomPath+"/characters/{id}", player, h.deleteCharacter)
	h.route("GET "+roomPath+"/content", player, h.content)
	h.route("POST "+roomPath+"/parties", player, h.createParty)
	h.route("POST "+partiesPath, player, h.createParty)
	h.route("POST "+roomPath+"/parties/{party}/invites", player, h.invite)
	h.route("GET /v1/namespaces/{ns}/gamerooms", player, h.listRooms)
	h.route("GET "+lobbyPath, player, h.listRooms)
	h.route("POST "+internalRoomPath+"/destinations",
		routeOptions{timeout: destinationTimeout, admit: admitAuthenticated, metrics: destinationSeries}, h.destination)
	h.mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		writeError(w, fail(CodeNotFound, "no endpoint %s %s", r.Method, r.URL.Path))
	})
	return h
}

// ServeHTTP implements http.Handler.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	h.mux.ServeHTTP(w, r)
}

// stopWaiting makes destination requests waiting for a map answer now.
func (h *Handler) stopWaiting() {
	h.stopOnce.Do(func() { close(h.stopping) })
}

// Close closes the databases the handler opened.
func (h *Handler) Close() error {
	return h.dbs.Close()
}

// route registers fn, served as o says.
func (h *Handler) route(pattern string, o routeOptions, fn endpoint) {
	h.mux.HandleFunc(pattern, func(w http.ResponseWriter, r *http.Request) {
		h.serve(w, r, o, fn)
	})
}

// serve runs fn once o.admit lets the request in, under o.timeout, sends
// its answer, and records it in the log and o.metrics.
func (h *Handler) serve(w http.ResponseWriter, r *http.Request, o routeOptions, fn endpoint) {
	start := time.Now()
	if o.timeout > requestTimeout {
		// The server's write timeout fits player requests: an answer
		// later than that would never arrive. A ResponseWriter that
		// cannot move it (a test's wrapper) keeps the server's.
		_ = http.NewResponseController(w).SetWriteDeadline(start.Add(o.timeout + writeSlack))
	}
	ctx, cancel := context.WithTimeout(r.Context(), o.timeout)
	defer cancel()
	log := h.log.WithValues("method", r.Method, "path", r.URL.Path)
	r = r.WithContext(logr.NewContext(ctx, log))
	r.Body = http.MaxBytesReader(w, r.Body, maxBodyBytes)

	status, body, err := call(r, o.admit, fn)
	code := codeOK
	if err != nil {
		e := answer(log, err)
		code, status = string(e.body.Code), e.body.Code.Status()
		writeError(w, e)
	} else if c, ok := body.(cacheable); ok {
		status = writeCacheable(w, r, status, c)
	} else {
		writeJSON(w, status, body)
	}
	took := time.Since(start)
	if o.metrics != nil {
		o.metrics.observe(code, took)
	}
	log.V(1).Info("Answered", "status", status, "code", code, "duration", took)
}

// call runs fn if admit lets the request in.
func call(r *http.Request, admit func(*http.Request) (func(), error), fn endpoint) (int, any, error) {
	release, err := admit(r)
	if err != nil {
		return 0, nil, err
	}
	defer release()
	return fn(r)
}

// admitPlayer applies the client's rate limit (its IPv4 address or IPv6
// /64). The limiter reads the wall clock, not the injected one: it meters
// real request rates.
func (h *Handler) admitPlayer(r *http.Request) (func(), error) {
	if ok, wait := h.limiter.allow(clientKey(r), time.Now()); !ok {
		return nil, fail(CodeRateLimited, "too many requests from this address").retryIn(retrySeconds(wait))
	}
	return func() {}, nil
}

// admitAuthenticated lets every request in: the route authenticates the
// caller first and spends nothing scarce before that (the destinations
// route takes its slot after the token).
func admitAuthenticated(*http.Request) (func(), error) { return func() {}, nil }

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
		e = unavailable("the room's database is unavailable: try again later", err)
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
// the body), one object, decoded strictly (protocol.UnmarshalStrict: keys
// in their exact case, none twice, none unknown). An empty body is an
// empty object, so a bare POST joins as a guest.
func decodeBody(r *http.Request, v any) error {
	data, err := io.ReadAll(r.Body)
	switch {
	case tooLarge(err):
		return fail(CodeBadRequest, "the body is larger than %d bytes", maxBodyBytes)
	case err != nil:
		return fail(CodeBadRequest, "reading the body: %v", err)
	case len(bytes.TrimSpace(data)) == 0:
		return nil
	}
	if err := protocol.UnmarshalStrict(data, v, "body"); err != nil {
		if pe, ok := errors.AsType[*protocol.ProtocolError](err); ok {
			return fail(CodeBadRequest, "%s", pe.Message)
		}
		return fail(CodeBadRequest, "body: %v", err)
	}
	return nil
}

// tooLarge reports whether err is http.MaxBytesReader's limit.
func tooLarge(err error) bool {
	_, ok := errors.AsType[*http.MaxBytesError](err)
	return ok
}
