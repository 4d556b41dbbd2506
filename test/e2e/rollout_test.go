package e2e

import (
	"context"
	"fmt"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	gamev1 "github.com/roomkeeper/roomkeeper/api/v1"
	"github.com/roomkeeper/roomkeeper/internal/playtest"
	"github.com/roomkeeper/roomkeeper/internal/protocol"
	pkgclient "github.com/roomkeeper/roomkeeper/pkg/client"
)

// databaseRoom is a room of the non-instanced maps on the sample's
// database; its default map is the first.
func databaseRoom(name string, maps ...gamev1.GameMap) *gamev1.GameRoom {
	return &gamev1.GameRoom{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name},
		Spec: gamev1.GameRoomSpec{
			Image: "roomkeeper/roomserver:dev", DefaultMap: maps[0].Name, Maps: maps,
			RoomSettings: gamev1.RoomSettings{
				Database: &gamev1.DatabaseRef{SecretRef: gamev1.SecretKeyRef{Name: "roomkeeper-db", Key: "dsn"}},
			},
		},
	}
}

// TestAnImageChangeKeepsEveryPlayersSession: players are online when the
// room's image changes. The operator starts the new pod beside the old
// one and the old one hands everyone over: each client follows a transfer
// to the new pod by itself (no reconnect, no new join), standing where it
// stood with what it carried, and plays on.
func TestAnImageChangeKeepsEveryPlayersSession(t *testing.T) {
	ctx := cluster(t)
	room := databaseRoom("rollout", gamev1.GameMap{Name: "town", Config: gamev1.MapConfig{Seed: 5, Width: 256, Height: 256, LootDensity: 1}})
	if err := k8s.Create(ctx, room); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = k8s.Delete(context.Background(), room) })
	eventually(t, ctx, "the rollout town Ready", func() error { return mapReady(ctx, "rollout-town") })

	api := joinAPI.Reconnect("default", "rollout", pkgclient.JoinRequest{})
	players := make([]*pkgclient.Client, 3)
	for i := range players {
		players[i] = playAt(t, ctx, "rollout", fmt.Sprintf("rollout-e2e-key-%d", i), "ws://", pkgclient.Options{Reconnect: api})
	}
	loot := nearestLoot(t, ctx, players[0])
	walkTo(t, ctx, players[0], loot)
	picked, err := players[0].Do(ctx, protocol.FeatureLoot, protocol.ActionPickup, protocol.LootPickup{Entity: loot.ID})
	if err != nil || !picked.OK {
		t.Fatalf("pickup: %+v %v", picked, err)
	}
	before := make([]pkgclient.State, len(players))
	oldEndpoint := players[0].Endpoint()
	for i, c := range players {
		before[i] = c.Snapshot()
	}

	eventually(t, ctx, "the image changed", func() error {
		live := &gamev1.GameRoom{}
		if err := k8s.Get(ctx, client.ObjectKeyFromObject(room), live); err != nil {
			return err
		}
		live.Spec.Image = "roomkeeper/roomserver:v2"
		return k8s.Update(ctx, live)
	})
	for i, c := range players {
		s, err := c.WaitFor(ctx, func(s pkgclient.State) bool { return s.Transfers == 1 && s.Sees(c.Welcome().PlayerID) })
		if err != nil {
			t.Fatalf("player %d was not handed over: %v", i, err)
		}
		switch {
		case c.Endpoint() == oldEndpoint || c.Welcome().Instance != "rollout-town":
			t.Errorf("player %d plays at %s on %s, want the new pod of rollout-town", i, c.Endpoint(), c.Welcome().Instance)
		case s.Reconnects != 0 || s.Closed != nil:
			t.Errorf("player %d reconnected %d times (closed: %v): the handover should keep its session", i, s.Reconnects, s.Closed)
		case s.Self.X != before[i].Self.X || s.Self.Y != before[i].Self.Y:
			t.Errorf("player %d stands at (%v,%v) on the new pod, stood at (%v,%v)", i, s.Self.X, s.Self.Y, before[i].Self.X, before[i].Self.Y)
		}
	}
	if inv := players[0].Welcome().Inventory; !playtest.SameItems(inv, picked.Inventory) {
		t.Errorf("inventory on the new pod %+v, acknowledged %+v", inv, picked.Inventory)
	}
	seq, err := players[1].MoveSteps(1, 0, 4)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := players[1].WaitFor(ctx, func(s pkgclient.State) bool { return s.AckSeq >= seq }); err != nil {
		t.Fatalf("moving on the new pod: %v", err)
	}
	next := handoverDone(t, ctx, "rollout-town")

	// kubectl delete pod (a node drain evicts the same way), with a player
	// walking: a pod starts beside the deleted one, which hands everyone
	// over in turn. The walker stands on the new pod where it walked to,
	// not back at a checkpoint.
	walker := players[1]
	from := walker.Snapshot().Self
	if err := k8s.Delete(ctx, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: next}}); err != nil {
		t.Fatal(err)
	}
	const steps = 20
	if _, err := walker.MoveSteps(1, 0, steps); err != nil {
		t.Fatal(err)
	}
	for i, c := range players {
		s, err := c.WaitFor(ctx, func(s pkgclient.State) bool { return s.Transfers == 2 && s.Sees(c.Welcome().PlayerID) })
		if err != nil {
			t.Fatalf("player %d was not handed over from the deleted pod: %v", i, err)
		}
		if s.Reconnects != 0 || s.Closed != nil {
			t.Errorf("player %d reconnected %d times (closed: %v) when its pod was deleted", i, s.Reconnects, s.Closed)
		}
	}
	stepLength := walker.Welcome().PlayerSpeed / float32(walker.Welcome().TickRate)
	if to := walker.Snapshot().Self; to.Y != from.Y || to.X < from.X || to.X > from.X+steps*stepLength+0.01 {
		t.Errorf("the walker went from (%v,%v) to (%v,%v) across the handover: want at most %d steps east", from.X, from.Y, to.X, to.Y, steps)
	}
	if third := handoverDone(t, ctx, "rollout-town"); third == next {
		t.Errorf("the deleted pod %s is still the map's", next)
	}
}

// handoverDone waits for the map's handover to end, with no failure
// counted, and returns the map's pod.
func handoverDone(t *testing.T, ctx context.Context, name string) string {
	t.Helper()
	mi := &gamev1.MapInstance{}
	eventually(t, ctx, "the old pod gone and the handover over", func() error {
		if err := k8s.Get(ctx, client.ObjectKey{Namespace: "default", Name: name}, mi); err != nil {
			return err
		}
		if mi.Status.Handover != nil || mi.Status.PodName == name || mi.Status.RestartCount != 0 {
			return fmt.Errorf("handover %+v, pod %s, restarts %d", mi.Status.Handover, mi.Status.PodName, mi.Status.RestartCount)
		}
		return nil
	})
	return mi.Status.PodName
}
