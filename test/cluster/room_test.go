package cluster

import (
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	gamev1 "github.com/roomkeeper/roomkeeper/api/v1"
	"github.com/roomkeeper/roomkeeper/internal/protocol"
	"github.com/roomkeeper/roomkeeper/internal/testenv"
	"github.com/roomkeeper/roomkeeper/internal/wait"
	pkgclient "github.com/roomkeeper/roomkeeper/pkg/client"
)

// The namespaces the suite installs into; both enforce the restricted Pod
// Security Standard, as a hardened cluster's do.
const (
	managerNamespace = "roomkeeper-system"
	roomNamespace    = "games"
	// hostPortNamespace allows hostPort: a HostPort room's pods need it.
	hostPortNamespace = "games-hostport"
	restricted        = "pod-security.kubernetes.io/enforce=restricted"
)

// TestTheChartRunsARoomOnRealNodes: the chart, installed with Helm in a
// restricted namespace, runs the manager on a real node; a GameRoom in
// another restricted namespace gets its map pod from a kubelet (the
// ServiceAccount token it mounts passes the status policy), Ready with
// the database outside the cluster; a player joins through the join API
// and plays over the pod network; no log says forbidden.
func TestTheChartRunsARoomOnRealNodes(t *testing.T) {
	ctx := installed(t, 5*time.Minute)
	room := createRoom(t, ctx, &gamev1.GameRoom{
		ObjectMeta: metav1.ObjectMeta{Namespace: roomNamespace, Name: "demo"},
		Spec: gamev1.GameRoomSpec{DefaultMap: "town",
			Maps: []gamev1.GameMap{{Name: "town", Config: gamev1.MapConfig{Seed: 42, Width: 256, Height: 256}}}},
	})
	name := gamev1.MapInstanceName(room.Name, "town")
	readyIn := timePodReady(ctx, name)
	endpoint := waitReady(t, ctx, roomNamespace, name)
	if took := <-readyIn; took > 0 {
		t.Logf("the map's pod: created to Ready in %s (docs/benchmarks.md)", took.Round(time.Millisecond))
	}

	joined := join(t, ctx, roomNamespace, room.Name, pkgclient.JoinRequest{AuthKey: "cluster-player"})
	if joined.Endpoint != endpoint {
		t.Errorf("the join API sent the player to %s, the map is at %s", joined.Endpoint, endpoint)
	}
	player := play(t, ctx, joined, pkgclient.Options{NetDialContext: dialInCluster})
	before, err := player.WaitFor(ctx, func(s pkgclient.State) bool { return s.Sees(player.Welcome().PlayerID) })
	if err != nil {
		t.Fatal(err)
	}
	seq, err := player.MoveSteps(1, 0, 4)
	if err != nil {
		t.Fatal(err)
	}
	after, err := player.WaitFor(ctx, func(s pkgclient.State) bool { return s.AckSeq >= seq })
	if err != nil {
		t.Fatal(err)
	}
	if after.Self.X <= before.Self.X {
		t.Errorf("the player did not move: x %v -> %v", before.Self.X, after.Self.X)
	}
	expectTimerSlack(t, name)
	expectNoForbidden(t, managerNamespace, roomNamespace)
}

// expectTimerSlack: in its container, non-root, the room server of pod
// gave every one of its threads its 1 ms of timer slack
// (internal/timerslack), and is the process the runtime started, named
// roomserver in every thread as it was started.
func expectTimerSlack(t *testing.T, pod string) {
	t.Helper()
	pids := clusterProcesses(func(cmdline, environ string) bool {
		return strings.HasPrefix(cmdline, "/roomserver") && strings.Contains(environ, "\x00POD_NAME="+pod+"\x00")
	})
	if len(pids) != 1 {
		t.Fatalf("want the one room server process of pod %s, found %v", pod, pids)
	}
	threads, err := testenv.Threads(pids[0])
	if err != nil {
		t.Fatal(err)
	}
	for _, th := range threads {
		if th.TimerSlack != time.Millisecond || th.Name != "roomserver" {
			t.Errorf("the room server's thread %d (of %d) is %q and wakes with %v of timer slack, want roomserver and 1ms",
				th.TID, len(threads), th.Name, th.TimerSlack)
		}
	}
}

