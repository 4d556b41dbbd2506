package main

import (
	"github.com/roomkeeper/roomkeeper/internal/joinflags"
	"github.com/roomkeeper/roomkeeper/internal/podenv"
	"github.com/roomkeeper/roomkeeper/internal/store"
	"github.com/roomkeeper/roomkeeper/internal/wait"

	"context"
	"database/sql"
	"errors"
	"flag"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/tools/clientcmd"
	ctrlclient "sigs.k8s.io/controller-runtime/pkg/client"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"

	gamev1 "github.com/roomkeeper/roomkeeper/api/v1"
)

// A soak (docs/operations.md, "Soak and chaos") runs rooms with players for
// a while against a running cluster, breaks things on purpose with
// --chaos, and then checks from Postgres and the API that nothing
// acknowledged was lost or doubled.

// soakConfig is what `roomload soak` was asked to do.
type soakConfig struct {
	rooms, bots int
	duration    time.Duration
	rate        float64 // actions per second over all bots
	chaos       bool
	chaosMin    time.Duration
	chaosMax    time.Duration
	tickRate    int // the rooms' tickRate; 0 is the GameRoom's default
	// heartbeatTimeout is the rooms' restartPolicy.heartbeatTimeout; 0 is
	// the GameRoom's default.
	heartbeatTimeout time.Duration
	kubeconfig       string
	databaseURL      string
	pgDir            string
	image            string
	prefix           string
	seed             uint64
	keep             bool
	api              joinflags.Flags
}

func runSoak(ctx context.Context, args []string) error {
	cfg, err := parseSoak(args)
	if err != nil {
		return err
	}
	s, err := newSoak(ctx, cfg)
	if err != nil {
		return err
	}
	defer s.close()
	report := s.run(ctx)
	report.print(os.Stdout)
	if n := len(report.violations); n > 0 {
		return fmt.Errorf("%d invariant violations", n)
	}
	return nil
}

func parseSoak(args []string) (soakConfig, error) {
	fs := flag.NewFlagSet("soak", flag.ContinueOnError)
	var c soakConfig
	c.api.Register(fs)
	fs.IntVar(&c.rooms, "rooms", 3, "GameRooms to create (two maps each, portals between them)")
	fs.IntVar(&c.bots, "bots", 12, "players, spread over the rooms")
	fs.DurationVar(&c.duration, "duration", time.Minute, "how long the players play")
	fs.Float64Var(&c.rate, "rate", 20, "target actions per second over all players: attacks, pickups, drops, equips and unequips, portal entries (not movement)")
	fs.BoolVar(&c.chaos, "chaos", false, "inject faults: kill -9 a room server, delete a map pod, restart Postgres, restart the manager, flood a cellar with guests' parties")
	fs.DurationVar(&c.chaosMin, "chaos-min", 15*time.Second, "least time from one fault's recovery to the next fault")
	fs.DurationVar(&c.chaosMax, "chaos-max", 45*time.Second, "most time from one fault's recovery to the next fault")
	fs.IntVar(&c.tickRate, "tick-rate", 0, "the rooms' tickRate in Hz (0: the GameRoom's default, 30); a lower one trades the players' input latency for CPU a map")
	fs.DurationVar(&c.heartbeatTimeout, "heartbeat-timeout", 0, "the rooms' restartPolicy.heartbeatTimeout (0: the GameRoom's default, 15s); the pods write a heartbeat every third of it, so a longer one trades the time to notice a silent map for API-server CPU a map")
	fs.StringVar(&c.kubeconfig, "kubeconfig", defaultKubeconfig(), "the cluster's kubeconfig")
	fs.StringVar(&c.databaseURL, "database-url", "", "the rooms' Postgres (default: Secret roomkeeper-db key dsn in --namespace)")
	fs.StringVar(&c.pgDir, "postgres-dir", ".dev/pg", "the dev Postgres' directory, for the Postgres restart fault (hack/postgres.sh restart)")
	fs.StringVar(&c.image, "image", "roomkeeper/roomserver:dev", "the rooms' room-server image (make cluster: roomkeeper/roomserver:<make images' tag>)")
	fs.StringVar(&c.prefix, "prefix", "soak", "name prefix of the soak's rooms and players' auth keys")
	fs.Uint64Var(&c.seed, "seed", 1, "seed of the players' and the chaos' choices")
	fs.BoolVar(&c.keep, "keep", false, "keep the rooms at the end")
	if err := fs.Parse(args); err != nil {
		return c, err
	}
	if c.api.URL == "" {
		c.api.URL = joinflags.Default()
	}
	switch {
	case c.rooms < 1 || c.bots < 1 || c.duration <= 0 || c.rate <= 0:
		return c, errors.New("--rooms, --bots, --duration and --rate must be positive")
	case c.tickRate < 0 || c.tickRate > math.MaxInt32:
		return c, errors.New("--tick-rate must be 0 (the default) or a rate in Hz")
	case c.heartbeatTimeout < 0:
		return c, errors.New("--heartbeat-timeout must be 0 (the default) or positive")
	case c.chaosMin <= 0 || c.chaosMax < c.chaosMin:
		return c, errors.New("--chaos-min must be positive and at most --chaos-max")
	}
	return c, nil
}

