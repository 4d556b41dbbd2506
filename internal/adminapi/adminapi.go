// Package adminapi is the manager's API for platform operators
// (docs/operations.md, "Answering a player's support ticket" and
// "Moderation"), apart from the players' join API: a character's history
// and the replay check of its items, read from the room's database; and
// kicking, banning, saving and messaging on the room's maps
// (moderation.go). Every
// request is authorised by Kubernetes RBAC on the GameRoom's admin
// subresource (auth.go), and every one is logged with who made it.
package adminapi

// +kubebuilder:rbac:groups=authentication.k8s.io,resources=tokenreviews,verbs=create
// +kubebuilder:rbac:groups=authorization.k8s.io,resources=subjectaccessreviews,verbs=create
// +kubebuilder:rbac:groups=game.roomkeeper.dev,resources=gamerooms,verbs=get;list;watch

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"time"

	"github.com/go-logr/logr"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	gamev1 "github.com/roomkeeper/roomkeeper/api/v1"
	"github.com/roomkeeper/roomkeeper/internal/roomdb"
	"github.com/roomkeeper/roomkeeper/internal/store"
)

// DefaultAddr keeps the admin API on the manager's loopback: reach it with
// `kubectl port-forward`, which the API server authenticates, so tokens
// never cross the network in the clear.
const DefaultAddr = "127.0.0.1:8093"

// requestTimeout bounds one request's reviews and database reads.
const requestTimeout = 30 * time.Second

// roomPath prefixes every route: one GameRoom.
const roomPath = "/admin/v1/namespaces/{ns}/gamerooms/{room}"

// Server serves the admin API; a manager.Runnable on every replica.
type Server struct {
	Addr string
	// Client creates TokenReviews and SubjectAccessReviews and reads
	// GameRooms (the manager's client).
	Client client.Client
	// Secrets reads the rooms' database Secrets (the API reader).
	Secrets client.Reader
	Log     logr.Logger
	// PodHTTPPort is where map pods take commands (0: podenv.HTTPPort).
	PodHTTPPort int

	pool roomdb.Pool
}

var _ manager.LeaderElectionRunnable = (*Server)(nil)

// NeedLeaderElection is false: any replica answers.
func (s *Server) NeedLeaderElection() bool { return false }

// Start listens on Addr and serves until ctx ends.
func (s *Server) Start(ctx context.Context) error {
	ln, err := net.Listen("tcp", s.Addr)
	if err != nil {
		return err
	}
	return s.Serve(ctx, ln)
}

// Serve serves on ln until ctx ends.
func (s *Server) Serve(ctx context.Context, ln net.Listener) error {
	defer s.pool.Close()
	srv := &http.Server{Handler: s.Handler(), ReadHeaderTimeout: 10 * time.Second}
	go func() {
		<-ctx.Done()
		shutdown, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = srv.Shutdown(shutdown)
	}()
	if err := srv.Serve(ln); !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}

// Handler is the API's routes.
func (s *Server) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.Handle("GET "+roomPath+"/characters/{id}/history", s.room(VerbRead, "history", s.history))
	mux.Handle("GET "+roomPath+"/characters/{id}/replay", s.room(VerbRead, "replay", s.replay))
	mux.Handle("POST "+roomPath+"/kick", s.room(VerbAct, "kick", s.kick))
	mux.Handle("POST "+roomPath+"/bans", s.room(VerbAct, "ban", s.ban))
	mux.Handle("DELETE "+roomPath+"/bans/{id}", s.room(VerbAct, "unban", s.unban))
	mux.Handle("POST "+roomPath+"/save", s.room(VerbAct, "save", s.save))
	mux.Handle("POST "+roomPath+"/message", s.room(VerbAct, "message", s.message))
	return mux
}

// request is one authorised request on a room's database.
type request struct {
	ctx  context.Context
	r    *http.Request
	who  caller
	room *gamev1.GameRoom
	db   *store.Postgres
}

