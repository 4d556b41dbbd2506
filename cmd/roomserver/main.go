// Command roomserver runs one map: the authoritative simulation and the
// WebSocket server players connect to. The operator starts it in a pod with
// the flags and environment of controllers/mapinstance_pod_builder.go; it also runs
// standalone for development.
package main

import (
	"cmp"
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/http/pprof"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"time"

	"k8s.io/apimachinery/pkg/types"
	ctrlconfig "sigs.k8s.io/controller-runtime/pkg/client/config"

	"github.com/roomkeeper/roomkeeper/internal/content"
	"github.com/roomkeeper/roomkeeper/internal/directory"
	"github.com/roomkeeper/roomkeeper/internal/heartbeat"
	"github.com/roomkeeper/roomkeeper/internal/podenv"
	"github.com/roomkeeper/roomkeeper/internal/roomserver"
	"github.com/roomkeeper/roomkeeper/internal/serverlog"
	"github.com/roomkeeper/roomkeeper/internal/store"
	"github.com/roomkeeper/roomkeeper/internal/timerslack"
	"github.com/roomkeeper/roomkeeper/internal/token"
	"github.com/roomkeeper/roomkeeper/internal/wait"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "roomserver:", err)
		os.Exit(1)
	}
}

// options are the command line and the environment, both named in
// internal/podenv, the contract with the operator's pod builder.
type options struct {
	cfg                roomserver.Config
	keyDir             string
	listen, httpListen string
	checkpoint         time.Duration
	tokenTTL           time.Duration
	origins            string
	shutdownGrace      time.Duration
	joinAPI            string
	contentFile        string
	destinations       string
	pprof              bool
	heartbeatInterval  time.Duration
	timerSlack         time.Duration
	// From the environment.
	namespace   string    // the pod's; empty standalone
	podUID      types.UID // the pod's; empty standalone
	databaseURL string    // empty runs without persistence
	// databaseMaxConns caps the pool (the room's maxConnectionsPerPod).
	databaseMaxConns int
	podIP            string
}

func parseFloat32(v string, to *float32) error {
	f, err := strconv.ParseFloat(v, 32)
	*to = float32(f)
	return err
}

