package e2e

import (
	"cmp"
	"context"
	"slices"
	"testing"

	"github.com/roomkeeper/roomkeeper/internal/content"
	"github.com/roomkeeper/roomkeeper/internal/protocol"
	"github.com/roomkeeper/roomkeeper/internal/roomserver"
	pkgclient "github.com/roomkeeper/roomkeeper/pkg/client"
)

// nearestSword is the nearest of the map's generated swords that still
// lies where it spawned, as c sees it (walking towards the others while
// none is in sight).
func nearestSword(t *testing.T, ctx context.Context, c *pkgclient.Client) protocol.EntityState {
	t.Helper()
	static, w := c.Static(), c.Welcome()
	pack := content.ForMap(static.Config.Content, static.Config.Biome)
	var spawns []protocol.EntityState
	for i, p := range static.LootSpawns {
		if pack.GroundLootKind(roomserver.GroundLootID(w.Instance, i)) == "sword" {
			spawns = append(spawns, protocol.EntityState{Kind: protocol.EntityLoot, X: float32(p.X), Y: float32(p.Y)})
		}
	}
	self := c.Snapshot().Self
	slices.SortFunc(spawns, func(a, b protocol.EntityState) int { return cmp.Compare(dist2(a, self), dist2(b, self)) })
	for _, s := range spawns {
		walkTo(t, ctx, c, s)
		if loot, ok := lootAt(c.Snapshot(), s); ok {
			return loot
		}
	}
	t.Fatalf("none of the %d swords of %s lies where it spawned", len(spawns), w.Instance)
	return protocol.EntityState{}
}

func dist2(a, b protocol.EntityState) float32 {
	dx, dy := a.X-b.X, a.Y-b.Y
	return dx*dx + dy*dy
}

// lootAt is the loot entity c's state shows at p, if any.
func lootAt(s pkgclient.State, p protocol.EntityState) (protocol.EntityState, bool) {
	for _, e := range s.Entities {
		if e.Kind == protocol.EntityLoot && e.X == p.X && e.Y == p.Y {
			return e, true
		}
	}
	return protocol.EntityState{}, false
}

// wearNearestSword has c's player pick up the nearest sword and wear it,
// and returns the sword's id.
func wearNearestSword(t *testing.T, ctx context.Context, c *pkgclient.Client) string {
	t.Helper()
	if _, err := c.WaitFor(ctx, func(s pkgclient.State) bool { return s.Sees(c.Welcome().PlayerID) }); err != nil {
		t.Fatal(err)
	}
	sword := nearestSword(t, ctx, c)
	picked, err := c.Do(ctx, protocol.FeatureLoot, protocol.ActionPickup, protocol.LootPickup{Entity: sword.ID})
	if err != nil || !picked.OK {
		t.Fatalf("pickup: %+v %v", picked, err)
	}
	i := slices.IndexFunc(picked.Inventory, func(it protocol.ItemView) bool { return it.Kind == "sword" && it.Slot == "" })
	if i < 0 {
		t.Fatalf("no sword in the bag after the pickup: %+v", picked.Inventory)
	}
	item := picked.Inventory[i].ID
	equipped, err := c.Do(ctx, protocol.FeatureInventory, protocol.ActionEquip, protocol.InventoryEquip{Item: item, Slot: "weapon"})
	if err != nil || !equipped.OK || !slices.Contains(equipped.Inventory, protocol.ItemView{ID: item, Kind: "sword", Slot: "weapon"}) {
		t.Fatalf("equip: %+v %v", equipped, err)
	}
	return item
}

// TestAWornSwordStaysWornOnTheLocalCluster: a player of the sample town
// picks up a sword and wears it; the inventory channel shows it worn with
// its weight; joining again through the join API, the player still wears
// it.
func TestAWornSwordStaysWornOnTheLocalCluster(t *testing.T) {
	ctx := cluster(t)
	c := play(t, ctx, "ivy-e2e-key")
	worn := protocol.ItemView{ID: wearNearestSword(t, ctx, c), Kind: "sword", Slot: "weapon"}
	if _, err := c.WaitFor(ctx, func(s pkgclient.State) bool {
		return s.Inventory != nil && slices.Contains(s.Inventory.Items, worn) && s.Inventory.Weight >= 3
	}); err != nil {
		t.Fatalf("the inventory channel never showed the sword worn: %v", err)
	}
	_ = c.Close()
	again := play(t, ctx, "ivy-e2e-key")
	if inv := again.Welcome().Inventory; !slices.Contains(inv, worn) {
		t.Errorf("joining again: %+v, want the sword worn", inv)
	}
}
