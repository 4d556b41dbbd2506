package cluster

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	gamev1 "github.com/roomkeeper/roomkeeper/api/v1"
	"github.com/roomkeeper/roomkeeper/internal/protocol"
	"github.com/roomkeeper/roomkeeper/internal/wait"
	pkgclient "github.com/roomkeeper/roomkeeper/pkg/client"
)

// The namespaces the suite installs into; both enforce the restricted Pod
// Security Standard, as a hardened cluster's do.
const (
	managerNamespace = "roomkeeper-system"
	roomNamespace    = "games"
	restricted       = "pod-security.kubernetes.io/enforce=restricted"
)

// TestTheChartRunsARoomOnRealNodes: the chart, installed with Helm in a
// restricted namespace, runs the manager on a real node; a GameRoom in
// another restricted namespace gets its map pod from a kubelet (the
// ServiceAccount token it mounts passes the status policy), Ready with
// the database outside the cluster; a player joins through the join API
// and plays over the pod network; no log says forbidden.
func TestTheChartRunsARoomOnRealNodes(t *testing.T) {
	needCluster(t)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	installChart(t)
	room := createRoom(t, ctx)
	endpoint := waitReady(t, ctx, gamev1.MapInstanceName(room.Name, "town"))

	api := &pkgclient.JoinAPI{BaseURL: "http://" + managerAddress(t, ctx) + ":8090", HTTPClient: inCluster()}
	var joined pkgclient.JoinResponse
	wait.Eventually(t, time.Minute, "a join through the join API", func() (err error) {
		joined, err = api.Join(ctx, roomNamespace, room.Name, pkgclient.JoinRequest{AuthKey: "cluster-player"})
		return err
	})
	if joined.Endpoint != endpoint {
		t.Errorf("the join API sent the player to %s, the map is at %s", joined.Endpoint, endpoint)
	}
	player, err := pkgclient.Dial(ctx, joined.Endpoint, protocol.Hello{Ticket: joined.Ticket}, pkgclient.Options{
		NetDialContext: func(context.Context, string, string) (net.Conn, error) { return suite.dial(hostOf(joined.Endpoint)) }})
	if err != nil {
		t.Fatalf("playing at %s: %v", joined.Endpoint, err)
	}
	defer player.Close()
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
	expectNoForbidden(t, managerNamespace, roomNamespace)
}

// installChart installs charts/roomkeeper with make images' tag into a
// restricted namespace.
func installChart(t *testing.T) {
	t.Helper()
	helm := os.Getenv("ROOMKEEPER_HELM")
	if helm == "" {
		t.Fatal("ROOMKEEPER_HELM is not set: run `make test` (it builds Helm and passes its path)")
	}
	for _, ns := range []string{managerNamespace, roomNamespace} {
		if _, err := kubectl("", "create", "namespace", ns); err != nil {
			t.Fatal(err)
		}
		if _, err := kubectl("", "label", "namespace", ns, restricted); err != nil {
			t.Fatal(err)
		}
	}
	install := exec.Command(helm, "install", "roomkeeper", filepath.Join(suite.root, "charts", "roomkeeper"),
		"--kubeconfig", suite.kubeconfig, "-n", managerNamespace, "--set", "image.tag="+suite.version,
		"--wait", "--timeout", "3m")
	if out, err := install.CombinedOutput(); err != nil {
		t.Fatalf("helm install: %v\n%s\n%s", err, out, describe(managerNamespace))
	}
}

// createRoom creates the database Secret and a one-map room on the
// cluster's Postgres.
func createRoom(t *testing.T, ctx context.Context) *gamev1.GameRoom {
	t.Helper()
	dsn, err := os.ReadFile(filepath.Join(suite.dir, "state", "database-url"))
	if err != nil {
		t.Fatal(err)
	}
	secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: roomNamespace, Name: "roomkeeper-db"},
		StringData: map[string]string{"dsn": strings.TrimSpace(string(dsn))}}
	room := &gamev1.GameRoom{
		ObjectMeta: metav1.ObjectMeta{Namespace: roomNamespace, Name: "demo"},
		Spec: gamev1.GameRoomSpec{
			Image: "roomkeeper/roomserver:" + suite.version, DefaultMap: "town",
			Maps: []gamev1.GameMap{{Name: "town", Config: gamev1.MapConfig{Seed: 42, Width: 256, Height: 256}}},
			RoomSettings: gamev1.RoomSettings{
				Database: &gamev1.DatabaseRef{SecretRef: gamev1.SecretKeyRef{Name: secret.Name, Key: "dsn"}}},
		},
	}
	for _, obj := range []client.Object{secret, room} {
		if err := suite.k8s.Create(ctx, obj); err != nil {
			t.Fatal(err)
		}
	}
	return room
}

// waitReady waits for the MapInstance to be Ready and returns its endpoint.
func waitReady(t *testing.T, ctx context.Context, name string) string {
	t.Helper()
	var endpoint string
	wait.Eventually(t, 2*time.Minute, name+" Ready", func() error {
		mi := &gamev1.MapInstance{}
		if err := suite.k8s.Get(ctx, client.ObjectKey{Namespace: roomNamespace, Name: name}, mi); err != nil {
			return err
		}
		if !meta.IsStatusConditionTrue(mi.Status.Conditions, gamev1.ConditionReady) || mi.Status.Endpoint == "" {
			return fmt.Errorf("%s is %q:\n%s", name, mi.Status.Phase, describe(roomNamespace))
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

// hostOf is the host:port of a ws:// URL.
func hostOf(url string) string {
	rest := strings.TrimPrefix(strings.TrimPrefix(url, "ws://"), "wss://")
	host, _, _ := strings.Cut(rest, "/")
	return host
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
