package roomserver

import (
	"context"
	"net"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/roomkeeper/roomkeeper/internal/wait"
)

// TestAHandoverWaitsUntilTheSuccessorIsRouted: a gateway in front of the
// successor answers 503 itself until it routes to it, as Traefik does
// for a few seconds after the new pod is Ready. The old pod's probe goes
// on through the refusals and returns once the successor answers, over
// TLS as a wss:// endpoint is.
func TestAHandoverWaitsUntilTheSuccessorIsRouted(t *testing.T) {
	old := newHarness(t, func(c *Config) { c.Pod = "demo-town-old" })
	next := newHarness(t, func(c *Config) { c.Pod = "demo-town-next" })
	backend, err := url.Parse(next.http.URL)
	if err != nil {
		t.Fatal(err)
	}
	proxy := httputil.NewSingleHostReverseProxy(backend)
	var routed atomic.Bool
	var asked, askedWhenRouted atomic.Int64
	gateway := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		asked.Add(1)
		if !routed.Load() {
			http.Error(w, "no available server", http.StatusServiceUnavailable)
			return
		}
		askedWhenRouted.Add(1)
		r.URL.Path = strings.TrimPrefix(r.URL.Path, "/games/demo/town/demo-town-next")
		proxy.ServeHTTP(w, r)
	}))
	t.Cleanup(gateway.Close)
	endpoint := "wss" + strings.TrimPrefix(gateway.URL, "https") + "/games/demo/town/demo-town-next/ws"

	answered := make(chan error, 1)
	go func() { answered <- old.srv.AwaitSuccessor(context.Background(), endpoint, "") }()
	wait.Eventually(t, 10*time.Second, "the probe to ask the gateway three times", wait.True(func() bool {
		return asked.Load() >= 3
	}, "asked fewer times"))
	expectNoAnswer(t, answered, "before the gateway routed to the successor")
	routed.Store(true)
	expectAnswer(t, answered, "the routed successor")
	if askedWhenRouted.Load() == 0 {
		t.Fatal("the probe ended without asking the routed gateway")
	}
}

// TestAHandoverProbeIsNotFooledByItsOwnPod: the old pod answering at the
// endpoint (a gateway still routing to it) is not the successor; an
// endpoint that is not a WebSocket URL or whose name does not resolve is
// given up at once.
func TestAHandoverProbeIsNotFooledByItsOwnPod(t *testing.T) {
	old := newHarness(t, func(c *Config) { c.Pod = "demo-town-old" })
	ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
	defer cancel()
	if err := old.srv.AwaitSuccessor(ctx, old.url, ""); err == nil {
		t.Fatal("the old pod took itself for its successor")
	}
	if err := old.srv.AwaitSuccessor(context.Background(), "http://example.test/ws", ""); err == nil {
		t.Fatal("an http:// endpoint was probed")
	}
	if !isUnresolvable(&net.DNSError{Err: "no such host", Name: "games.example.test", IsNotFound: true}) {
		t.Fatal("a name that does not resolve is asked again")
	}
}

// TestAHandoverWaitsUntilTheMapsPathLeavesTheOldPod: behind a gateway the
// map's own path balances between the old pod and the new one until the
// gateway drops the old one (it stopped being Ready when deleted). The
// old pod goes on serving, so whoever joins at that path meanwhile is
// served and handed over with the others, and hands over only once the
// path leads to the new pod alone.
func TestAHandoverWaitsUntilTheMapsPathLeavesTheOldPod(t *testing.T) {
	old := newHarness(t, func(c *Config) { c.Pod = "demo-town-old" })
	next := newHarness(t, func(c *Config) { c.Pod = "demo-town-next" })
	proxyTo := func(h *harness) *httputil.ReverseProxy {
		backend, err := url.Parse(h.http.URL)
		if err != nil {
			t.Fatal(err)
		}
		return httputil.NewSingleHostReverseProxy(backend)
	}
	toOld, toNext := proxyTo(old), proxyTo(next)
	var oldDropped atomic.Bool
	var mapAsked, turn atomic.Int64
	gateway := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		own := strings.HasPrefix(r.URL.Path, "/games/demo/town/demo-town-next/")
		r.URL.Path = "/ws"
		switch {
		case own:
			toNext.ServeHTTP(w, r)
		case !oldDropped.Load() && turn.Add(1)%2 == 0: // round robin between both pods
			mapAsked.Add(1)
			toOld.ServeHTTP(w, r)
		default:
			mapAsked.Add(1)
			toNext.ServeHTTP(w, r)
		}
	}))
	t.Cleanup(gateway.Close)
	base := "wss" + strings.TrimPrefix(gateway.URL, "https") + "/games/demo/town/"

	answered := make(chan error, 1)
	go func() { answered <- old.srv.AwaitSuccessor(context.Background(), base+"demo-town-next/ws", base+"ws") }()
	wait.Eventually(t, 10*time.Second, "the probe to ask the map's path six times", wait.True(func() bool {
		return mapAsked.Load() >= 6
	}, "asked fewer times"))
	expectNoAnswer(t, answered, "while the map's path still led to the old pod half the time")
	oldDropped.Store(true)
	expectAnswer(t, answered, "the map's path leading to the new pod alone")
}

// expectNoAnswer fails the test if the probe has ended.
func expectNoAnswer(t *testing.T, answered <-chan error, when string) {
	t.Helper()
	select {
	case err := <-answered:
		t.Fatalf("the probe ended %s: %v", when, err)
	default:
	}
}

// expectAnswer waits for the probe to end having seen what it waits for.
func expectAnswer(t *testing.T, answered <-chan error, what string) {
	t.Helper()
	select {
	case err := <-answered:
		if err != nil {
			t.Fatalf("%s was not seen: %v", what, err)
		}
	case <-time.After(10 * time.Second):
		t.Fatalf("the probe did not see %s", what)
	}
}