// room authenticates and authorises the request for verb on the room,
// opens the room's database, records who asked what (the manager's log,
// and the room's admin_actions as action: reading a player's history is
// an access to record too), and runs h.
func (s *Server) room(verb, action string, h func(request) (any, error)) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ctx, cancel := context.WithTimeout(r.Context(), requestTimeout)
		defer cancel()
		ns, name := r.PathValue("ns"), r.PathValue("room")
		who, err := authenticate(ctx, s.Client, r)
		if err == nil {
			err = authorize(ctx, s.Client, who, verb, ns, name)
		}
		req := request{ctx: ctx, r: r, who: who}
		if err == nil {
			req.room, req.db, err = s.database(ctx, ns, name)
		}
		if err == nil {
			err = s.record(req, action)
		}
		var body any
		if err == nil {
			body, err = h(req)
		}
		s.Log.Info("admin request", "user", who.Name, "method", r.Method, "path", r.URL.Path, "error", errString(err))
		if err != nil {
			writeError(w, err)
			return
		}
		writeJSON(w, http.StatusOK, body)
	})
}

// record writes the request to admin_actions before it is carried out:
// who, what, the path's id, the query and the body (read here, and put
// back for the handler).
func (s *Server) record(req request, action string) error {
	detail := map[string]any{}
	if q := req.r.URL.RawQuery; q != "" {
		detail["query"] = q
	}
	if req.r.Body != nil && req.r.Method != http.MethodGet {
		body, err := io.ReadAll(io.LimitReader(req.r.Body, 16<<10))
		if err != nil {
			return &badRequest{"reading the body: " + err.Error()}
		}
		req.r.Body = io.NopCloser(bytes.NewReader(body))
		var fields map[string]any
		if json.Unmarshal(body, &fields) == nil {
			detail["request"] = fields
		}
	}
	return req.db.RecordAdminAction(req.ctx, store.AdminAction{Actor: req.who.Name, Action: action,
		Target: req.r.PathValue("id"), Detail: detail})
}

// database is the room and its store.
func (s *Server) database(ctx context.Context, ns, name string) (*gamev1.GameRoom, *store.Postgres, error) {
	room := &gamev1.GameRoom{}
	if err := s.Client.Get(ctx, types.NamespacedName{Namespace: ns, Name: name}, room); err != nil {
		return nil, nil, err
	}
	dsn, err := roomdb.DSN(ctx, s.Secrets, room)
	if err != nil {
		return nil, nil, err
	}
	db, err := s.pool.Open(ctx, dsn)
	return room, db, err
}

// errorBody is every error's answer.
type errorBody struct {
	Code    string `json:"code"`
	Message string `json:"message"`
}

func writeError(w http.ResponseWriter, err error) {
	status, code := http.StatusInternalServerError, "internal"
	var auth *authError
	var bad *badRequest
	switch {
	case errors.As(err, &auth):
		status, code = auth.status, map[int]string{http.StatusUnauthorized: "unauthenticated", http.StatusForbidden: "forbidden"}[auth.status]
	case errors.As(err, &bad):
		status, code = http.StatusBadRequest, "bad_request"
	case apierrors.IsNotFound(err), errors.Is(err, store.ErrNotFound):
		status, code = http.StatusNotFound, "not_found"
	case errors.Is(err, roomdb.ErrNoDatabase):
		status, code = http.StatusConflict, "no_database"
	case errors.Is(err, store.ErrUnavailable):
		status, code = http.StatusServiceUnavailable, "persistence_unavailable"
	}
	writeJSON(w, status, errorBody{Code: code, Message: err.Error()})
}

// badRequest is a request the caller has to change.
type badRequest struct{ msg string }

func (e *badRequest) Error() string { return e.msg }

func writeJSON(w http.ResponseWriter, status int, body any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(body) // the client went away: nothing to do
}

func errString(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}
