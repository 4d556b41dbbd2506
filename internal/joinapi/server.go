package joinapi

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"net/http"
	"time"

	"github.com/go-logr/logr"
	"sigs.k8s.io/controller-runtime/pkg/manager"
)

// HTTP server limits. Requests are small and answered in milliseconds; the
// timeouts keep slow or idle clients from holding connections. Destination
// requests, which may wait for a map to start, move their connection's
// deadlines to fit (Handler.serve).
const (
	readHeaderTimeout = 5 * time.Second
	readTimeout       = 10 * time.Second
	writeTimeout      = requestTimeout + writeSlack
	// writeSlack is how long past its request timeout an answer may take
	// to send.
	writeSlack     = 5 * time.Second
	idleTimeout    = 60 * time.Second
	maxHeaderBytes = 16 << 10
	// shutdownTimeout is how long requests in flight get to finish when
	// the manager stops.
	shutdownTimeout = 5 * time.Second
)

// Server serves a Handler on Addr as a controller-runtime Runnable: the
// manager starts it once its cache has synced and stops it with everything
// else. Every replica serves, leader or not.
type Server struct {
	// Addr is the listen address, such as ":8090".
	Addr string
	// Handler is the join API; the Server closes it when it stops.
	Handler *Handler
	// Log gets the server's start and stop.
	Log logr.Logger
	// TLSCertFile and TLSKeyFile, when set, make it serve HTTPS with that
	// pair, read again when the files change.
	TLSCertFile, TLSKeyFile string
	// AllowedOrigins are the browser origins whose pages may call the
	// player routes ("*": any); none allows no cross-origin call.
	AllowedOrigins []string
	// Pages are more handlers by path prefix ("/play/": the web client),
	// served beside the API.
	Pages map[string]http.Handler
}

// Config is what the manager's flags say of the join API.
type Config struct {
	// Addr is the listen address; "0" or "" disables the join API.
	Addr string
	// MaxCharactersPerRoom caps the characters one room's database holds.
	MaxCharactersPerRoom int
	// TLSCertFile and TLSKeyFile serve HTTPS (Server).
	TLSCertFile, TLSKeyFile string
	// AllowedOrigins are the browser origins allowed (Server).
	AllowedOrigins []string
	// Pages are served beside the API (Server).
	Pages map[string]http.Handler
}

var (
	_ manager.Runnable               = (*Server)(nil)
	_ manager.LeaderElectionRunnable = (*Server)(nil)
)

// Setup adds the join API on cfg.Addr to mgr, reading through the
// manager's cached client and API reader and creating instanced maps'
// MapInstances with its client. An Addr of "0" (or "") disables it.
func Setup(mgr manager.Manager, cfg Config) error {
	if cfg.Addr == "" || cfg.Addr == "0" {
		return nil
	}
	if (cfg.TLSCertFile == "") != (cfg.TLSKeyFile == "") {
		return errors.New("join API TLS needs both a certificate and a key file")
	}
	log := mgr.GetLogger().WithName("joinapi")
	h := NewHandler(Options{
		Client: mgr.GetClient(), APIReader: mgr.GetAPIReader(), Writer: mgr.GetClient(), Log: log,
		MaxCharactersPerRoom: cfg.MaxCharactersPerRoom,
	})
	if err := mgr.Add(&Server{Addr: cfg.Addr, Handler: h, Log: log, TLSCertFile: cfg.TLSCertFile,
		TLSKeyFile: cfg.TLSKeyFile, AllowedOrigins: cfg.AllowedOrigins, Pages: cfg.Pages}); err != nil {
		return fmt.Errorf("adding the join API: %w", err)
	}
	return nil
}

// NeedLeaderElection is false: any replica answers. Joins are reads; the
// one write, creating a party's MapInstance, is a create that tolerates
// AlreadyExists, so replicas racing on it agree.
func (s *Server) NeedLeaderElection() bool { return false }

// Start listens on Addr and serves until ctx ends.
func (s *Server) Start(ctx context.Context) error {
	ln, err := net.Listen("tcp", s.Addr)
	if err != nil {
		return fmt.Errorf("join API: %w", err)
	}
	return s.Serve(ctx, ln)
}

// routes is the API with CORS, and the pages beside it.
func (s *Server) routes() http.Handler {
	api := withCORS(s.Handler, s.AllowedOrigins)
	if len(s.Pages) == 0 {
		return api
	}
	mux := http.NewServeMux()
	mux.Handle("/", api)
	for prefix, h := range s.Pages {
		mux.Handle(prefix, h)
	}
	return mux
}

// Serve serves on ln until ctx ends, then lets requests in flight finish
// (up to shutdownTimeout; destination requests waiting for a map answer
// room_not_ready at once) and closes the handler's databases.
func (s *Server) Serve(ctx context.Context, ln net.Listener) error {
	if s.TLSCertFile != "" {
		certs, err := newCertReloader(s.TLSCertFile, s.TLSKeyFile, s.Log)
		if err != nil {
			_ = ln.Close()
			return err
		}
		ln = tls.NewListener(ln, certs.tlsConfig())
	}
	srv := &http.Server{
		Handler:           s.routes(),
		ReadHeaderTimeout: readHeaderTimeout,
		ReadTimeout:       readTimeout,
		WriteTimeout:      writeTimeout,
		IdleTimeout:       idleTimeout,
		MaxHeaderBytes:    maxHeaderBytes,
	}
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()
	s.Log.Info("Serving the join API", "address", ln.Addr().String(), "tls", s.TLSCertFile != "", "allowedOrigins", s.AllowedOrigins)

	var err error
	select {
	case err = <-served: // the listener failed: Serve only ends by itself on an error
	case <-ctx.Done():
		s.Handler.stopWaiting() // waits for maps to start end now, not at their timeout
		shutdownCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), shutdownTimeout)
		defer cancel()
		err = srv.Shutdown(shutdownCtx)
		if serveErr := <-served; !errors.Is(serveErr, http.ErrServerClosed) {
			err = errors.Join(err, serveErr)
		}
	}
	s.Log.Info("Stopped the join API")
	return errors.Join(err, s.Handler.Close())
}
