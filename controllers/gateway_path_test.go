package controllers

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	gamev1 "github.com/roomkeeper/roomkeeper/api/v1"
	"github.com/roomkeeper/roomkeeper/internal/instanced"
	"github.com/roomkeeper/roomkeeper/internal/shards"
)

// TestGatewayPaths: each MapInstance of a room gets a path of its own
// behind a Gateway: a shared map's, a shard's, a party's copy's.
func TestGatewayPaths(t *testing.T) {
	room := &gamev1.GameRoom{ObjectMeta: metav1.ObjectMeta{Namespace: "games", Name: "demo", UID: "u"}}
	town, crypt := gamev1.GameMap{Name: "town"}, gamev1.GameMap{Name: "crypt", Instanced: true}
	for mi, want := range map[*gamev1.MapInstance]string{
		shards.New(room, town, 1): "/games/demo/town/ws",
		shards.New(room, town, 2): "/games/demo/town/s2/ws",
		instanced.New(room, crypt, "demo-crypt-x4k2p", "label", "creator"): "/games/demo/crypt/x4k2p/ws",
	} {
		if got := gatewayPath(mi); got != want {
			t.Errorf("gatewayPath(%s) = %s, want %s", mi.Name, got, want)
		}
	}
}
