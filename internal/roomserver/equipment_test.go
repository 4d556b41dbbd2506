package roomserver

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"testing"

	"github.com/gorilla/websocket"

	"github.com/roomkeeper/roomkeeper/internal/content"
	"github.com/roomkeeper/roomkeeper/internal/protocol"
	"github.com/roomkeeper/roomkeeper/internal/sim"
	"github.com/roomkeeper/roomkeeper/internal/store"
	"github.com/roomkeeper/roomkeeper/pkg/client"
)

// give stores items as the character's (kind, and slot when worn), as
// earlier pickups and equips would have.
func give(t *testing.T, db *store.Postgres, character string, items ...store.Item) {
	t.Helper()
	ctx := context.Background()
	if err := db.EnsureCharacter(ctx, character, "user-"+character); err != nil {
		t.Fatal(err)
	}
	for _, it := range items {
		if _, err := db.DB().ExecContext(ctx, `INSERT INTO item_ownership (item_id, kind, owner_kind, owner_id, slot, revision)
VALUES ($1, $2, 'character', $3, $4, 1)`, it.ItemID, it.Kind, character, it.Slot); err != nil {
			t.Fatal(err)
		}
	}
}

// equipCmd and unequipCmd send the commands and wait for their acks.
func equipCmd(t *testing.T, c *client.Client, item, slot string) protocol.Ack {
	t.Helper()
	return command(t, c, protocol.FeatureInventory, protocol.ActionEquip, protocol.InventoryEquip{Item: item, Slot: slot})
}

func unequipCmd(t *testing.T, c *client.Client, slot string) protocol.Ack {
	t.Helper()
	return command(t, c, protocol.FeatureInventory, protocol.ActionUnequip, protocol.InventoryUnequip{Slot: slot})
}

// wantRefused fails unless ack is a refusal with code.
func wantRefused(t *testing.T, what string, ack protocol.Ack, code protocol.Code) {
	t.Helper()
	if ack.OK || ack.Code != code {
		t.Errorf("%s: %+v, want %s", what, ack, code)
	}
}

// worn is where the database has the character's items: slot by item id
// ("" in the bag).
func worn(t *testing.T, db *store.Postgres, character string) map[string]string {
	t.Helper()
	items, err := db.ItemsOf(context.Background(), character)
	if err != nil {
		t.Fatal(err)
	}
	at := map[string]string{}
	for _, it := range items {
		at[it.ItemID] = it.Slot
	}
	return at
}

// equipAfterCooldown equips, retrying while the slot cools down.
func equipAfterCooldown(t *testing.T, c *client.Client, item, slot string) protocol.Ack {
	t.Helper()
	var ack protocol.Ack
	poll(t, func() error {
		if ack = equipCmd(t, c, item, slot); ack.Code == protocol.CodeEquipLocked {
			return errors.New("the slot is still cooling down")
		}
		return nil
	})
	return ack
}

