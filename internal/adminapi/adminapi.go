// Package adminapi is the manager's API for platform operators
// (docs/operations.md, "Answering a player's support ticket" and
// "Moderation"), apart from the players' join API: a character's history
// and the replay check of its items, read from the room's database. Every
// request is authorised by Kubernetes RBAC on the GameRoom's admin
// subresource (auth.go), and every one is logged with who made it.
package adminapi

// +kubebuilder:rbac:groups=authentication.k8s.io,resources=tokenreviews,verbs=create
// +kubebuilder:rbac:groups=authorization.k8s.io,resources=subjectaccessreviews,verbs=create
// +kubebuilder:rbac:groups=game.roomkeeper.dev,resources=gamerooms,verbs=get;list;watch

import (
	"context"
	"encoding/json"
	"errors"
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
			err = req.db.RecordAdminAction(ctx, store.AdminAction{Actor: who.Name, Action: action,
				Target: r.PathValue("id"), Detail: map[string]any{"query": r.URL.RawQuery}})
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
