package e2e

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	gamev1 "github.com/roomkeeper/roomkeeper/api/v1"
	"github.com/roomkeeper/roomkeeper/internal/protocol"
	pkgclient "github.com/roomkeeper/roomkeeper/pkg/client"
)

// playAt joins room through the join API (as authKey, or a guest), checks
// the endpoint it is given starts with want, and plays there until the
// player sees itself.
func playAt(t *testing.T, ctx context.Context, room, authKey, want string, opts pkgclient.Options) *pkgclient.Client {
	t.Helper()
	var c *pkgclient.Client
	eventually(t, ctx, "joining "+room, func() error {
		res, err := joinAPI.Join(ctx, "default", room, pkgclient.JoinRequest{AuthKey: authKey})
		if err != nil {
			return err
		}
		if !strings.HasPrefix(res.Endpoint, want) {
			return fmt.Errorf("endpoint %s, want one starting with %s", res.Endpoint, want)
		}
		c, err = pkgclient.Dial(ctx, res.Endpoint, protocol.Hello{Ticket: res.Ticket}, opts)
		return err
	})
	t.Cleanup(func() { _ = c.Close() })
	id := c.Welcome().PlayerID
	if _, err := c.WaitFor(ctx, func(s pkgclient.State) bool { return s.Sees(id) }); err != nil {
		t.Fatalf("%s: the player never saw itself: %v", room, err)
	}
	return c
}

// TestPlayersReachAMapThroughTheGatewayOverTLS: make dev's room "public"
// is exposed through the development gateway. The join API hands out its
// wss:// endpoint; players connect over TLS trusting the gateway's CA,
// through the HTTPRoute the operator wrote, see each other, and a portal
// transfer sends one to the other map's wss:// endpoint.
func TestPlayersReachAMapThroughTheGatewayOverTLS(t *testing.T) {
	ctx := cluster(t)
	pem, err := os.ReadFile(filepath.Join(devDir, "gateway", "ca.crt"))
	if err != nil {
		t.Fatal(err)
	}
	roots := x509.NewCertPool()
	if !roots.AppendCertsFromPEM(pem) {
		t.Fatal("the dev gateway's ca.crt holds no certificate")
	}
	_, port, _ := strings.Cut(gatewayAddr, ":")
	public := "wss://localhost:" + port + "/default/public/"
	want := public + "plaza/ws"
	opts := pkgclient.Options{TLSConfig: &tls.Config{RootCAs: roots, MinVersion: tls.VersionTLS12}}
	first := playAt(t, ctx, "public", "gate-e2e-key-1", want, opts)
	second := playAt(t, ctx, "public", "", want, opts)
	if _, err := second.WaitFor(ctx, func(s pkgclient.State) bool { return s.Sees(first.Welcome().PlayerID) }); err != nil {
		t.Fatalf("two players through the gateway never met: %v", err)
	}
	if _, err := pkgclient.Dial(ctx, want, protocol.Hello{}, pkgclient.Options{}); err == nil {
		t.Error("a client that does not trust the dev CA connected")
	}
	throughPortal(t, ctx, first, "hall")
	if got := first.Endpoint(); got != public+"hall/ws" {
		t.Errorf("after the portal the player is at %s, want %shall/ws", got, public)
	}
}

// TestAHostPortRoomIsPlayedOnTheNodeAddress: a room with exposure HostPort
// gets a port of the range; the endpoint is the node's address and that
// port, which the node forwards to the pod.
func TestAHostPortRoomIsPlayedOnTheNodeAddress(t *testing.T) {
	ctx := cluster(t)
	room := &gamev1.GameRoom{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "fields"},
		Spec: gamev1.GameRoomSpec{Image: "roomkeeper/roomserver:dev", DefaultMap: "field",
			Maps:         []gamev1.GameMap{{Name: "field", Config: gamev1.MapConfig{Seed: 3, Width: 128, Height: 128}}},
			RoomSettings: gamev1.RoomSettings{Exposure: gamev1.Exposure{Type: gamev1.ExposureHostPort}}},
	}
	if err := k8s.Create(ctx, room); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = k8s.Delete(context.Background(), room) })
	mi := &gamev1.MapInstance{}
	eventually(t, ctx, "a host port", func() error {
		if err := k8s.Get(ctx, client.ObjectKey{Namespace: "default", Name: "fields-field"}, mi); err != nil {
			return err
		}
		if mi.Status.HostPort == 0 {
			return fmt.Errorf("no host port yet (%s)", mi.Status.Phase)
		}
		return nil
	})
	playAt(t, ctx, "fields", "", fmt.Sprintf("ws://%s1:%d/ws", podPrefix, mi.Status.HostPort), pkgclient.Options{})
}
