package cluster

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gorilla/websocket"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	gamev1 "github.com/roomkeeper/roomkeeper/api/v1"
	"github.com/roomkeeper/roomkeeper/internal/playtest"
	"github.com/roomkeeper/roomkeeper/internal/protocol"
	"github.com/roomkeeper/roomkeeper/internal/testenv"
	"github.com/roomkeeper/roomkeeper/internal/wait"
	pkgclient "github.com/roomkeeper/roomkeeper/pkg/client"
)

// The Gateway the suite makes on make cluster's Traefik (GatewayClass
// traefik): its HTTPS listener is Traefik's 8443 entry point, which
// players reach on every node's address at NodePort 30443.
const (
	gatewayHostname = "games.cluster.test"
	gatewayPort     = 30443
	gatewayName     = "games"
)

// TestAGatewayRoomIsPlayedOverWSSThroughTraefik: a room with exposure
// Gateway on the cluster's real Gateway API implementation. Traefik
// accepts the operator's HTTPRoutes; players join through the join API,
// connect over TLS to the node's port (trusting the Gateway's certificate,
// and only then), play, and walk through a portal into their party's
// instance, which gets its own route. When that instance's map is deleted
// its route stops routing (404 from the gateway) while the town serves on.
// Bots playing through the gateway stay connected through kubectl delete
// pod and a rollout: each hands over to the new pod's own route. Players
// who join meanwhile, at the map's own path, are every one welcomed by a
// pod that serves them and stay.
func TestAGatewayRoomIsPlayedOverWSSThroughTraefik(t *testing.T) {
	ctx := installed(t, 5*time.Minute)
	roots := gatewayWithTLS(t, ctx)
	resolveInCluster(t, gatewayHostname, suite.nodeAddresses[0])
	room := createRoom(t, ctx, &gamev1.GameRoom{
		ObjectMeta: metav1.ObjectMeta{Namespace: roomNamespace, Name: "arena"},
		Spec: gamev1.GameRoomSpec{DefaultMap: "town",
			Maps: []gamev1.GameMap{
				{Name: "town", Config: gamev1.MapConfig{Seed: 5, Width: 256, Height: 256,
					Portals: []gamev1.Portal{{To: "crypt", X: 200, Y: 128}}}},
				{Name: "crypt", Instanced: true, Config: gamev1.MapConfig{Seed: 7, Width: 128, Height: 128, Biome: "dungeon",
					Portals: []gamev1.Portal{{To: "town", X: 64, Y: 24}}}},
			},
			RoomSettings: gamev1.RoomSettings{Exposure: gamev1.Exposure{Type: gamev1.ExposureGateway,
				Gateway: &gamev1.GatewayExposure{Name: gatewayName, Hostname: gatewayHostname, Port: gatewayPort}},
				// A newcomer who left keeps its seat for the resume grace,
				// so the town seats every player the test ever sends in:
				// a slow run sends more newcomers between two handovers.
				MaxPlayersPerMap: handoverBots + maxNewcomers + 10},
		},
	})
	public := fmt.Sprintf("wss://%s:%d/%s/%s/", gatewayHostname, gatewayPort, roomNamespace, room.Name)
	if endpoint := waitReady(t, ctx, roomNamespace, gamev1.MapInstanceName(room.Name, "town")); endpoint != public+"town/ws" {
		t.Fatalf("the town's endpoint is %s, want %stown/ws", endpoint, public)
	}

	trusting := pkgclient.Options{NetDialContext: dialInCluster, TLSConfig: &tls.Config{RootCAs: roots, MinVersion: tls.VersionTLS12}}
	joined := join(t, ctx, roomNamespace, room.Name, pkgclient.JoinRequest{AuthKey: "gateway-player"})
	if _, err := pkgclient.Dial(ctx, joined.Endpoint, protocol.Hello{Ticket: joined.Ticket},
		pkgclient.Options{NetDialContext: dialInCluster}); err == nil {
		t.Error("a client that does not trust the Gateway's certificate connected")
	}
	// Traefik programs an accepted route a moment later.
	wait.Eventually(t, time.Minute, "the gateway routes to the town", func() error {
		if status := handshakeStatus(ctx, joined.Endpoint, trusting.TLSConfig); status != http.StatusSwitchingProtocols {
			return fmt.Errorf("%s answers %d, want 101", joined.Endpoint, status)
		}
		return nil
	})
	player := play(t, ctx, joined, trusting)
	moveAndAck(t, ctx, player)

	ack, err := playtest.EnterPortal(ctx, player, "crypt")
	if err != nil || !ack.OK || player.Welcome().Map != "crypt" {
		t.Fatalf("the portal to the party's crypt: %+v %v (on %s)", ack, err, player.Welcome().Map)
	}
	instance := player.Welcome().Instance
	if want := public + "crypt/"; !strings.HasPrefix(player.Endpoint(), want) {
		t.Errorf("in the crypt the player is at %s, want under %s", player.Endpoint(), want)
	}
	moveAndAck(t, ctx, player)
	crypt := player.Endpoint()
	if ack, err := playtest.EnterPortal(ctx, player, "town"); err != nil || !ack.OK {
		t.Fatalf("the portal back to town: %+v %v", ack, err)
	}

	mi := &gamev1.MapInstance{ObjectMeta: metav1.ObjectMeta{Namespace: roomNamespace, Name: instance}}
	if err := suite.k8s.Delete(ctx, mi); err != nil {
		t.Fatal(err)
	}
	wait.Eventually(t, time.Minute, "the deleted instance's route gone from the gateway", func() error {
		if status := handshakeStatus(ctx, crypt, trusting.TLSConfig); status != http.StatusNotFound {
			return fmt.Errorf("%s answers %d, want 404", crypt, status)
		}
		return nil
	})
	moveAndAck(t, ctx, player)

	// Handovers behind the gateway: each new pod gets a route of its own,
	// and the bots, connected through Traefik, follow the old pod's
	// transfer to it over TLS.
	town := gamev1.MapInstanceName(room.Name, "town")
	bots := startBots(t, ctx, roomNamespace, room.Name, handoverBots, trusting)
	newcomers := startNewcomers(t, ctx, roomNamespace, room.Name, trusting)
	readiness := watchReady(ctx, town)
	if _, err := kubectl("", "-n", roomNamespace, "delete", "pod", mapPod(t, ctx, town).Name, "--wait=false"); err != nil {
		t.Fatal(err)
	}
	bots.expectTransfers(t, ctx, "kubectl delete pod behind the gateway", 1)
	setImage(t, ctx, room, loadImage(t, suite.version+"-next"))
	bots.expectTransfers(t, ctx, "a rollout behind the gateway", 2)
	pod := mapPod(t, ctx, town).Name
	for i, p := range bots.players {
		if want := public + "town/" + pod + "/ws"; p.Endpoint() != want {
			t.Errorf("bot %d plays at %s, want the new pod's own route %s", i, p.Endpoint(), want)
		}
	}
	newcomers.stop(t, "joining the Gateway room's own path through kubectl delete pod and a rollout")
	bots.stop(t)
	bots.logAcks(t, "a Gateway room through kubectl delete pod and a rollout")
	if stretches := readiness.stop(); len(stretches) > 0 {
		t.Errorf("the town was not Ready: %s", strings.Join(stretches, "; "))
	}
	expectNoForbidden(t, managerNamespace, roomNamespace, "traefik")
}

