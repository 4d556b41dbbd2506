package roomserver

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gorilla/websocket"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/roomkeeper/roomkeeper/internal/content"
	"github.com/roomkeeper/roomkeeper/internal/fanout"
	"github.com/roomkeeper/roomkeeper/internal/mapgen"
	"github.com/roomkeeper/roomkeeper/internal/podenv"
	"github.com/roomkeeper/roomkeeper/internal/protocol"
	"github.com/roomkeeper/roomkeeper/internal/sim"
	"github.com/roomkeeper/roomkeeper/internal/store"
	"github.com/roomkeeper/roomkeeper/internal/token"
	"github.com/roomkeeper/roomkeeper/internal/wait"
)

// Deps are the server's collaborators.
type Deps struct {
	Keys   token.KeySource
	Replay token.ReplayGuard
	// Store persists characters, items and leases; nil runs the map
	// without a database, for guests only.
	Store store.Store
	Log   *slog.Logger
	Clock func() time.Time
	// Directory says where portals lead; nil means they lead nowhere.
	Directory Directory
}

// Server is one map's room server.
type Server struct {
	cfg      Config
	deps     Deps
	static   *mapgen.World
	loop     *sim.Loop
	verifier *token.Verifier
	metrics  *metrics
	upgrader websocket.Upgrader

	// stream is what the clients are sent: the newest frame, held until
	// the next (writers take their own hold), and the recent events.
	stream *fanout.Stream
	// content is the map's content pack: the kinds of its generated loot
	// and its key.
	content content.Pack
	// contentHash names the pack's definitions (content.Definitions), in
	// the welcome: a client that has them by that hash asks no more.
	contentHash string
	draining    atomic.Bool
	// restored is set once the loot on the ground is known (at once
	// without a database); until then the map is not ready, and waiting
	// says why when the database is what it waits for.
	restored atomic.Bool
	waiting  atomic.Pointer[string]
	// db is how the map uses the database; nil without one (persistence.go).
	db *persistence
	// world checkpoints and restores the map's world (world.go), and
	// recoverer keeps its critical items (recovery.go); nil without a
	// database (recoverer also without critical items).
	world     *worldKeeper
	recoverer *recoverer
	// completer holds the transfers of arrived players to complete: one
	// goroutine at a time completes all that gathered in one statement
	// (completeTransfers), so a handover's fifty arrivals cost a few
	// statements, not a hundred, on the pod's few connections.
	completer drainQueue[string]
	// arrivals holds the players arriving by transfer, admitted in
	// batches (arrivals.go).
	arrivals drainQueue[arrivalRequest]
	// guestTickets spends guests' tickets in this pod's memory, so guests
	// join while the database is down (consumeTicket); nil without one.
	guestTickets token.ReplayGuard

	// unseated bounds the connections that have not said hello yet.
	unseated *unseatedLimit
	// work runs what requests and timers start off the reader and the
	// tick (background.go): Shutdown waits for it before the final
	// checkpoint, and the store is closed only after.
	work *workGroup
	// failureLog paces the logs of failed background work.
	failureLog rateLog
	// departures remember the transfers of players who left through a
	// portal, for a client that resumes before it got its message.
	departures departures

	mu       sync.Mutex
	sessions map[*session]struct{}
	seats    *seats
	// portalViews are the map's portals as welcome lists them.
	portalViews []protocol.PortalView
}