// timePodReady measures the map's first pod (named after its
// MapInstance) from the moment the API server has it to the moment its
// Ready condition is true, polling every 20 ms; 0 when it was missed.
func timePodReady(ctx context.Context, name string) <-chan time.Duration {
	took := make(chan time.Duration, 1)
	go func() {
		defer close(took)
		var created time.Time
		for ctx.Err() == nil {
			pod := &corev1.Pod{}
			err := suite.k8s.Get(ctx, client.ObjectKey{Namespace: roomNamespace, Name: name}, pod)
			switch {
			case err != nil:
			case created.IsZero():
				created = time.Now()
			case podReady(pod):
				took <- time.Since(created)
				return
			}
			time.Sleep(20 * time.Millisecond)
		}
	}()
	return took
}

func podReady(pod *corev1.Pod) bool {
	for _, c := range pod.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// join asks the manager's join API for a ticket to the room, until it
// gives one.
func join(t *testing.T, ctx context.Context, namespace, room string, req pkgclient.JoinRequest) pkgclient.JoinResponse {
	t.Helper()
	api := &pkgclient.JoinAPI{BaseURL: "http://" + managerAddress(t, ctx) + ":8090", HTTPClient: inCluster()}
	var joined pkgclient.JoinResponse
	wait.Eventually(t, time.Minute, "a join through the join API", func() (err error) {
		joined, err = api.Join(ctx, namespace, room, req)
		return err
	})
	return joined
}

// play connects with the ticket and waits until the player sees itself;
// the connection closes when the test ends.
func play(t *testing.T, ctx context.Context, joined pkgclient.JoinResponse, opts pkgclient.Options) *pkgclient.Client {
	t.Helper()
	player, err := pkgclient.Dial(ctx, joined.Endpoint, protocol.Hello{Ticket: joined.Ticket}, opts)
	if err != nil {
		t.Fatalf("playing at %s: %v", joined.Endpoint, err)
	}
	t.Cleanup(func() { _ = player.Close() })
	if _, err := player.WaitFor(ctx, func(s pkgclient.State) bool { return s.Sees(player.Welcome().PlayerID) }); err != nil {
		t.Fatalf("at %s the player never saw itself: %v", joined.Endpoint, err)
	}
	return player
}

// chart is the one installation of the chart the suite's tests share.
var chart struct {
	once sync.Once
	done bool // a test asked for it: the suite uninstalls it at the end
	err  error
}

// chartInstalled installs the chart as docs/install.md says (restricted
// namespaces for the manager and the rooms, the database Secret), and a
// namespace for HostPort rooms, once for the suite.
func chartInstalled(t *testing.T) {
	t.Helper()
	chart.once.Do(func() { chart.err, chart.done = installChart(), true })
	if chart.err != nil {
		t.Fatal(chart.err)
	}
}

func installChart() error {
	if err := runDocs("install"); err != nil {
		return fmt.Errorf("%w\n%s", err, describe(managerNamespace))
	}
	// A HostPort room's namespace must allow hostPort, which the
	// restricted and baseline standards refuse.
	if _, err := kubectl("", "create", "namespace", hostPortNamespace); err != nil {
		return err
	}
	if _, err := kubectl("", "label", "namespace", hostPortNamespace, "pod-security.kubernetes.io/enforce=privileged"); err != nil {
		return err
	}
	dsn, err := os.ReadFile(filepath.Join(suite.dir, "state", "database-url"))
	if err != nil {
		return err
	}
	return suite.k8s.Create(context.Background(), &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: hostPortNamespace, Name: databaseSecret},
		StringData: map[string]string{"dsn": strings.TrimSpace(string(dsn))}})
}