// parseFlags reads the command line args and, through getenv, the
// environment. It is the only place either is read.
func parseFlags(args []string, getenv func(string) string) (options, error) {
	o := options{cfg: roomserver.DefaultConfig()}
	fs := flag.NewFlagSet("roomserver", flag.ContinueOnError)
	fs.StringVar(&o.cfg.Room, podenv.FlagRoom, "", "GameRoom name")
	fs.StringVar(&o.cfg.Map, podenv.FlagMap, "", "map name in the room")
	fs.StringVar(&o.cfg.Instance, podenv.FlagInstance, "", "MapInstance name (tickets name it)")
	fs.IntVar(&o.cfg.TickRate, podenv.FlagTickRate, o.cfg.TickRate, "simulation steps per second")
	fs.IntVar(&o.cfg.SnapshotRate, podenv.FlagSnapshotRate, o.cfg.SnapshotRate, "snapshots per second to each client")
	fs.IntVar(&o.cfg.MaxPlayers, podenv.FlagMaxPlayers, o.cfg.MaxPlayers, "players admitted")
	fs.DurationVar(&o.heartbeatInterval, podenv.FlagHeartbeatInterval, heartbeat.DefaultInterval, "how often the heartbeat is written into the MapInstance's status (a third of the room's restartPolicy.heartbeatTimeout)")
	fs.DurationVar(&o.checkpoint, podenv.FlagCheckpointInterval, 5*time.Second, "how often dirty state is saved (with a database)")
	fs.DurationVar(&o.tokenTTL, podenv.FlagTokenTTL, 10*time.Second, "lifetime of the transfer tokens this server mints")
	fs.StringVar(&o.keyDir, podenv.FlagKeyDir, "", "directory of the mounted token keys (current.kid, current.key, ...)")
	fs.StringVar(&o.listen, podenv.FlagListen, ":"+strconv.Itoa(podenv.GamePort), "game (WebSocket) address")
	fs.StringVar(&o.httpListen, podenv.FlagHTTPListen, ":"+strconv.Itoa(podenv.HTTPPort), "health and metrics address")
	fs.StringVar(&o.origins, podenv.FlagAllowedOrigins, "", "comma-separated browser origins allowed to connect (* for any)")
	fs.IntVar(&o.databaseMaxConns, podenv.FlagDatabaseMaxConnections, store.DefaultPodConnections, "connections this pod may open to its database, at most")
	fs.DurationVar(&o.shutdownGrace, podenv.FlagShutdownGrace, 20*time.Second,
		"time to hand the players over, or say goodbye to them, on SIGTERM (within the pod's grace period: the operator passes 45s of 60s)")
	fs.StringVar(&o.joinAPI, podenv.FlagJoinAPI, "", "URL of the manager's join API, for portal destinations (set by the operator)")
	fs.StringVar(&o.contentFile, podenv.FlagContentFile, "", "the content pack's JSON form (a GameContent's revision, mounted by the operator); unset, the built-in pack the map config names")
	fs.StringVar(&o.destinations, "destinations", "", "fixed portal destinations without a join API: map=instance@endpoint,...")
	fs.DurationVar(&o.cfg.ResumeGrace, "resume-grace", o.cfg.ResumeGrace, "how long a dropped player's seat is kept for a resume")
	fs.DurationVar(&o.cfg.GuestResumeGrace, "guest-resume-grace", o.cfg.GuestResumeGrace, "how long a dropped guest's seat is kept (at most --resume-grace)")
	fs.Func("spawn-points", "override the map config's spawnPoints (1 to 64): 1 starts every player in one spot, more spread them (benchmarks)", func(v string) error {
		n, err := strconv.ParseInt(v, 10, 32)
		o.cfg.SpawnPoints = int32(n)
		return err
	})
	fs.Func("cell-size", "area-of-interest cell, world units: a client sees the 3x3 cells around it", func(v string) error { return parseFloat32(v, &o.cfg.CellSize) })
	fs.Func("hysteresis", "how far past a cell border a client moves before its area of interest follows", func(v string) error { return parseFloat32(v, &o.cfg.Hysteresis) })
	fs.IntVar(&o.cfg.FarRefreshEvery, "far-refresh-every", o.cfg.FarRefreshEvery, "refresh entities more than a quarter cell (or the hysteresis, if larger) outside the client's cell on one frame in this many (1: every one)")
	fs.Func("input-window", "ticks a player's input backlog may stand before it is skipped (default: one second of ticks)", func(v string) error {
		n, err := strconv.ParseUint(v, 10, 64)
		o.cfg.Sim.InputWindow = n
		return err
	})
	fs.BoolVar(&o.cfg.Hibernate, "hibernate", o.cfg.Hibernate, "stop ticking while the map has no player, and catch its world up when one comes")
	fs.DurationVar(&o.cfg.HelloTimeout, "hello-timeout", o.cfg.HelloTimeout, "how long a new connection has to say hello")
	fs.IntVar(&o.cfg.MaxUnseated, "max-unseated", o.cfg.MaxUnseated, "connections that have not said hello yet, in all")
	fs.IntVar(&o.cfg.MaxUnseatedPerAddress, "max-unseated-per-address", o.cfg.MaxUnseatedPerAddress, "connections that have not said hello yet, per IPv4 address or IPv6 /64")
	fs.DurationVar(&o.timerSlack, "timer-slack", time.Millisecond, "how late the kernel may wake the server's timers and sleeps, to serve several wake-ups with one (0: the kernel's default, 50us)")
	fs.BoolVar(&o.pprof, "pprof", false, "serve Go profiles at "+pprofPath+" on the --http-listen address (never on the game address)")
	if err := fs.Parse(args); err != nil {
		return o, err
	}
	if fs.NArg() > 0 {
		return o, fmt.Errorf("unexpected arguments %q: flags take the form --name=value", fs.Args())
	}
	o.cfg.MapConfig = []byte(getenv(podenv.EnvMapConfig))
	if len(o.cfg.MapConfig) == 0 {
		return o, errors.New(podenv.EnvMapConfig + " (the map's MapConfig as JSON) is not set")
	}
	if o.timerSlack < 0 {
		return o, fmt.Errorf("--timer-slack %v: want 0 or more", o.timerSlack)
	}
	if o.heartbeatInterval < time.Second {
		return o, fmt.Errorf("--%s %v: want 1s or more", podenv.FlagHeartbeatInterval, o.heartbeatInterval)
	}
	if o.keyDir == "" {
		return o, errors.New("--" + podenv.FlagKeyDir + " is required")
	}
	if o.origins != "" {
		o.cfg.AllowedOrigins = strings.Split(o.origins, ",")
	}
	if o.contentFile != "" {
		var err error
		if o.cfg.Sim.Content, err = readPack(o.contentFile); err != nil {
			return o, err
		}
	}
	o.cfg.CheckpointInterval = o.checkpoint
	o.cfg.TokenTTL = o.tokenTTL
	if o.cfg.Pod = getenv(podenv.EnvPodName); o.cfg.Pod == "" {
		o.cfg.Pod, _ = os.Hostname()
	}
	o.namespace = getenv(podenv.EnvPodNamespace)
	o.podUID = types.UID(getenv(podenv.EnvPodUID))
	o.databaseURL = podenv.DatabaseURL(getenv(podenv.EnvDatabaseURL))
	o.podIP = getenv(podenv.EnvPodIP)
	return o, nil
}

