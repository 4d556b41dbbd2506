package cluster

import (
	"net/url"
	"slices"
	"strconv"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	gamev1 "github.com/roomkeeper/roomkeeper/api/v1"
	"github.com/roomkeeper/roomkeeper/controllers"
	pkgclient "github.com/roomkeeper/roomkeeper/pkg/client"
)

// TestAHostPortRoomIsPlayedOnItsNodesAddress: a room with exposure
// HostPort, in a namespace that allows hostPort, gets a port of the
// manager's range; its endpoint is the address of the node its pod runs
// on, where the CNI portmap plugin forwards the port to the pod. A player
// from outside the pod network joins and plays there.
func TestAHostPortRoomIsPlayedOnItsNodesAddress(t *testing.T) {
	ctx := installed(t, 5*time.Minute)
	room := createRoom(t, ctx, &gamev1.GameRoom{
		ObjectMeta: metav1.ObjectMeta{Namespace: hostPortNamespace, Name: "fields"},
		Spec: gamev1.GameRoomSpec{DefaultMap: "field",
			Maps:         []gamev1.GameMap{{Name: "field", Config: gamev1.MapConfig{Seed: 3, Width: 128, Height: 128}}},
			RoomSettings: gamev1.RoomSettings{Exposure: gamev1.Exposure{Type: gamev1.ExposureHostPort}}},
	})
	endpoint := waitReady(t, ctx, hostPortNamespace, gamev1.MapInstanceName(room.Name, "field"))
	u, err := url.Parse(endpoint)
	if err != nil {
		t.Fatal(err)
	}
	ports := controllers.DefaultHostPortRange
	if p, _ := strconv.Atoi(u.Port()); !slices.Contains(suite.nodeAddresses, u.Hostname()) || p < int(ports.Min) || p > int(ports.Max) {
		t.Fatalf("the endpoint %s is not a node address (%v) and a port of %s", endpoint, suite.nodeAddresses, ports)
	}
	joined := join(t, ctx, hostPortNamespace, room.Name, pkgclient.JoinRequest{AuthKey: "hostport-player"})
	player := play(t, ctx, joined, pkgclient.Options{NetDialContext: dialInCluster})
	moveAndAck(t, ctx, player)

	// Its pod hands over like any other: bots stay connected through
	// kubectl delete pod and a rollout, each time to the new pod's own
	// port, which then is the map's.
	bots := startBots(t, ctx, hostPortNamespace, room.Name, handoverBots, pkgclient.Options{NetDialContext: dialInCluster})
	name := gamev1.MapInstanceName(room.Name, "field")
	pod := mapPodIn(t, ctx, hostPortNamespace, name)
	if _, err := kubectl("", "-n", hostPortNamespace, "delete", "pod", pod.Name, "--wait=false"); err != nil {
		t.Fatal(err)
	}
	bots.expectTransfers(t, ctx, "kubectl delete pod", 1)
	mapPodIn(t, ctx, hostPortNamespace, name) // the handover over
	before := waitReady(t, ctx, hostPortNamespace, name)
	setImage(t, ctx, room, loadImage(t, suite.version+"-next"))
	bots.expectTransfers(t, ctx, "a rollout", 2)
	bots.stop(t)
	bots.logAcks(t, "a HostPort room through kubectl delete pod and a rollout")
	mapPodIn(t, ctx, hostPortNamespace, name)
	after := waitReady(t, ctx, hostPortNamespace, name)
	if after == before {
		t.Errorf("the map's endpoint is still %s after the rollout: want the new pod's port", after)
	}
	for i, p := range bots.players {
		if p.Endpoint() != after {
			t.Errorf("bot %d plays at %s, the map's endpoint is %s", i, p.Endpoint(), after)
		}
	}
	expectNoForbidden(t, hostPortNamespace)
}