// defaultKubeconfig is $KUBECONFIG, else make dev's.
func defaultKubeconfig() string {
	if k := os.Getenv("KUBECONFIG"); k != "" {
		return k
	}
	return filepath.Join(".dev", "kubeconfig")
}

// soak is one run: its cluster, its rooms and players, what happened.
type soak struct {
	cfg soakConfig
	k8s ctrlclient.Client
	// watched is what the soak's watches show of the pods and MapInstances:
	// it reads them there, not from the API server, because it polls them
	// every 100 ms while it waits, and a starved API server took seconds
	// for each list and failed some (docs/benchmarks.md, "Density").
	watched     ctrlclient.Reader
	stopWatches context.CancelFunc
	rng         *rand.Rand
	db          *sql.DB
	// startSeq is the highest critical_events seq before the soak: the
	// checks read the events after it.
	startSeq int64
	rooms    []*gamev1.GameRoom
	bots     []*soakBot
	ledger
	faults []fault
}

func newSoak(ctx context.Context, cfg soakConfig) (*soak, error) {
	ctrllog.SetLogger(logr.Discard()) // the client's own logging is not the soak's output
	rest, err := clientcmd.BuildConfigFromFlags("", cfg.kubeconfig)
	if err != nil {
		return nil, fmt.Errorf("kubeconfig %s: %w", cfg.kubeconfig, err)
	}
	scheme := runtime.NewScheme()
	utilruntime.Must(clientgoscheme.AddToScheme(scheme))
	utilruntime.Must(gamev1.AddToScheme(scheme))
	k8s, err := ctrlclient.New(rest, ctrlclient.Options{Scheme: scheme})
	if err != nil {
		return nil, err
	}
	if cfg.databaseURL == "" {
		secret := &corev1.Secret{}
		if err := k8s.Get(ctx, ctrlclient.ObjectKey{Namespace: cfg.api.Namespace, Name: "roomkeeper-db"}, secret); err != nil {
			return nil, fmt.Errorf("reading the database Secret (or pass --database-url): %w", err)
		}
		cfg.databaseURL = podenv.DatabaseURL(string(secret.Data["dsn"]))
	}
	db, err := sql.Open("postgres", cfg.databaseURL)
	if err != nil {
		return nil, err
	}
	// A database no room server has used yet has no tables: the soak
	// makes them as the first room server would (the same migrations).
	if err := store.Migrate(ctx, db); err != nil {
		_ = db.Close()
		return nil, fmt.Errorf("migrating the rooms' database (--database-url): %w", err)
	}
	startSeq, err := lastSeq(ctx, db)
	if err != nil {
		_ = db.Close()
		return nil, fmt.Errorf("reading the rooms' database (--database-url): %w", err)
	}
	watched, stopWatches, err := watch(ctx, rest, scheme)
	if err != nil {
		_ = db.Close()
		return nil, err
	}
	return &soak{cfg: cfg, k8s: k8s, watched: watched, stopWatches: stopWatches, db: db, startSeq: startSeq,
		rng: rand.New(rand.NewPCG(cfg.seed, 16))}, nil
}