// moveAndAck walks the player a few steps and waits for the server's ack.
func moveAndAck(t *testing.T, ctx context.Context, player *pkgclient.Client) {
	t.Helper()
	seq, err := player.MoveSteps(1, 0, 4)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := player.WaitFor(ctx, func(s pkgclient.State) bool { return s.AckSeq >= seq }); err != nil {
		t.Fatalf("moving at %s: %v", player.Endpoint(), err)
	}
}

// handshakeStatus is the HTTP status a WebSocket handshake to url gets:
// 101 when something upgrades it, the gateway's answer otherwise, 0 when
// no answer comes.
func handshakeStatus(ctx context.Context, url string, tlsConfig *tls.Config) int {
	dialer := websocket.Dialer{NetDialContext: dialInCluster, TLSClientConfig: tlsConfig, HandshakeTimeout: 10 * time.Second}
	conn, resp, err := dialer.DialContext(ctx, url, nil)
	if err == nil {
		_ = conn.Close()
	}
	if resp == nil {
		return 0
	}
	_ = resp.Body.Close()
	return resp.StatusCode
}

// resolveInCluster makes the cluster's DNS resolve hostname to address,
// as a public name resolves inside a real cluster too: a map pod about to
// hand over asks its successor at the public endpoint whether the Gateway
// routes to it yet (docs/operations.md). CoreDNS reads its Corefile at
// start, so it is restarted, and again with the old one at the end.
func resolveInCluster(t *testing.T, hostname, address string) {
	t.Helper()
	corefile, err := kubectl("", "-n", "kube-system", "get", "configmap", "coredns", "-o", "jsonpath={.data.Corefile}")
	if err != nil {
		t.Fatal(err)
	}
	zone := hostname[strings.Index(hostname, ".")+1:]
	extra := fmt.Sprintf("%s:1053 {\n    hosts {\n        %s %s\n    }\n}\n", zone, address, hostname)
	apply := func(corefile string) error {
		patch, err := json.Marshal(map[string]any{"data": map[string]string{"Corefile": corefile}})
		if err != nil {
			return err
		}
		if _, err := kubectl("", "-n", "kube-system", "patch", "configmap", "coredns", "--type", "merge", "-p", string(patch)); err != nil {
			return err
		}
		if _, err := kubectl("", "-n", "kube-system", "rollout", "restart", "deployment/coredns"); err != nil {
			return err
		}
		_, err = kubectl("", "-n", "kube-system", "rollout", "status", "deployment/coredns", "--timeout", "2m")
		return err
	}
	if err := apply(corefile + extra); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := apply(corefile); err != nil {
			t.Errorf("restoring the cluster's DNS: %v", err)
		}
	})
}

// gatewayWithTLS makes the room namespace's Gateway on Traefik as
// docs/install.md says, with a certificate for gatewayHostname, and
// returns the roots that trust the certificate.
func gatewayWithTLS(t *testing.T, ctx context.Context) *x509.CertPool {
	t.Helper()
	certPEM, keyPEM, err := testenv.SelfSignedPEM(gatewayHostname, gatewayHostname)
	if err != nil {
		t.Fatal(err)
	}
	dir, err := docsDir()
	if err != nil {
		t.Fatal(err)
	}
	for name, content := range map[string][]byte{"tls.crt": certPEM, "tls.key": keyPEM} {
		if err := os.WriteFile(filepath.Join(dir, name), content, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	if err := runDocs("gateway"); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_, _ = kubectl("", "-n", roomNamespace, "delete", "gateway/"+gatewayName, "secret/"+gatewayName+"-tls")
	})
	roots := x509.NewCertPool()
	if !roots.AppendCertsFromPEM(certPEM) {
		t.Fatal("the Gateway's certificate does not parse")
	}
	return roots
}
