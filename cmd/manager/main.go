// Command manager runs the Roomkeeper operator: the GameRoom and MapInstance
// controllers, and the join API.
package main

import (
	"flag"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/runtime"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/healthz"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	gamev1 "github.com/roomkeeper/roomkeeper/api/v1"
	"github.com/roomkeeper/roomkeeper/controllers"
	"github.com/roomkeeper/roomkeeper/internal/adminapi"
	"github.com/roomkeeper/roomkeeper/internal/joinapi"
	"github.com/roomkeeper/roomkeeper/internal/kubewatch"
	"github.com/roomkeeper/roomkeeper/internal/retention"
	"github.com/roomkeeper/roomkeeper/web"
)

func main() {
	kubewatch.ListThenWatch()
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "manager:", err)
		os.Exit(1)
	}
}

// defaultJoinAPIURL is where map pods reach the join API when the manager
// is installed with `make deploy`: the Service join-api of
// config/manager, under config/default's prefix and namespace.
const defaultJoinAPIURL = "http://roomkeeper-join-api.roomkeeper-system.svc:8090"

func run() error {
	var metricsAddr, probeAddr, pprofAddr, joinURL, hostPorts, origins, adminAddr string
	var join joinapi.Config
	var leaderElect, webClient bool
	var roomWorkers, mapWorkers, portsPerNamespace int
	var pruneEvery time.Duration
	flag.StringVar(&metricsAddr, "metrics-bind-address", ":8080", "Address of the Prometheus metrics endpoint; 0 disables it.")
	flag.StringVar(&probeAddr, "health-probe-bind-address", ":8081", "Address of the /healthz and /readyz endpoints.")
	flag.StringVar(&pprofAddr, "pprof-bind-address", "", "Address of Go's /debug/pprof endpoints (profiles of the manager); empty or 0 disables them. Keep it on loopback.")
	flag.StringVar(&join.Addr, "join-api-bind-address", ":8090", "Address of the join API; 0 disables it.")
	flag.StringVar(&join.TLSCertFile, "join-api-tls-cert", "", "PEM certificate (chain) the join API serves HTTPS with; read again when it changes. Needs --join-api-tls-key.")
	flag.StringVar(&join.TLSKeyFile, "join-api-tls-key", "", "PEM private key of --join-api-tls-cert.")
	flag.StringVar(&origins, "join-api-allowed-origins", "", "Comma-separated browser origins (https://play.example.com) whose pages may call the join API's player routes and open the maps' WebSockets; * for any; empty for none. List the join API's own origin to play from the page at "+web.Path+".")
	flag.BoolVar(&webClient, "web-client", true, "Serve the browser client (demo page, SDK, map generator) at "+web.Path+" on the join API's address.")
	flag.StringVar(&hostPorts, "host-port-range", controllers.DefaultHostPortRange.String(), "Node ports maps with exposure HostPort are given, MIN-MAX; each port goes to one MapInstance at a time.")
	flag.IntVar(&portsPerNamespace, "host-ports-per-namespace", 0, "Ports of --host-port-range one namespace's maps may hold at once, so one tenant cannot take another's; 0 for no share (one namespace may take the whole range).")
	flag.StringVar(&joinURL, "join-api-url", defaultJoinAPIURL,
		"URL map pods reach the join API at, to ask where portals lead (passed to them as --join-api); empty passes none.")
	flag.IntVar(&roomWorkers, "gameroom-workers", controllers.DefaultWorkers, "GameRooms reconciled at once.")
	flag.IntVar(&mapWorkers, "mapinstance-workers", controllers.DefaultWorkers, "MapInstances reconciled at once.")
	flag.IntVar(&join.MaxCharactersPerRoom, "max-characters-per-room", joinapi.DefaultMaxCharactersPerRoom,
		"Characters the join API creates in a room's database at most; past it new users get room_full.")
	flag.StringVar(&adminAddr, "admin-api-bind-address", adminapi.DefaultAddr,
		"Address of the admin API (characters' history, the replay check; docs/operations.md, \"Moderation\"); 0 disables it. Every request is authorised by Kubernetes RBAC; keep it on loopback and reach it with kubectl port-forward.")
	flag.DurationVar(&pruneEvery, "retention-interval", retention.DefaultInterval,
		"How often the leader prunes the room databases to their spec.database.retention (docs/operations.md, \"Data retention\"); 0 disables pruning.")
	flag.BoolVar(&leaderElect, "leader-elect", false, "Elect a leader so that only one manager replica reconciles.")
	opts := zap.Options{}
	opts.BindFlags(flag.CommandLine)
	flag.Parse()
	ctrl.SetLogger(zap.New(zap.UseFlagOptions(&opts)))
	if err := checkJoinAPIURL(joinURL); err != nil {
		return err
	}
	portRange, err := controllers.ParsePortRange(hostPorts)
	if err != nil {
		return fmt.Errorf("--host-port-range: %w", err)
	}
	join.AllowedOrigins = splitList(origins)
	if webClient {
		join.Pages = map[string]http.Handler{web.Path: web.Handler(web.Path)}
	}

	scheme := runtime.NewScheme()
	utilruntime.Must(clientgoscheme.AddToScheme(scheme))
	utilruntime.Must(gamev1.AddToScheme(scheme))
	utilruntime.Must(gatewayv1.Install(scheme))

	cfg := ctrl.GetConfigOrDie()
	// The manager runs beside the API server. Asked for gzip, the API
	// server compresses each watch event on its own, which costs it more
	// CPU than the network it saves here (docs/benchmarks.md).
	cfg.DisableCompression = true
	gatewayAPI, err := controllers.ServesGatewayAPI(cfg)
	if err != nil {
		return err
	}
	mgr, err := ctrl.NewManager(cfg, ctrl.Options{
		Scheme:                 scheme,
		Metrics:                metricsserver.Options{BindAddress: metricsAddr},
		HealthProbeBindAddress: probeAddr,
		PprofBindAddress:       pprofAddr,
		LeaderElection:         leaderElect,
		LeaderElectionID:       "manager.roomkeeper.dev",
		// A manager told to stop (a rollout, a node drain's eviction) gives
		// the lease up, so that its successor leads at once instead of
		// after the lease runs out: a drained map pod waits only part of
		// its grace period for the handover the operator starts. The
		// process exits right after Start returns, as this needs.
		LeaderElectionReleaseOnCancel: true,
		Cache:                         controllers.CacheOptions(gatewayAPI),
	})
	if err != nil {
		return fmt.Errorf("creating manager: %w", err)
	}
	if err := controllers.SetupWithManager(mgr, controllers.Options{Clock: clock.RealClock{},
		Pods:            controllers.PodSettings{JoinAPIURL: joinURL, BrowserOrigins: join.AllowedOrigins},
		GameRoomWorkers: roomWorkers, MapInstanceWorkers: mapWorkers, HostPortRange: portRange, HostPortsPerNamespace: portsPerNamespace, GatewayAPI: gatewayAPI}); err != nil {
		return err
	}
	if err := joinapi.Setup(mgr, join); err != nil {
		return err
	}
	if adminAddr != "" && adminAddr != "0" {
		if err := mgr.Add(&adminapi.Server{Addr: adminAddr, Client: mgr.GetClient(), Secrets: mgr.GetAPIReader(),
			Log: ctrl.Log.WithName("adminapi")}); err != nil {
			return err
		}
	}
	if pruneEvery > 0 {
		if err := mgr.Add(&retention.Pruner{Rooms: mgr.GetClient(), Secrets: mgr.GetAPIReader(),
			Interval: pruneEvery, Log: ctrl.Log.WithName("retention")}); err != nil {
			return err
		}
	}
	if err := mgr.AddHealthzCheck("healthz", healthz.Ping); err != nil {
		return err
	}
	if err := mgr.AddReadyzCheck("readyz", healthz.Ping); err != nil {
		return err
	}
	ctrl.Log.Info("Starting manager")
	return mgr.Start(ctrl.SetupSignalHandler())
}

// checkJoinAPIURL refuses a --join-api-url map pods could not use: every
// pod would be built with it, and only fail when a player enters a portal.
func checkJoinAPIURL(raw string) error {
	if raw == "" {
		return nil
	}
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.RawQuery != "" || u.Fragment != "" {
		return fmt.Errorf("--join-api-url %q: want an http or https URL such as %s", raw, defaultJoinAPIURL)
	}
	return nil
}

// splitList reads a comma-separated flag, dropping empty items.
func splitList(s string) []string {
	var out []string
	for _, item := range strings.Split(s, ",") {
		if item = strings.TrimSpace(item); item != "" {
			out = append(out, item)
		}
	}
	return out
}