// close stops the soak's watches and closes its database.
func (s *soak) close() {
	s.stopWatches()
	_ = s.db.Close()
}

// run creates the rooms, plays, breaks things, and checks.
func (s *soak) run(ctx context.Context) *soakReport {
	r := &soakReport{cfg: s.cfg}
	defer s.cleanup(r)
	if err := s.createRooms(ctx); err != nil {
		r.violate("creating the rooms: %v", err)
		return r
	}
	if err := s.waitReady(ctx, 3*time.Minute); err != nil {
		r.violate("the rooms never became Ready: %v", err)
		return r
	}
	progress("the rooms are Ready: %d players join and play for %s", s.cfg.bots, s.cfg.duration)
	playCtx, stop := context.WithTimeout(ctx, s.cfg.duration)
	defer stop()
	start := time.Now()
	var players sync.WaitGroup
	for i := range s.cfg.bots {
		bot := s.newBot(i)
		s.bots = append(s.bots, bot)
		players.Go(func() { bot.play(playCtx, s) })
	}
	if s.cfg.chaos {
		s.chaosLoop(ctx, playCtx, r)
	}
	players.Wait()
	// The players play for the duration; the chaos loop may wait past it
	// for the last fault's recovery, which is no playing time.
	r.played = min(time.Since(start), s.cfg.duration)
	progress("play is over: checking the invariants")
	s.finish(ctx, r)
	return r
}

// progress tells on stderr, timed, where a long soak is, so that its
// phases can be matched with the cluster's logs; the summary goes to
// stdout at the end.
func progress(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "soak %s: %s\n", time.Now().UTC().Format(time.TimeOnly), fmt.Sprintf(format, args...))
}

// soakMaxRestarts is the soak rooms' restartPolicy.maxRestarts.
const soakMaxRestarts = 20

// roomName is the name of soak room i.
func (s *soak) roomName(i int) string { return fmt.Sprintf("%s-%d", s.cfg.prefix, i) }

// createRooms makes the soak's GameRooms: a town and a forest each, loot
// and monsters on both, a portal each way, and behind a second portal in
// the town an instanced cellar (the party flood's target), on the sample's
// database.
func (s *soak) createRooms(ctx context.Context) error {
	for i := range s.cfg.rooms {
		room := &gamev1.GameRoom{
			ObjectMeta: metav1.ObjectMeta{Namespace: s.cfg.api.Namespace, Name: s.roomName(i)},
			Spec: gamev1.GameRoomSpec{
				Image: s.cfg.image, DefaultMap: "town",
				Maps: []gamev1.GameMap{
					{Name: "town", Config: gamev1.MapConfig{Seed: int64(11 + i), Width: 256, Height: 256, LootDensity: 1, NPCDensity: 0.5,
						Portals: []gamev1.Portal{{To: "forest", X: 200, Y: 128}, {To: cellarMap, X: 128, Y: 200}}}},
					{Name: "forest", Config: gamev1.MapConfig{Seed: int64(101 + i), Width: 256, Height: 256, LootDensity: 1, NPCDensity: 0.5,
						Portals: []gamev1.Portal{{To: "town", X: 56, Y: 128}}}},
					{Name: cellarMap, Instanced: true, Config: gamev1.MapConfig{Seed: int64(201 + i), Width: 128, Height: 128,
						Portals: []gamev1.Portal{{To: "town", X: 64, Y: 100}}}},
				},
				RoomSettings: gamev1.RoomSettings{
					TickRate: int32(s.cfg.tickRate),
					Database: &gamev1.DatabaseRef{SecretRef: gamev1.SecretKeyRef{Name: "roomkeeper-db", Key: "dsn"}},
					// The soak's kills and deletions are no crash loop: a
					// map hit a few times in a minute is not quarantined.
					RestartPolicy: gamev1.RestartPolicy{MaxRestarts: soakMaxRestarts, HeartbeatTimeout: optionalDuration(s.cfg.heartbeatTimeout)},
				},
			},
		}
		if err := s.k8s.Create(ctx, room); err != nil {
			return err
		}
		s.rooms = append(s.rooms, room)
	}
	return nil
}