// New builds the server and its world; Run starts the simulation.
func New(cfg Config, deps Deps) (*Server, error) {
	if err := cfg.validate(); err != nil {
		return nil, fmt.Errorf("room server config: %w", err)
	}
	mapConfig, err := mapgen.ParseConfig(cfg.MapConfig)
	if err != nil {
		return nil, fmt.Errorf("map config: %w", err)
	}
	if cfg.SpawnPoints > 0 && cfg.SpawnPoints != mapConfig.SpawnPoints {
		mapConfig.SpawnPoints = cfg.SpawnPoints
		if cfg.MapConfig, err = json.Marshal(mapConfig); err != nil {
			return nil, fmt.Errorf("map config: %w", err)
		}
	}
	static, err := mapgen.Generate(mapConfig)
	if err != nil {
		return nil, fmt.Errorf("generating map: %w", err)
	}
	if mapConfig.PlayerSpeed > 0 {
		cfg.Sim.PlayerSpeed = float32(mapConfig.PlayerSpeed)
	}
	if _, builtIn := content.Named(mapConfig.Content); mapConfig.Content != "" && !builtIn && len(cfg.Sim.Content.Enemies) == 0 {
		return nil, fmt.Errorf("the map's content pack %q is no built-in pack, and none was given (the operator mounts a GameContent's revision, --content-file)", mapConfig.Content)
	}
	if deps.Clock == nil {
		deps.Clock = time.Now
	}
	if deps.Log == nil {
		deps.Log = slog.Default()
	}
	s := &Server{cfg: cfg, deps: deps, static: static, sessions: map[*session]struct{}{},
		unseated: newUnseatedLimit(cfg.MaxUnseated, cfg.MaxUnseatedPerAddress),
		verifier: token.NewVerifier(deps.Keys, deps.Clock),
		stream:   fanout.NewStream(cfg.FarRefreshEvery, cfg.CellSize, cfg.Hysteresis, uint64(deps.Clock().UnixMicro())),
		work:     newWorkGroup()}
	if s.cfg.marshal == nil {
		s.cfg.marshal = protocol.MarshalMessage
	}
	s.seats = newSeats(cfg.ResumeGrace, cfg.GuestResumeGrace, func(st *seat) { s.work.Go(func() { s.releaseSeat(st) }) })
	// Drops are named after the map and this process: a restarted map
	// numbers its NPCs and ticks from the start again.
	cfg.Sim.DropPrefix = cfg.Instance + "/drop/" + randomToken()[:8] + "-"
	if cfg.Sim.WakeCell > 0 {
		cfg.Sim.WakeCell = cfg.CellSize
	}
	world := sim.NewWorld(static, cfg.TickRate, cfg.Sim)
	s.content = world.Content()
	if err := s.content.Validate(); err != nil {
		return nil, fmt.Errorf("content pack %q: %w", s.content.Name, err)
	}
	s.contentHash = s.content.Definitions().Hash()
	for _, p := range world.Portals() {
		s.portalViews = append(s.portalViews, protocol.PortalView{Entity: p.Entity, To: p.To,
			X: float32(p.X), Y: float32(p.Y), Radius: float32(p.Radius)})
	}
	s.loop = sim.NewLoop(world, sim.LoopConfig{TickRate: cfg.TickRate, SnapshotRate: cfg.SnapshotRate, CellSize: cfg.CellSize, Hibernate: cfg.Hibernate},
		sim.Hooks{OnFrame: s.publish, Recycled: s.stream.Recycled, OnTick: func(d time.Duration) { s.metrics.tickSeconds.Observe(d.Seconds()) }})
	s.metrics = newMetrics(s.loop.Stats, cfg.MaxPlayers)
	if deps.Store == nil {
		world.SpawnLoot(spawnLoot(cfg.Instance, static, s.content))
		s.restored.Store(true)
	} else {
		worlds, ok := deps.Store.(worldStore)
		if !ok {
			return nil, errors.New("the store cannot keep the map's world")
		}
		s.db = newPersistence(s, deps.Store)
		s.world = newWorldKeeper(s, worlds)
		s.recoverer = s.newRecoverer()
		s.guestTickets = token.NewMemoryReplayGuard(deps.Clock)
	}
	s.upgrader = websocket.Upgrader{
		// Write buffers come from a pool while a message is written, not
		// one per connection for its lifetime: 16 KiB x 1,000 clients.
		ReadBufferSize: 4096, WriteBufferSize: 16384, WriteBufferPool: &sync.Pool{},
		Subprotocols: []string{protocol.Subprotocol},
		CheckOrigin:  originChecker(cfg.AllowedOrigins),
	}
	return s, nil
}

// Run steps the simulation until ctx ends or Shutdown is called. With a
// database it also restores the loot on the ground and runs the persister.
// Run returns once all of them have stopped.
func (s *Server) Run(ctx context.Context) {
	ctx, cancel := context.WithCancel(ctx)
	var workers sync.WaitGroup
	if s.db != nil {
		defer s.db.close() // after every worker
	}
	defer workers.Wait()
	defer cancel()
	workers.Go(func() {
		select {
		case <-ctx.Done():
			s.loop.Stop()
		case <-s.loop.Done():
		}
	})
	workers.Go(func() { s.refreshResumeTokens(ctx) })
	if s.db != nil {
		workers.Go(func() { s.restore(ctx, &workers) })
	}
	s.loop.Run()
}

