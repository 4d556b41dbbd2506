// Command manager runs the Roomkeeper operator: the GameRoom and MapInstance
// controllers, and the join API.
package main

import (
	"flag"
	"fmt"
	"net/url"
	"os"

	"k8s.io/apimachinery/pkg/runtime"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/healthz"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	gamev1 "github.com/roomkeeper/roomkeeper/api/v1"
	"github.com/roomkeeper/roomkeeper/controllers"
	"github.com/roomkeeper/roomkeeper/internal/joinapi"
)

func main() {
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
	var metricsAddr, probeAddr, joinAddr, joinURL string
	var leaderElect bool
	var roomWorkers, mapWorkers, maxCharacters int
	flag.StringVar(&metricsAddr, "metrics-bind-address", ":8080", "Address of the Prometheus metrics endpoint; 0 disables it.")
	flag.StringVar(&probeAddr, "health-probe-bind-address", ":8081", "Address of the /healthz and /readyz endpoints.")
	flag.StringVar(&joinAddr, "join-api-bind-address", ":8090", "Address of the join API; 0 disables it.")
	flag.StringVar(&joinURL, "join-api-url", defaultJoinAPIURL,
		"URL map pods reach the join API at, to ask where portals lead (passed to them as --join-api); empty passes none.")
	flag.IntVar(&roomWorkers, "gameroom-workers", controllers.DefaultWorkers, "GameRooms reconciled at once.")
	flag.IntVar(&mapWorkers, "mapinstance-workers", controllers.DefaultWorkers, "MapInstances reconciled at once.")
	flag.IntVar(&maxCharacters, "max-characters-per-room", joinapi.DefaultMaxCharactersPerRoom,
		"Characters the join API creates in a room's database at most; past it new users get room_full.")
	flag.BoolVar(&leaderElect, "leader-elect", false, "Elect a leader so that only one manager replica reconciles.")
	opts := zap.Options{}
	opts.BindFlags(flag.CommandLine)
	flag.Parse()
	ctrl.SetLogger(zap.New(zap.UseFlagOptions(&opts)))
	if err := checkJoinAPIURL(joinURL); err != nil {
		return err
	}

	scheme := runtime.NewScheme()
	utilruntime.Must(clientgoscheme.AddToScheme(scheme))
	utilruntime.Must(gamev1.AddToScheme(scheme))

	mgr, err := ctrl.NewManager(ctrl.GetConfigOrDie(), ctrl.Options{
		Scheme:                 scheme,
		Metrics:                metricsserver.Options{BindAddress: metricsAddr},
		HealthProbeBindAddress: probeAddr,
		LeaderElection:         leaderElect,
		LeaderElectionID:       "manager.roomkeeper.dev",
		Cache:                  controllers.CacheOptions(),
	})
	if err != nil {
		return fmt.Errorf("creating manager: %w", err)
	}
	if err := controllers.SetupWithManager(mgr, controllers.Options{Clock: clock.RealClock{}, JoinAPIURL: joinURL,
		GameRoomWorkers: roomWorkers, MapInstanceWorkers: mapWorkers}); err != nil {
		return err
	}
	if err := joinapi.Setup(mgr, joinAddr, maxCharacters); err != nil {
		return err
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