// Every equip rule answers its code over the socket, changes nothing when
// it refuses, and an accepted equip is in the database before its ack.
func TestEquipmentRulesOverTheSocket(t *testing.T) {
	db, _ := newDB(t)
	h := persistentHarness(t, db, nil, nil)
	waitReady(t, h)
	give(t, db, "ivy", store.Item{ItemID: "s1", Kind: "sword"}, store.Item{ItemID: "s2", Kind: "sword"},
		store.Item{ItemID: "sh", Kind: "shield"}, store.Item{ItemID: "g1", Kind: "gem"})
	give(t, db, "jon", store.Item{ItemID: "x1", Kind: "sword"})
	c := h.join(character("ivy"))
	if w := c.Welcome(); len(w.Inventory) != 4 || w.Bag.Capacity != 20 || w.Bag.EncumberedSpeed != 0.6 {
		t.Fatalf("welcome inventory %+v, bag %+v", w.Inventory, w.Bag)
	}
	for _, r := range []struct {
		what, item, slot string
		code             protocol.Code
	}{
		{"another character's item", "x1", "weapon", protocol.CodeItemNotFound},
		{"a forged item id", "demo-town/loot/999999", "weapon", protocol.CodeItemNotFound},
		{"a sword on the head", "s1", "head", protocol.CodeIllegalSlot},
		{"a slot that does not exist", "s1", "belt", protocol.CodeIllegalSlot},
		{"a gem in the hand", "g1", "weapon", protocol.CodeIllegalSlot},
		{"a shield below melee 2", "sh", "offhand", protocol.CodeSkillGate},
	} {
		wantRefused(t, r.what, equipCmd(t, c, r.item, r.slot), r.code)
	}
	wantRefused(t, "unequipping an empty slot", unequipCmd(t, c, "head"), protocol.CodeItemNotFound)
	wantRefused(t, "unequipping a slot that does not exist", unequipCmd(t, c, "tail"), protocol.CodeIllegalSlot)
	wantRefused(t, "an item id that is a number", command(t, c, protocol.FeatureInventory, protocol.ActionEquip,
		json.RawMessage(`{"item":5,"slot":"weapon"}`)), protocol.CodeBadRequest)
	if got := worn(t, db, "ivy"); got["s1"] != "" || got["x1"] != "" || len(got) != 4 {
		t.Fatalf("refusals changed the database: %v", got)
	}

	ack := equipCmd(t, c, "s1", "weapon")
	if !ack.OK || !slices.Contains(ack.Inventory, protocol.ItemView{ID: "s1", Kind: "sword", Slot: "weapon"}) {
		t.Fatalf("equip: %+v", ack)
	}
	if got := worn(t, db, "ivy"); got["s1"] != "weapon" {
		t.Fatalf("acked, but the database has %v", got)
	}
	wantRefused(t, "a second sword during the cooldown", equipCmd(t, c, "s2", "weapon"), protocol.CodeEquipLocked)
	wantRefused(t, "dropping the worn sword", command(t, c, protocol.FeatureInventory, protocol.ActionDrop,
		protocol.InventoryDrop{Item: "s1"}), protocol.CodeInvalidAction)
	wantRefused(t, "equipping the worn sword again", equipCmd(t, c, "s1", "weapon"), protocol.CodeInvalidAction)

	if ack := equipAfterCooldown(t, c, "s2", "weapon"); !ack.OK {
		t.Fatalf("the swap: %+v", ack)
	}
	if got := worn(t, db, "ivy"); got["s2"] != "weapon" || got["s1"] != "" {
		t.Fatalf("after the swap the database has %v", got)
	}
	s := waitFor(t, c, "the swap in the inventory channel", func(s client.State) bool {
		return s.Inventory != nil && slices.Contains(s.Inventory.Items, protocol.ItemView{ID: "s2", Kind: "sword", Slot: "weapon"})
	})
	if len(s.Inventory.Items) != 4 || s.Inventory.Weight != 3+3+5+0.1 || len(s.Inventory.Skills) != 2 {
		t.Errorf("the inventory channel: %+v", s.Inventory)
	}
}

// A player sees its own inventory channel, in both codecs, and never
// anybody else's.
func TestTheInventoryChannelIsTheOwnersOnly(t *testing.T) {
	db, _ := newDB(t)
	h := persistentHarness(t, db, nil, nil)
	waitReady(t, h)
	give(t, db, "kim", store.Item{ItemID: "k1", Kind: "sword"})
	give(t, db, "lou", store.Item{ItemID: "l1", Kind: "gem"})
	kim := h.join(character("kim"))
	lou := h.dial(protocol.Hello{Ticket: h.ticket(character("lou")), Codec: protocol.CodecBinary}, client.Options{})
	waitFor(t, kim, "lou in sight", func(s client.State) bool { return s.Sees(lou.Welcome().PlayerID) })
	if ack := equipCmd(t, kim, "k1", "weapon"); !ack.OK {
		t.Fatal(ack)
	}
	waitFor(t, kim, "kim's sword worn", func(s client.State) bool {
		return s.Inventory != nil && len(s.Inventory.Items) == 1 && s.Inventory.Items[0].Slot == "weapon"
	})
	tick := kim.Snapshot().Tick
	s := waitFor(t, lou, "a snapshot after kim's equip", func(s client.State) bool { return s.Tick > tick && s.Inventory != nil })
	if len(s.Inventory.Items) != 1 || s.Inventory.Items[0].ID != "l1" {
		t.Errorf("lou's inventory channel holds %+v", s.Inventory.Items)
	}
}