// restore makes the map ready: the database's schema brought up to date
// and the world restored with the loot on its ground (world.go), each
// retried with backoff while the database is unreachable (a map starts
// while its database is away and waits, not Ready, instead of exiting: a
// crash would count toward quarantine). WaitingFor says meanwhile what it
// waits for. The database's background work (checkpoints, leases,
// critical-item recovery, the world's checkpoints) starts once the schema
// is there: it needs the tables. A handover's new pod is Ready before it
// has the world: the old pod hands it over once it is.
func (s *Server) restore(ctx context.Context, workers *sync.WaitGroup) {
	if m, ok := s.db.Store.(migrator); ok && !s.retryWaiting(ctx, "Migrating the database", m.Migrate) {
		return
	}
	s.db.run(ctx, workers)
	if s.recoverer != nil {
		workers.Go(func() { s.recoverer.run(ctx) })
	}
	workers.Go(func() { s.world.run(ctx, s.cfg.CheckpointInterval) })
	if s.world.awaiting {
		s.restored.Store(true)
	}
	if s.world.take(ctx) {
		s.restored.Store(true)
	}
}

// migrator is a store that brings its schema up to date (store.Postgres).
type migrator interface {
	Migrate(ctx context.Context) error
}

// retryWaiting is retry for what the map waits for before it is ready:
// the last failure is what WaitingFor says until fn succeeds.
func (s *Server) retryWaiting(ctx context.Context, what string, fn func(context.Context) error) bool {
	return s.retry(ctx, what, func() error {
		err := fn(ctx)
		if err != nil {
			msg := fmt.Sprintf("%s: %v", what, err)
			s.waiting.Store(&msg)
		} else {
			s.waiting.Store(nil)
		}
		return err
	})
}

// WaitingFor says what the map waits for before it is ready (its database,
// unreachable), or "" when it waits for nothing or is ready.
func (s *Server) WaitingFor() string {
	if s.restored.Load() {
		return ""
	}
	if w := s.waiting.Load(); w != nil {
		return *w
	}
	return ""
}

// retry runs fn until it succeeds, logging each failure as what and
// waiting with backoff between tries; false when ctx ended first.
func (s *Server) retry(ctx context.Context, what string, fn func() error) bool {
	for backoff := minBackoff; ; backoff = min(2*backoff, 5*time.Second) {
		err := fn()
		if err == nil {
			return true
		}
		s.deps.Log.Warn(what+" failed; retrying", "err", err)
		select {
		case <-ctx.Done():
			return false
		case <-time.After(backoff):
		}
	}
}

// Handler serves /ws, /healthz, /readyz and /metrics.
func (s *Server) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc(podenv.GamePath, s.serveWS)
	mux.Handle("/", s.OpsHandler())
	return mux
}

// GameHandler serves the WebSocket endpoint alone, at podenv.GamePath,
// for the game port; any other path is 404.
func (s *Server) GameHandler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc(podenv.GamePath, s.serveWS)
	return mux
}

// OpsHandler serves health and metrics, for the HTTP port.
func (s *Server) OpsHandler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("/healthz", s.healthz)
	mux.HandleFunc("/readyz", s.readyz)
	mux.HandleFunc(AdminPath, s.handleAdmin)
	mux.Handle("/metrics", promhttp.HandlerFor(s.metrics.registry, promhttp.HandlerOpts{}))
	return mux
}

// Stats reads the simulation's counters.
func (s *Server) Stats() sim.Stats { return s.loop.Stats() }

// MaxPlayers is how many players the map seats at once.
func (s *Server) MaxPlayers() int { return s.cfg.MaxPlayers }

// ActivePlayers counts the seated players who played (an input or a
// command, or joined) within Config.ActiveWindow: a connection kept open
// by automatic pongs alone is not a player keeping a map alive.
func (s *Server) ActivePlayers() int {
	since := s.deps.Clock().Add(-s.cfg.ActiveWindow).UnixNano()
	n := 0
	for _, st := range s.seats.all() {
		if st.played.Load() >= since {
			n++
		}
	}
	return n
}