// databaseSecret holds the cluster's Postgres DSN in the room namespace.
const databaseSecret = "roomkeeper-db"

// createRoom creates room on make images' room server and the cluster's
// Postgres, and deletes it when the test ends.
func createRoom(t *testing.T, ctx context.Context, room *gamev1.GameRoom) *gamev1.GameRoom {
	t.Helper()
	room.Spec.Image = "roomkeeper/roomserver:" + suite.version
	room.Spec.Database = &gamev1.DatabaseRef{SecretRef: gamev1.SecretKeyRef{Name: databaseSecret, Key: "dsn"}}
	if err := suite.k8s.Create(ctx, room); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = suite.k8s.Delete(context.Background(), room) })
	return room
}

// waitReady waits for the MapInstance to be Ready and returns its endpoint.
func waitReady(t *testing.T, ctx context.Context, namespace, name string) string {
	t.Helper()
	var endpoint string
	wait.Eventually(t, 2*time.Minute, name+" Ready", func() error {
		mi := &gamev1.MapInstance{}
		if err := suite.k8s.Get(ctx, client.ObjectKey{Namespace: namespace, Name: name}, mi); err != nil {
			return err
		}
		if !meta.IsStatusConditionTrue(mi.Status.Conditions, gamev1.ConditionReady) || mi.Status.Endpoint == "" {
			return fmt.Errorf("%s is %q:\n%s", name, mi.Status.Phase, describe(namespace))
		}
		endpoint = mi.Status.Endpoint
		return nil
	})
	return endpoint
}

// managerAddress is the manager pod's address, where its join API serves
// (the Service's cluster address routes only on the nodes).
func managerAddress(t *testing.T, ctx context.Context) string {
	t.Helper()
	pods := &corev1.PodList{}
	if err := suite.k8s.List(ctx, pods, client.InNamespace(managerNamespace)); err != nil {
		t.Fatal(err)
	}
	for _, p := range pods.Items {
		if p.Status.PodIP != "" && p.DeletionTimestamp == nil {
			return p.Status.PodIP
		}
	}
	t.Fatalf("no manager pod with an address:\n%s", describe(managerNamespace))
	return ""
}

// dialInCluster is a player's dialer: its connections are made inside
// the cluster's network, and the Gateway's public name resolves to a node.
func dialInCluster(_ context.Context, _, addr string) (net.Conn, error) {
	if host, port, err := net.SplitHostPort(addr); err == nil && host == gatewayHostname {
		addr = net.JoinHostPort(suite.nodeAddresses[0], port)
	}
	return suite.dial(addr)
}

// expectNoForbidden fails the test when a pod of these namespaces logged
// that the API server refused it.
func expectNoForbidden(t *testing.T, namespaces ...string) {
	t.Helper()
	for _, ns := range namespaces {
		pods := &corev1.PodList{}
		if err := suite.k8s.List(context.Background(), pods, client.InNamespace(ns)); err != nil {
			t.Fatal(err)
		}
		for _, p := range pods.Items {
			out, err := kubectl("", "-n", ns, "logs", p.Name, "--all-containers")
			if err != nil && apierrors.IsNotFound(suite.k8s.Get(context.Background(), client.ObjectKeyFromObject(&p), &corev1.Pod{})) {
				continue // gone since the list: a handover's old pod
			}
			if err != nil {
				t.Error(err)
				continue
			}
			for _, line := range strings.Split(out, "\n") {
				if strings.Contains(strings.ToLower(line), "forbidden") {
					t.Errorf("%s/%s was refused by the API server: %s", ns, p.Name, line)
				}
			}
		}
	}
}

// describe is kubectl's view of a namespace, for failure messages.
func describe(ns string) string {
	out, _ := kubectl("", "-n", ns, "get", "pods,events", "-o", "wide")
	return out
}