// A command repeated with the seq of one that ran, after the connection
// dropped and resumed, is answered with the first one's ack and is
// committed once.
func TestARepeatedEquipSeqIsAnsweredOnceAcrossAResume(t *testing.T) {
	db, _ := newDB(t)
	h := persistentHarness(t, db, nil, nil)
	waitReady(t, h)
	give(t, db, "max", store.Item{ItemID: "m1", Kind: "sword"})
	c := h.join(character("max"))
	seq, err := c.Command(protocol.FeatureInventory, protocol.ActionEquip, protocol.InventoryEquip{Item: "m1", Slot: "weapon"})
	if err != nil {
		t.Fatal(err)
	}
	first := waitFor(t, c, "the equip's ack", func(s client.State) bool { return len(acksOf(s, seq)) == 1 })
	if ack := acksOf(first, seq)[0]; !ack.OK {
		t.Fatalf("equip: %+v", ack)
	}
	token := c.Welcome().ResumeToken
	if err := c.Drop(); err != nil {
		t.Fatal(err)
	}
	r := h.dial(protocol.Hello{Resume: token}, client.Options{})
	payload, _ := json.Marshal(protocol.InventoryEquip{Item: "m1", Slot: "weapon"})
	again, _ := json.Marshal(protocol.Envelope{V: protocol.Version, Kind: protocol.KindCommand, Seq: seq,
		Feature: protocol.FeatureInventory, Action: protocol.ActionEquip, Payload: payload})
	if err := r.SendRaw(websocket.TextMessage, again); err != nil {
		t.Fatal(err)
	}
	s := waitFor(t, r, "the repeated seq's ack", func(s client.State) bool { return len(acksOf(s, seq)) == 1 })
	if got, want := fmt.Sprint(acksOf(s, seq)[0]), fmt.Sprint(acksOf(first, seq)[0]); got != want {
		t.Errorf("the repeat was answered %s, the first %s", got, want)
	}
	events, err := db.EventsOf(context.Background(), "max")
	if err != nil || len(events) != 1 || events[0].Kind != "inventory.equip" {
		t.Errorf("events %+v %v, want the one equip", events, err)
	}
}

// Worn items survive a crash: the character comes back wearing them.
func TestWornItemsSurviveACrash(t *testing.T) {
	db, _ := newDB(t)
	keys := newKeys(t)
	h := persistentHarness(t, db, keys, nil)
	waitReady(t, h)
	give(t, db, "ned", store.Item{ItemID: "n1", Kind: "sword"}, store.Item{ItemID: "n2", Kind: "gem"})
	c := h.join(character("ned"))
	if ack := equipCmd(t, c, "n1", "weapon"); !ack.OK {
		t.Fatal(ack)
	}
	h.crash()
	h2 := persistentHarness(t, db, keys, nil)
	waitReady(t, h2)
	back := h2.join(character("ned"))
	if w := back.Welcome(); !slices.Contains(w.Inventory, protocol.ItemView{ID: "n1", Kind: "sword", Slot: "weapon"}) {
		t.Fatalf("after the crash ned has %+v", w.Inventory)
	}
	var owned *sim.Owned
	st := h2.srv.seats.of("ned")
	if err := h2.srv.loop.Do(waitCtx(t), func(w *sim.World) { owned = w.Owned(st.player) }); err != nil {
		t.Fatal(err)
	}
	if len(owned.Worn) != 1 || owned.Worn[0].ID != "n1" || owned.Worn[0].Slot != content.Weapon || len(owned.Bag) != 1 {
		t.Errorf("the world has ned wearing %+v, carrying %+v", owned.Worn, owned.Bag)
	}
}

// A full bag refuses a pickup with inventory_full, and the loot stays.
func TestAFullBagRefusesAPickup(t *testing.T) {
	db, _ := newDB(t)
	h := persistentHarness(t, db, nil, nil)
	waitReady(t, h)
	var items []store.Item
	for i := range 20 { // a kind no pack knows weighs 1 and does not stack
		items = append(items, store.Item{ItemID: fmt.Sprint("t", i), Kind: "trinket"})
	}
	give(t, db, "ola", items...)
	c := h.join(character("ola"))
	loot := nearestLoot(t, c)
	walkTo(t, c, loot)
	wantRefused(t, "a pickup into a full bag", pickup(t, c, loot), protocol.CodeInventoryFull)
	if got := worn(t, db, "ola"); len(got) != 20 {
		t.Errorf("the database has %d items, want 20", len(got))
	}
}