// LastCheckpoint is the newest committed checkpoint, if any.
func (s *Server) LastCheckpoint() (Checkpoint, bool) {
	if s.db == nil {
		return Checkpoint{}, false
	}
	if c := s.db.checkpoints.last.Load(); c != nil {
		return *c, true
	}
	return Checkpoint{}, false
}

// MapHash is the hash of the static map clients must reproduce.
func (s *Server) MapHash() string { return s.static.Hash }

// healthz is alive while the tick loop keeps ticking.
func (s *Server) healthz(w http.ResponseWriter, _ *http.Request) {
	stats := s.loop.Stats()
	if age := s.deps.Clock().Sub(stats.LastTick); age > 2*time.Second {
		http.Error(w, fmt.Sprintf("tick loop stalled for %s", age.Round(time.Millisecond)), http.StatusServiceUnavailable)
		return
	}
	fmt.Fprintf(w, "ok tick=%d\n", stats.Tick)
}

// readyz admits players once the map is restored and while it is not draining.
func (s *Server) readyz(w http.ResponseWriter, r *http.Request) {
	switch {
	case s.draining.Load():
		http.Error(w, "draining", http.StatusServiceUnavailable)
	case !s.restored.Load():
		http.Error(w, strings.TrimSuffix("restoring the map from the database; "+s.WaitingFor(), "; "), http.StatusServiceUnavailable)
	default:
		s.healthz(w, r)
	}
}

// publish hands a new frame to every session without waiting for any.
func (s *Server) publish(sf *sim.Frame) {
	before := s.stream.Events.Last()
	s.stream.Publish(sf)
	last := s.stream.Events.Last()
	s.metrics.events.Add(float64(last - before))
	if s.db != nil && s.db.events != nil {
		s.db.events.addFrame(sf, last, last-before)
	}
	s.mu.Lock()
	for sess := range s.sessions {
		sess.notifyFrame()
	}
	s.mu.Unlock()
}

// addSession registers a new connection, unless the server is draining:
// Shutdown says goodbye to every session registered before it began.
func (s *Server) addSession(sess *session) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.draining.Load() {
		return false
	}
	s.sessions[sess] = struct{}{}
	return true
}

func (s *Server) removeSession(sess *session) {
	s.mu.Lock()
	delete(s.sessions, sess)
	s.mu.Unlock()
}

// releaseSeat removes a player whose resume grace ran out: its last state
// is saved and its authority lease released.
func (s *Server) releaseSeat(st *seat) {
	st.closeActions()
	var record sim.PlayerRecord
	var saved bool
	s.applyInWorld(func(w *sim.World) {
		record, saved = w.Record(st.player)
		w.RemovePlayer(st.player)
	})
	if lease := st.lease(); s.db != nil && lease.CharacterID != "" {
		s.db.checkpoints.release(record, saved, lease)
	}
}

// evict removes a player whose character is now authoritative elsewhere.
// Its state is not saved: the other map owns it now.
func (s *Server) evict(st *seat, why string) {
	s.unseat(st, func(sess *session) { sess.closeWith(string(protocol.CodeUnauthorized), why) })
}

// sendBackLater removes a player this map holds no lease for while it cannot
// say where the character is (its transfer could be neither completed nor
// undone, the database failing): the client is told to come back later,
// and joins again once the transfer has expired and freed the character.
func (s *Server) sendBackLater(st *seat, why string) {
	if s.seats.remove(st) {
		s.closeSentBack(st, why)
	}
}

// closeSentBack is sendBackLater for a seat already out of the table.
func (s *Server) closeSentBack(st *seat, why string) {
	s.closeUnseated(st, func(sess *session) { sess.closeToRetry(protocol.CodePersistenceUnavailable, why) })
}

// unseat removes st without saving it, closing its connection with
// closeSession.
func (s *Server) unseat(st *seat, closeSession func(*session)) {
	if s.seats.remove(st) {
		s.closeUnseated(st, closeSession)
	}
}

