package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	gamev1 "github.com/roomkeeper/roomkeeper/api/v1"
	"github.com/roomkeeper/roomkeeper/internal/content"
	"github.com/roomkeeper/roomkeeper/internal/playtest"
	"github.com/roomkeeper/roomkeeper/internal/protocol"
	pkgclient "github.com/roomkeeper/roomkeeper/pkg/client"
)

// TestAPackChangeRollsItsMapsByHandover: a map runs the GameContent it
// names; editing the pack while players are online moves them to a pod on
// the new revision by handover (no reconnect, what they carry kept), and
// the welcome and the join API's definitions agree on the new pack.
func TestAPackChangeRollsItsMapsByHandover(t *testing.T) {
	ctx := cluster(t)
	wilds, _ := content.Named("wilds")
	encoded, err := wilds.Encode()
	if err != nil {
		t.Fatal(err)
	}
	pack := &gamev1.GameContent{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "e2e-safari"}}
	if err := json.Unmarshal(encoded, &pack.Spec); err != nil {
		t.Fatal(err)
	}
	if err := k8s.Create(ctx, pack); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = k8s.Delete(context.Background(), pack) })
	room := databaseRoom("safari", gamev1.GameMap{Name: "town", Config: gamev1.MapConfig{Seed: 5, Width: 256, Height: 256,
		LootDensity: 1, Content: "e2e-safari"}})
	if err := k8s.Create(ctx, room); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = k8s.Delete(context.Background(), room) })
	eventually(t, ctx, "the safari town Ready", func() error { return mapReady(ctx, "safari-town") })

	api := joinAPI.Reconnect("default", "safari", pkgclient.JoinRequest{})
	players := make([]*pkgclient.Client, 3)
	for i := range players {
		players[i] = playAt(t, ctx, "safari", fmt.Sprintf("safari-e2e-key-%d", i), "ws://", pkgclient.Options{Reconnect: api})
	}
	if hash := players[0].Welcome().ContentHash; hash != packHash(t, ctx, "e2e-safari") {
		t.Fatalf("the welcome's contentHash %s is not the join API's e2e-safari", hash)
	}
	loot := nearestLoot(t, ctx, players[0])
	walkTo(t, ctx, players[0], loot)
	picked, err := players[0].Do(ctx, protocol.FeatureLoot, protocol.ActionPickup, protocol.LootPickup{Entity: loot.ID})
	if err != nil || !picked.OK {
		t.Fatalf("pickup: %+v %v", picked, err)
	}

	eventually(t, ctx, "the pack edited", func() error {
		live := &gamev1.GameContent{}
		if err := k8s.Get(ctx, client.ObjectKeyFromObject(pack), live); err != nil {
			return err
		}
		live.Spec.Enemies[0].Name = "tusker"
		return k8s.Update(ctx, live)
	})
	for i, c := range players {
		s, err := c.WaitFor(ctx, func(s pkgclient.State) bool { return s.Transfers == 1 && s.Sees(c.Welcome().PlayerID) })
		if err != nil {
			t.Fatalf("player %d was not handed over to the new revision: %v", i, err)
		}
		if s.Reconnects != 0 || s.Closed != nil {
			t.Errorf("player %d reconnected %d times (closed: %v): the handover should keep its session", i, s.Reconnects, s.Closed)
		}
	}
	newHash := packHash(t, ctx, "e2e-safari")
	defs, err := (&pkgclient.ContentCache{API: joinAPI}).Content(ctx, "default", "safari")
	if err != nil {
		t.Fatal(err)
	}
	if !slices.ContainsFunc(defs.Packs["e2e-safari"].Enemies, func(e protocol.EnemyDefinition) bool { return e.Name == "tusker" }) {
		t.Errorf("the join API's definitions do not have the tusker: %+v", defs.Packs["e2e-safari"].Enemies)
	}
	for i, c := range players {
		if c.Welcome().ContentHash != newHash {
			t.Errorf("player %d's new pod runs %s, want the new revision's definitions %s", i, c.Welcome().ContentHash, newHash)
		}
	}
	if inv := players[0].Welcome().Inventory; !playtest.SameItems(inv, picked.Inventory) {
		t.Errorf("inventory on the new revision %+v, acknowledged %+v", inv, picked.Inventory)
	}
}

// packHash is the hash of a pack's definitions as the join API serves
// them for the safari room.
func packHash(t *testing.T, ctx context.Context, name string) string {
	t.Helper()
	var hash string
	eventually(t, ctx, "the join API's definitions of "+name, func() error {
		defs, err := (&pkgclient.ContentCache{API: joinAPI}).Content(ctx, "default", "safari")
		if err != nil {
			return err
		}
		if hash = defs.Hashes[name]; hash == "" {
			return fmt.Errorf("no pack %s in %v", name, defs.Maps)
		}
		return nil
	})
	return hash
}