// readPack reads and checks the content pack at path: a pod never serves
// a tick on a pack it would refuse.
func readPack(path string) (content.Pack, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return content.Pack{}, fmt.Errorf("--%s: %w", podenv.FlagContentFile, err)
	}
	p, err := content.Decode(data)
	if err != nil {
		return content.Pack{}, fmt.Errorf("--%s %s: %w", podenv.FlagContentFile, path, err)
	}
	return p, nil
}

func run() error {
	o, err := parseFlags(os.Args[1:], os.Getenv)
	if err != nil {
		return err
	}
	log := slog.New(slog.NewJSONHandler(os.Stderr, nil)).With("room", o.cfg.Room, "instance", o.cfg.Instance)
	if o.podIP != "" {
		log = log.With("podIP", o.podIP)
	}
	if err := timerslack.Apply(o.timerSlack); err != nil {
		log.Warn("Running with the kernel's timer slack", "err", err)
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()

	keys, err := token.LoadDir(o.keyDir)
	if err != nil {
		return fmt.Errorf("loading token keys: %w", err)
	}
	go keys.Watch(ctx, 2*time.Second, func(err error) { log.Error("Reloading token keys", "err", err) })

	deps, closeStore, err := dependencies(o.databaseURL, o.databaseMaxConns, keys, log)
	if err != nil {
		return err
	}
	defer closeStore()
	if deps.Directory, err = portalDirectory(o, keys); err != nil {
		return err
	}
	reporter := newReporter(o.namespace, o.cfg.Instance, log)
	o.cfg.TakesOver = takingOver(ctx, reporter, o.cfg.Pod, log)
	srv, err := roomserver.New(o.cfg, deps)
	if err != nil {
		return err
	}
	game, err := listen(o.listen, srv.GameHandler())
	if err != nil {
		return err
	}
	ops, err := listen(o.httpListen, opsHandler(srv.OpsHandler(), o.pprof))
	if err != nil {
		return err
	}
	simDone := make(chan struct{})
	go func() { srv.Run(context.Background()); close(simDone) }()
	startHeartbeat(ctx, reporter, srv, heartbeat.Pod{Name: o.cfg.Pod, UID: o.podUID}, o.heartbeatInterval, log)
	log.Info(serverlog.ServingMessage, "game", game.addr, "http", ops.addr, "mapHash", srv.MapHash(), "pprof", o.pprof)

	<-ctx.Done()
	log.Info("Shutting down")
	shutdownCtx, cancel := context.WithTimeout(context.Background(), o.shutdownGrace)
	defer cancel()
	handOver(shutdownCtx, srv, reporter, o.cfg.Pod, log)
	// Draining first turns new WebSocket requests away, then the listener
	// closes; hijacked connections are not the HTTP server's to close.
	err = srv.Shutdown(shutdownCtx)
	if err != nil {
		log.Error("Shutdown cut short", "err", err)
	}
	<-simDone // Shutdown stops the simulation whatever happened
	closeListener(shutdownCtx, game, "game", log)
	closeListener(shutdownCtx, ops, "http", log)
	return err
}

// closeListener shuts an HTTP listener down; a failure is logged, since
// the process exits anyway.
func closeListener(ctx context.Context, srv server, name string, log *slog.Logger) {
	if err := srv.Shutdown(ctx); err != nil {
		log.Warn("Closing a listener", "listener", name, "err", err)
	}
}

// newReporter is the reporter into the pod's MapInstance when the server
// runs in a cluster (the pod's namespace is set and a cluster config is
// at hand); standalone, nil.
func newReporter(namespace, instance string, log *slog.Logger) *heartbeat.Reporter {
	if namespace == "" {
		log.Info("No POD_NAMESPACE: not reporting heartbeats (standalone)")
		return nil
	}
	cfg, err := ctrlconfig.GetConfig()
	if err != nil {
		log.Error("No cluster config: the operator will count missed heartbeats as failures", "err", err)
		return nil
	}
	reporter, err := heartbeat.New(cfg, namespace, instance, time.Now)
	if err != nil {
		log.Error("Heartbeat client", "err", err)
		return nil
	}
	return reporter
}

// takingOver reports whether the pod starts to take its map over by
// handover, as its MapInstance says: it then waits for the old pod's
// world instead of claiming the last checkpoint at once. When the
// MapInstance cannot be asked the pod claims the world at once: the old
// pod's last write is then refused (fenced), and a handover keeps the
// players but not the world's last few seconds.
func takingOver(ctx context.Context, reporter *heartbeat.Reporter, pod string, log *slog.Logger) bool {
	if reporter == nil {
		return false
	}
	ctx, cancel := context.WithTimeout(ctx, takeOverAsk)
	defer cancel()
	h, err := reporter.Handover(ctx, heartbeat.Report{}, pod) // the first heartbeat: no player, no tick yet
	if err != nil {
		log.Warn("Could not ask the MapInstance whether this pod takes a handover: claiming the world at once", "err", err)
	}
	return h.Successor
}

// takeOverAsk bounds the question at start.
const takeOverAsk = 5 * time.Second

// startHeartbeat reports into the pod's MapInstance (nothing without a
// reporter). A pod waiting for a handed-over world takes the last
// checkpoint once the MapInstance says no handover to it goes on (its old
// pod died before it handed the world over): the heartbeat's answer says
// so, so a longer interval makes that wait longer too.
func startHeartbeat(ctx context.Context, reporter *heartbeat.Reporter, srv *roomserver.Server, pod heartbeat.Pod, every time.Duration, log *slog.Logger) {
	if reporter == nil {
		return
	}
	onBeat := func(h heartbeat.Handover) {
		if !h.Successor {
			srv.AdoptWorld()
		}
	}
	go reporter.Run(ctx, every, func() heartbeat.Report { return report(srv) }, pod, onBeat, func(err error) { log.Warn("Heartbeat failed", "err", err) })
}

// report is what a heartbeat says of srv now.
func report(srv *roomserver.Server) heartbeat.Report {
	stats := srv.Stats()
	r := heartbeat.Report{Seats: srv.MaxPlayers(), Players: stats.Players, ActivePlayers: srv.ActivePlayers(), Tick: stats.Tick, WaitingFor: srv.WaitingFor()}
	if c, ok := srv.LastCheckpoint(); ok {
		r.CheckpointRevision, r.CheckpointTime = c.Revision, c.Time
	}
	if w, ok := srv.WorldStatus(); ok {
		r.World = &heartbeat.World{Revision: w.Revision, Tick: int64(w.Tick), Time: w.Time,
			RoomsCleared: w.RoomsCleared, BossPhase: w.BossPhase, BossHP: w.BossHP, QuestPhases: w.QuestPhases, Error: w.Error}
	}
	return r
}

// handOver hands the players over to the pod replacing this one, when the
// operator replaces it by handover: the MapInstance's status names that
// pod's endpoint, at once when the pod was outdated, once the new pod is
// Ready when this one was deleted by someone else. The wait leaves
// handoverReserve of ctx for the handover itself, and the handover leaves
// shutdownReserve for Shutdown; without a target the players are drained
// (they resume on the next pod).
func handOver(ctx context.Context, srv *roomserver.Server, reporter *heartbeat.Reporter, pod string, log *slog.Logger) {
	if reporter == nil {
		return
	}
	awaiting, cancel := wait.BeforeDeadline(ctx, handoverReserve)
	defer cancel()
	target, err := reporter.AwaitHandover(awaiting, func() heartbeat.Report { return report(srv) }, pod, handoverNotice, handoverPoll)
	switch {
	case target.Endpoint != "":
		// The questions to the successor and the map's endpoint come out
		// of the wait, never out of handoverReserve: a successor Ready
		// late (a drain on a busy node) still leaves the handover its
		// whole time to commit.
		awaitSuccessor(awaiting, srv, target, log)
		handover, cancel := wait.BeforeDeadline(ctx, shutdownReserve)
		defer cancel()
		srv.HandOver(handover, target.Endpoint)
	case err != nil:
		log.Warn("No handover target: draining the players instead", "err", err)
	}
}

// awaitSuccessor waits, while this pod serves on, until the pod taking
// over answers at the endpoint the players go to and the map's own
// endpoint leads there too, or ctx ends.
func awaitSuccessor(ctx context.Context, srv *roomserver.Server, target heartbeat.Handover, log *slog.Logger) {
	start := time.Now()
	if err := srv.AwaitSuccessor(ctx, target.Endpoint, target.MapEndpoint); err != nil {
		log.Warn("Handing the players over without the successor's answer", "endpoint", target.Endpoint, "err", err)
		return
	}
	log.Info("The successor answers where the players go", "endpoint", target.Endpoint, "map", target.MapEndpoint,
		"seconds", time.Since(start).Seconds())
}

// dependencies opens the database at dsn (ROOMKEEPER_DATABASE_URL)
// without connecting: the server migrates it and restores the map once it
// is reachable, not Ready until then (a database away at start is waited
// for, not a crash). Without one it runs for guests only with in-memory
// one-time tickets.
func dependencies(dsn string, maxConns int, keys token.KeySource, log *slog.Logger) (roomserver.Deps, func(), error) {
	deps := roomserver.Deps{Keys: keys, Log: log}
	if dsn == "" {
		log.Warn("No ROOMKEEPER_DATABASE_URL: nothing is persisted, play as guests only")
		deps.Replay = token.NewMemoryReplayGuard(time.Now)
		return deps, func() {}, nil
	}
	db, err := store.OpenLazy(dsn, maxConns)
	if err != nil {
		return deps, nil, fmt.Errorf("opening the database: %w", err)
	}
	deps.Store, deps.Replay = db, store.NewReplayGuard(db)
	return deps, func() {
		if err := db.Close(); err != nil {
			log.Warn("Closing the database", "err", err)
		}
	}, nil
}

// portalDirectory is where portals lead: the join API in a cluster, a
// fixed list standalone, or nowhere.
func portalDirectory(o options, keys token.KeySource) (roomserver.Directory, error) {
	switch {
	case o.joinAPI != "" && o.destinations != "":
		return nil, errors.New("--join-api and --destinations exclude each other")
	case o.joinAPI != "":
		namespace := cmp.Or(o.namespace, "default")
		return roomserver.JoinAPIDirectory(directory.New(o.joinAPI, namespace, o.cfg.Room, o.cfg.Instance, keys, nil)), nil
	case o.destinations != "":
		return roomserver.ParseStaticDirectory(o.destinations)
	}
	return nil, nil
}

// pprofPath is where --pprof serves net/http/pprof's index and profiles.
const pprofPath = "/debug/pprof/"

// A pod that is told to stop waits for its handover (handOver) as follows.
const (
	// handoverNotice is how long the operator may take to start the pod
	// taking over from one deleted by someone else. A node drain may evict
	// the manager with this pod: its successor starts elsewhere (on a node
	// just uncordoned, maybe), syncs its caches and takes the lease (given
	// up at once) before it can, which took 10 s and more on the busy
	// two-core cluster of test/cluster (a CI run's drain lost its players
	// to a 10 s notice). The pod serves on meanwhile; only its stop waits.
	handoverNotice = 20 * time.Second
	// handoverPoll is how often the MapInstance is asked meanwhile.
	handoverPoll = 500 * time.Millisecond
	// handoverReserve is the part of the shutdown grace kept for handing
	// the players over, or draining them.
	handoverReserve = 5 * time.Second
	// shutdownReserve is the part of that kept, after the handover, for
	// Server.Shutdown: goodbyes, actions in flight, the final checkpoint.
	// A handover commits every player in one transaction: the rest is
	// plenty for it.
	shutdownReserve = 2 * time.Second
)

// opsHandler is the health, readiness and metrics listener's handler and,
// with withPprof, Go's profiles under pprofPath. Profiles reveal the
// process and cost CPU while taken: they are off by default and never on
// the game address, which players reach.
func opsHandler(ops http.Handler, withPprof bool) http.Handler {
	if !withPprof {
		return ops
	}
	mux := http.NewServeMux()
	mux.Handle("/", ops)
	mux.HandleFunc(pprofPath, pprof.Index) // also serves the named profiles: heap, goroutine, ...
	mux.HandleFunc(pprofPath+"cmdline", pprof.Cmdline)
	mux.HandleFunc(pprofPath+"profile", pprof.Profile)
	mux.HandleFunc(pprofPath+"symbol", pprof.Symbol)
	mux.HandleFunc(pprofPath+"trace", pprof.Trace)
	return mux
}

// server is an HTTP server and the address it listens on (which differs
// from the flag's when that names port 0).
type server struct {
	*http.Server
	addr string
}

// listen serves h on addr in the background.
func listen(addr string, h http.Handler) (server, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return server{}, err
	}
	hs := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = hs.Serve(ln) }()
	return server{hs, ln.Addr().String()}, nil
}