// closeUnseated closes the connection of st, taken out of the seat table,
// with closeSession, fails its actions and takes its player out of the
// world.
func (s *Server) closeUnseated(st *seat, closeSession func(*session)) {
	if st.session != nil {
		closeSession(st.session)
	}
	st.closeActions() // they fail: the lease is gone
	s.removePlayer(st.player)
}

// Shutdown stops admitting players, tells every client the server is going
// away and closes their connections, lets the critical actions and
// transfers in flight finish (or fail), writes the final checkpoint and
// stops the simulation, in that order: when it returns, nothing of the
// server uses the store any more, and it may be closed.
//
// ctx bounds it, and the final checkpoint is never left without time:
// the waits end shutdownReserve (at most half the time left) before ctx's
// deadline, and work still running then (a transfer waiting for its
// destination, say) is cancelled, as are the connections of clients that
// did not go. Whatever happens, the simulation is stopped on return, so
// Run returns too.
func (s *Server) Shutdown(ctx context.Context) error {
	defer s.loop.Stop()
	s.draining.Store(true)
	reserve := shutdownReserve
	if deadline, ok := ctx.Deadline(); ok {
		reserve = min(reserve, time.Until(deadline)/2)
	}
	waited := s.drain(ctx, s.sayGoodbye(), reserve)
	return errors.Join(waited, s.saveAll(ctx))
}

// shutdownReserve is the part of Shutdown's time kept for the final
// checkpoint: waiting for clients and work never eats into it.
const shutdownReserve = 5 * time.Second

// sayGoodbye tells every client the server is going away and closes its
// connection once what is queued for it is sent; it returns the sessions.
func (s *Server) sayGoodbye() []*session {
	s.mu.Lock()
	sessions := make([]*session, 0, len(s.sessions))
	for sess := range s.sessions {
		sessions = append(sessions, sess)
	}
	s.mu.Unlock()
	for _, sess := range sessions {
		sess.goAway(protocol.Event{Type: protocol.EventServerShutdown, Tick: s.loop.Stats().Tick})
	}
	return sessions
}

// drain waits for the sessions to end and the work in flight to finish,
// until reserve before ctx's deadline. Then what is left is cut short:
// connections closed, work cancelled and given half the reserve to
// unwind. No seat expires and no work starts after it.
func (s *Server) drain(ctx context.Context, sessions []*session, reserve time.Duration) error {
	waiting, cancel := wait.BeforeDeadline(ctx, reserve)
	defer cancel()
	err := waitSessions(waiting, sessions)
	if err != nil {
		for _, sess := range sessions {
			sess.kill()
		}
	}
	s.seats.stop()
	if err == nil {
		err = s.work.wait(waiting)
	}
	if err != nil {
		err = fmt.Errorf("clients and actions in flight outlasted the shutdown grace, cut short: %w", err)
		s.work.cancelWork()
		unwind, cancel := wait.BeforeDeadline(ctx, reserve/2)
		defer cancel()
		err = errors.Join(err, s.work.wait(unwind))
	}
	s.work.close()
	return err
}

// waitSessions waits for every session to end, or until ctx ends.
func waitSessions(ctx context.Context, sessions []*session) error {
	for _, sess := range sessions {
		select {
		case <-sess.done:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	return nil
}

// saveAll writes every player's state and releases their leases: the last
// thing a draining map does.
func (s *Server) saveAll(ctx context.Context) error {
	if s.db == nil {
		return nil
	}
	if err := errors.Join(s.world.save(ctx, true), s.db.checkpoints.finalFlush(ctx)); err != nil {
		return fmt.Errorf("final checkpoint: %w", err)
	}
	if s.db.events != nil {
		s.noteFailure(opEventLog, s.db.events.flush(ctx))
	}
	for _, st := range s.seats.all() {
		if lease := st.lease(); lease.CharacterID != "" {
			s.noteFailure(opReleaseLease, s.db.ReleaseLease(ctx, lease))
		}
	}
	return nil
}

func originChecker(allowed []string) func(*http.Request) bool {
	if len(allowed) == 0 {
		return nil // gorilla's default: same origin, or no Origin header
	}
	set := map[string]bool{}
	for _, o := range allowed {
		set[o] = true
	}
	return func(r *http.Request) bool {
		origin := r.Header.Get("Origin")
		return origin == "" || set["*"] || set[origin]
	}
}
