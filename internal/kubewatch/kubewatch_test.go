package kubewatch

import (
	"context"
	"net/http"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/runtime"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	clientfeatures "k8s.io/client-go/features"
	"sigs.k8s.io/controller-runtime/pkg/cache"

	gamev1 "github.com/roomkeeper/roomkeeper/api/v1"
	"github.com/roomkeeper/roomkeeper/internal/testenv"
)

// TestACacheListsThenWatches: after ListThenWatch an informer fills its
// cache with a list the API server may answer from its watch cache
// (resourceVersion=0), never with a watch-list stream that waits for the
// newest state.
func TestACacheListsThenWatches(t *testing.T) {
	if err := unsetenv(t); err != nil {
		t.Fatal(err)
	}
	cp, err := testenv.Start()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cp.Stop() })
	ListThenWatch()

	var mu sync.Mutex
	var queries []string
	cfg := *cp.Config
	cfg.Wrap(func(rt http.RoundTripper) http.RoundTripper {
		return roundTripperFunc(func(req *http.Request) (*http.Response, error) {
			if strings.HasSuffix(req.URL.Path, "/mapinstances") {
				mu.Lock()
				queries = append(queries, req.URL.RawQuery)
				mu.Unlock()
			}
			return rt.RoundTrip(req)
		})
	})
	scheme := runtime.NewScheme()
	utilruntime.Must(gamev1.AddToScheme(scheme))
	c, err := cache.New(&cfg, cache.Options{Scheme: scheme})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if _, err := c.GetInformer(ctx, &gamev1.MapInstance{}); err != nil {
		t.Fatal(err)
	}
	go func() { _ = c.Start(ctx) }()
	if !c.WaitForCacheSync(ctx) {
		t.Fatal("the MapInstance cache never synced")
	}

	mu.Lock()
	defer mu.Unlock()
	if len(queries) == 0 || !strings.Contains(queries[0], "resourceVersion=0") || strings.Contains(queries[0], "watch=true") {
		t.Errorf("the first request for MapInstances was %q; want a list at resourceVersion=0", first(queries))
	}
	if i := slices.IndexFunc(queries, func(q string) bool { return strings.Contains(q, "sendInitialEvents=true") }); i >= 0 {
		t.Errorf("the cache asked for a watch-list stream: %q", queries[i])
	}
}

// TestTheOperatorsSwitchDecides: KUBE_FEATURE_WatchListClient, set either
// way, is left to decide.
func TestTheOperatorsSwitchDecides(t *testing.T) {
	on := gates{clientfeatures.WatchListClient: true, clientfeatures.ClientsAllowCBOR: true}
	for _, value := range []string{"true", "false"} {
		t.Setenv(overrideVariable, value)
		if _, replace := withoutWatchListUnlessSet(on); replace {
			t.Errorf("%s=%s: the gates were replaced", overrideVariable, value)
		}
	}
	if err := unsetenv(t); err != nil {
		t.Fatal(err)
	}
	g, replace := withoutWatchListUnlessSet(on)
	if !replace || g.Enabled(clientfeatures.WatchListClient) || !g.Enabled(clientfeatures.ClientsAllowCBOR) {
		t.Errorf("unset: replaced %v, watch-list %v, other gates kept %v; want true, false, true",
			replace, g.Enabled(clientfeatures.WatchListClient), g.Enabled(clientfeatures.ClientsAllowCBOR))
	}
}

// unsetenv unsets the override for the rest of the test and sets it back
// after.
func unsetenv(t *testing.T) error {
	t.Setenv(overrideVariable, "")
	return os.Unsetenv(overrideVariable)
}

type gates map[clientfeatures.Feature]bool

func (g gates) Enabled(f clientfeatures.Feature) bool { return g[f] }

type roundTripperFunc func(*http.Request) (*http.Response, error)

func (f roundTripperFunc) RoundTrip(req *http.Request) (*http.Response, error) { return f(req) }

func first(qs []string) string {
	if len(qs) == 0 {
		return "(none)"
	}
	return qs[0]
}
