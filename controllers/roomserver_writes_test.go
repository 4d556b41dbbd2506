package controllers

import (
	"context"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"

	gamev1 "github.com/roomkeeper/roomkeeper/api/v1"
	"github.com/roomkeeper/roomkeeper/internal/heartbeat"
	"github.com/roomkeeper/roomkeeper/internal/protocol"
	"github.com/roomkeeper/roomkeeper/internal/serverlog"
	"github.com/roomkeeper/roomkeeper/internal/testenv"
	"github.com/roomkeeper/roomkeeper/internal/token"
	"github.com/roomkeeper/roomkeeper/pkg/client"
)

// requestLog is a proxy in front of the API server that remembers every
// request sent through it, in order.
type requestLog struct {
	mu   sync.Mutex
	seen []string // "METHOD path"
}

func (l *requestLog) add(r *http.Request) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.seen = append(l.seen, r.Method+" "+r.URL.Path)
}

func (l *requestLog) requests() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Clone(l.seen)
}

// countingAPIServer serves the envtest API server on plain HTTP without
// credentials, logging each request: a kubeconfig pointing at it shows
// everything a process asks of the API server.
func countingAPIServer(t *testing.T) (*requestLog, string) {
	t.Helper()
	target, err := url.Parse(restConfig.Host)
	if err != nil {
		t.Fatal(err)
	}
	transport, err := rest.TransportFor(restConfig)
	if err != nil {
		t.Fatal(err)
	}
	proxy := httputil.NewSingleHostReverseProxy(target)
	proxy.Transport = transport
	log := &requestLog{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		log.add(r)
		proxy.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	kubeconfig := filepath.Join(t.TempDir(), "kubeconfig")
	if err := testenv.WriteKubeconfig(kubeconfig, "counted", &rest.Config{Host: srv.URL}); err != nil {
		t.Fatal(err)
	}
	return log, kubeconfig
}

// TestARoomServerWithPlayersWritesOnlyItsHeartbeat runs the room server's
// binary with two players in it, talking to the API server through a
// proxy that logs every request: once it is up, all it sends is its
// liveness, a beat every heartbeat.DefaultInterval (a status apply of its
// own MapInstance every third beat, a renewal of its pod's Lease between,
// the Lease made once), no other write and no read (issue 38's "a steady
// map performs no API-server writes beyond its liveness signal").
func TestARoomServerWithPlayersWritesOnlyItsHeartbeat(t *testing.T) {
	ctx, ns := envtestNamespace(t)
	g := wait(t)
	createRoom(ctx, t, ns, newGameRoom("steady", withMap("town")))
	pod := &corev1.Pod{}
	g.Eventually(func() error { return k8s.Get(ctx, key(ns, "steady-town"), pod) }).Should(Succeed())
	requests, kubeconfig := countingAPIServer(t)

	keys, keyDir := roomServerKeys(t)
	game := startRoomServer(t, keyDir, kubeconfig, ns, pod.UID)
	for _, player := range []string{"ann", "bob"} {
		ticket, _, err := token.NewSigner(token.StaticKeys(keys), time.Now).Sign(token.Claims{Type: token.TypeJoin,
			Subject: "user-" + player, Character: player, Room: "steady", Map: "steady-town"}, 10*time.Second)
		g.Expect(err).NotTo(HaveOccurred())
		c, err := client.Dial(ctx, "ws://"+game+"/ws", protocol.Hello{Ticket: ticket}, client.Options{})
		g.Expect(err).NotTo(HaveOccurred())
		t.Cleanup(func() { _ = c.Close() })
	}

	status := "PATCH /apis/" + gamev1.GroupVersion.String() + "/namespaces/" + ns + "/mapinstances/steady-town/status"
	leases := "/apis/coordination.k8s.io/v1/namespaces/" + ns + "/leases"
	renewal, made := "PATCH "+leases+"/steady-town", "POST "+leases
	count := func(from int, want string) int {
		n := 0
		for _, r := range requests.requests()[from:] {
			if r == want {
				n++
			}
		}
		return n
	}
	g.Eventually(func() int { return count(0, status) }, 3*heartbeat.DefaultInterval).Should(BeNumerically(">=", 1), "no heartbeat")
	g.Eventually(func() int32 { return mapPlayers(ctx, ns, "steady-town") }, 2*gamev1.HeartbeatsPerTimeout*heartbeat.DefaultInterval).Should(Equal(int32(2)))
	from := len(requests.requests())
	g.Eventually(func() int { return count(from, status) }, 8*heartbeat.DefaultInterval).Should(BeNumerically(">=", 2))
	steady := requests.requests()[from:]
	for _, r := range steady {
		g.Expect(r).To(BeElementOf(status, renewal, made), "a steady room server sent more than its heartbeat")
	}
	g.Expect(count(0, made)).To(Equal(1), "the Lease is made once")
	renewals := count(from, renewal)
	g.Expect(renewals).To(BeNumerically(">=", gamev1.HeartbeatsPerTimeout-1), "the beats between two status heartbeats renew the Lease")
	lease := &coordinationv1.Lease{}
	g.Expect(k8s.Get(ctx, key(ns, "steady-town"), lease)).To(Succeed())
	g.Expect(lease.Spec.RenewTime).NotTo(BeNil())
	g.Expect(lease.OwnerReferences).To(ConsistOf(HaveField("UID", pod.UID)), "the Lease goes with its pod")
	t.Logf("%d requests before the players were counted, then %d status heartbeats, %d Lease renewals and nothing else",
		from, count(from, status), renewals)
}

// mapPlayers is the players the MapInstance's status counts.
func mapPlayers(ctx context.Context, ns, name string) int32 {
	mi := &gamev1.MapInstance{}
	if err := k8s.Get(ctx, key(ns, name), mi); err != nil {
		return -1
	}
	return mi.Status.Players
}

// roomServerKeys writes a key set as the operator mounts it.
func roomServerKeys(t *testing.T) (token.KeySet, string) {
	t.Helper()
	key, err := token.NewKey()
	if err != nil {
		t.Fatal(err)
	}
	keys, dir := token.KeySet{Current: key}, t.TempDir()
	if err := keys.WriteDir(dir); err != nil {
		t.Fatal(err)
	}
	return keys, dir
}

// startRoomServer builds and runs the room server of MapInstance
// steady-town in namespace ns as its pod of UID uid, reaching the API
// server by kubeconfig, and returns its game address.
func startRoomServer(t *testing.T, keyDir, kubeconfig, ns string, uid types.UID) string {
	t.Helper()
	binary := filepath.Join(t.TempDir(), "roomserver")
	if out, err := exec.Command("go", "build", "-o", binary, "../cmd/roomserver").CombinedOutput(); err != nil {
		t.Fatalf("building the room server: %v\n%s", err, out)
	}
	cmd := exec.Command(binary, "--room=steady", "--map=town", "--instance=steady-town", "--key-dir="+keyDir,
		"--listen=127.0.0.1:0", "--http-listen=127.0.0.1:0")
	cmd.Env = append(os.Environ(), "ROOMKEEPER_MAP_CONFIG="+`{"seed":42,"width":256,"height":256}`,
		"KUBECONFIG="+kubeconfig, "POD_NAMESPACE="+ns, "POD_NAME=steady-town", "POD_UID="+string(uid))
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	tail, serving, ended := serverlog.NewTail(50), make(chan serverlog.Addrs, 1), make(chan struct{})
	go func() { tail.Follow(stderr, serving); close(ended) }()
	select {
	case addrs := <-serving:
		return addrs.Game
	case <-ended:
		select {
		case addrs := <-serving: // served, then its log ended
			return addrs.Game
		default:
		}
	}
	t.Fatalf("the room server exited before serving:\n%s", tail)
	return ""
}