// optionalDuration is d for an optional field: nil for 0.
func optionalDuration(d time.Duration) *metav1.Duration {
	if d == 0 {
		return nil
	}
	return &metav1.Duration{Duration: d}
}

// instances are the soak's MapInstance names, but the party copies of
// its cellars.
func (s *soak) instances() []string {
	var names []string
	for _, room := range s.rooms {
		for _, m := range room.Spec.Maps {
			if !m.Instanced {
				names = append(names, gamev1.MapInstanceName(room.Name, m.Name))
			}
		}
	}
	return names
}

// maps reads the MapInstances of the soak's namespace, by name, in one
// list, not a request a map: a hundred reads one after the other took
// minutes when the API server was starved, and the soak reads its maps
// before every fault and through every recovery.
func (s *soak) maps(ctx context.Context) (map[string]*gamev1.MapInstance, error) {
	list := &gamev1.MapInstanceList{}
	if err := s.watched.List(ctx, list, ctrlclient.InNamespace(s.cfg.api.Namespace)); err != nil {
		return nil, err
	}
	byName := make(map[string]*gamev1.MapInstance, len(list.Items))
	for i := range list.Items {
		byName[list.Items[i].Name] = &list.Items[i]
	}
	return byName, nil
}

// notReady names the soak's maps that are not Ready with an endpoint,
// each with its phase and last failure.
func (s *soak) notReady(ctx context.Context) []string {
	byName, err := s.maps(ctx)
	if err != nil {
		return []string{fmt.Sprintf("listing the MapInstances: %v", err)}
	}
	var out []string
	for _, name := range s.instances() {
		mi, ok := byName[name]
		switch {
		case !ok:
			out = append(out, fmt.Sprintf("%s (not found)", name))
		case !meta.IsStatusConditionTrue(mi.Status.Conditions, gamev1.ConditionReady) || mi.Status.Endpoint == "":
			why := string(mi.Status.Phase)
			if f := mi.Status.LastFailure; f != nil {
				why += ", last failure " + f.Reason + ": " + f.Message
			}
			out = append(out, fmt.Sprintf("%s (%s)", name, why))
		}
	}
	return out
}

// waitReady polls until every soak map is Ready, or fails after limit.
func (s *soak) waitReady(ctx context.Context, limit time.Duration) error {
	return poll(ctx, limit, func() error {
		if waiting := s.notReady(ctx); len(waiting) > 0 {
			return fmt.Errorf("not Ready: %s", strings.Join(waiting, ", "))
		}
		return nil
	})
}

// poll runs check until it returns nil, ctx ends or limit passes; it
// returns check's last error then.
func poll(ctx context.Context, limit time.Duration, check func() error) error {
	ctx, cancel := context.WithTimeout(ctx, limit)
	defer cancel()
	return wait.Until(ctx, check)
}

// cleanup deletes the rooms (unless --keep) and checks nothing of them is
// left behind.
func (s *soak) cleanup(r *soakReport) {
	if s.cfg.keep || len(s.rooms) == 0 {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	for _, room := range s.rooms {
		if err := s.k8s.Delete(ctx, room); err != nil {
			r.violate("deleting room %s: %v", room.Name, err)
		}
	}
	err := poll(ctx, 90*time.Second, func() error {
		pods := &corev1.PodList{}
		if err := s.watched.List(ctx, pods, ctrlclient.InNamespace(s.cfg.api.Namespace)); err != nil {
			return err
		}
		var left []string
		for _, p := range pods.Items {
			if strings.HasPrefix(p.Labels[gamev1.LabelRoom], s.cfg.prefix+"-") {
				left = append(left, p.Name)
			}
		}
		if len(left) > 0 {
			return fmt.Errorf("pods left behind: %s", strings.Join(left, ", "))
		}
		return nil
	})
	if err != nil {
		r.violate("%v", err)
	}
}
