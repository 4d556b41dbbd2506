package e2e

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	"sigs.k8s.io/controller-runtime/pkg/client"

	gamev1 "github.com/roomkeeper/roomkeeper/api/v1"
	"github.com/roomkeeper/roomkeeper/internal/protocol"
	pkgclient "github.com/roomkeeper/roomkeeper/pkg/client"
)

// TestAPartyTakesAWarmInstance: on the local cluster, with the manager's
// own RBAC, a room keeps a warm crypt; a party walking through the portal
// lands on that very instance (no pod to start), and the operator starts
// another in its place. (docs/benchmarks.md has the crossing's time.)
func TestAPartyTakesAWarmInstance(t *testing.T) {
	ctx, cancel := context.WithTimeout(cluster(t), 4*time.Minute)
	defer cancel()
	room := dungeonRoom()
	room.Name, room.Spec.Maps[1].Warm = "warm", 1
	if err := k8s.Create(ctx, room); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = k8s.Delete(context.Background(), room) })
	var warm string
	eventually(t, ctx, "the warm crypt Ready", func() error {
		var err error
		warm, err = readyWarm(ctx)
		return err
	})

	party, err := joinAPI.CreateParty(ctx, "default", "warm", "warm-leader-key")
	if err != nil {
		t.Fatal(err)
	}
	var c *pkgclient.Client
	eventually(t, ctx, "joining the town", func() error {
		res, err := joinAPI.Join(ctx, "default", "warm", pkgclient.JoinRequest{AuthKey: "warm-leader-key", PartyToken: party.Token})
		if err == nil {
			c, err = pkgclient.Dial(ctx, res.Endpoint, protocol.Hello{Ticket: res.Ticket}, pkgclient.Options{})
		}
		return err
	})
	t.Cleanup(func() { _ = c.Close() })
	throughPortal(t, ctx, c, "crypt")
	if got := c.Welcome().Instance; got != warm || c.Welcome().Party != party.Party {
		t.Fatalf("the party landed on %s in party %q, want the warm %s in %s", got, c.Welcome().Party, warm, party.Party)
	}
	eventually(t, ctx, "another warm crypt Ready in its place", func() error {
		next, err := readyWarm(ctx)
		if err == nil && next == warm {
			err = errors.New("the claimed instance still counts as warm")
		}
		return err
	})
}

// readyWarm is the warm room's one unclaimed crypt instance, once it is
// Ready and the room's WarmPoolsReady condition says so.
func readyWarm(ctx context.Context) (string, error) {
	var list gamev1.MapInstanceList
	if err := k8s.List(ctx, &list, client.InNamespace("default"),
		client.MatchingLabels{gamev1.LabelRoom: "warm", gamev1.LabelPool: gamev1.PoolWarm}); err != nil {
		return "", err
	}
	room := &gamev1.GameRoom{}
	if err := k8s.Get(ctx, client.ObjectKey{Namespace: "default", Name: "warm"}, room); err != nil {
		return "", err
	}
	if len(list.Items) != 1 || !meta.IsStatusConditionTrue(room.Status.Conditions, gamev1.ConditionWarmPoolsReady) {
		return "", fmt.Errorf("%d warm instances, room status %q", len(list.Items), room.Status.Warm)
	}
	return list.Items[0].Name, nil
}
