package sim

import (
	"errors"
	"testing"

	"github.com/roomkeeper/roomkeeper/internal/content"
	"github.com/roomkeeper/roomkeeper/internal/mapgen"
)

// gearWorld is a wilds map with one player carrying items.
func gearWorld(t *testing.T, items ...Item) (*World, uint32) {
	t.Helper()
	p, _ := content.Named("wilds")
	tun := Defaults()
	tun.Content = p
	w := NewWorld(testStatic(t, mapgen.Config{Seed: 1, Width: 256, Height: 256}), 30, tun)
	player := w.JoinPlayer(PlayerSpec{Tag: "c1", Inventory: items})
	return w, player
}

// equip reserves and completes one equip, as the room server does after
// its commit.
func equip(w *World, player uint32, item string, slot content.Slot) error {
	eq, err := w.ReserveEquip(player, item, slot)
	if err == nil {
		w.CompleteEquip(player, eq)
	}
	return err
}

// coolDown steps the world past the equipment cooldown.
func coolDown(w *World) {
	for range ticks(w.combat.pack.EquipCooldown, w.combat.tickRate) {
		w.Step()
	}
}

func TestEquipWearsTheItemAndAddsItsStats(t *testing.T) {
	sword := Item{ID: "s1", Kind: "sword"}
	w, player := gearWorld(t, sword, Item{ID: "g1", Kind: "gem"})
	e := w.find(player)
	before := w.fighter(e)
	if err := equip(w, player, "s1", content.Weapon); err != nil {
		t.Fatal(err)
	}
	o := w.Owned(player)
	if len(o.Worn) != 1 || o.Worn[0].Item != sword || o.Worn[0].Slot != content.Weapon || len(o.Bag) != 1 || o.Bag[0].ID != "g1" {
		t.Fatalf("owned %+v", o)
	}
	if got := w.fighter(e).Attack; got != before.Attack+4 {
		t.Errorf("attack with a sword %d, want %d", got, before.Attack+4)
	}
	coolDown(w)
	eq, err := w.ReserveUnequip(player, content.Weapon)
	if err != nil {
		t.Fatal(err)
	}
	w.CompleteEquip(player, eq)
	if o := w.Owned(player); len(o.Worn) != 0 || len(o.Bag) != 2 || w.fighter(e).Attack != before.Attack {
		t.Errorf("after unequip: %+v, attack %d", o, w.fighter(e).Attack)
	}
}

// Every refusal has its error and changes nothing.
func TestEquipRefusals(t *testing.T) {
	w, player := gearWorld(t, Item{ID: "s1", Kind: "sword"}, Item{ID: "sh", Kind: "shield"}, Item{ID: "g1", Kind: "gem"},
		Item{ID: "s2", Kind: "sword"})
	other := w.JoinPlayer(PlayerSpec{Tag: "c2", Inventory: []Item{{ID: "x1", Kind: "sword"}}})
	cases := []struct {
		name string
		item string
		slot content.Slot
		want error
	}{
		{"another's item", "x1", content.Weapon, ErrItemNotFound},
		{"a forged id", "no-such-item", content.Weapon, ErrItemNotFound},
		{"a sword on the head", "s1", content.Head, ErrIllegalSlot},
		{"a gem anywhere", "g1", content.Weapon, ErrIllegalSlot},
		{"no such slot", "s1", content.SlotCount, ErrIllegalSlot},
		{"a shield below melee 2", "sh", content.Offhand, ErrSkillGate},
	}
	for _, c := range cases {
		if _, err := w.ReserveEquip(player, c.item, c.slot); !errors.Is(err, c.want) {
			t.Errorf("%s: %v, want %v", c.name, err, c.want)
		}
	}
	eq, err := w.ReserveEquip(player, "s1", content.Weapon)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := w.ReserveEquip(player, "s2", content.Weapon); !errors.Is(err, ErrEquipLocked) {
		t.Errorf("a slot with a change being saved: %v, want ErrEquipLocked", err)
	}
	if _, _, _, err := w.ReserveDrop(player, "s1"); !errors.Is(err, ErrReserved) {
		t.Errorf("dropping an item being equipped: %v, want ErrReserved", err)
	}
	w.CompleteEquip(player, eq)
	if _, err := w.ReserveEquip(player, "s2", content.Weapon); !errors.Is(err, ErrEquipLocked) {
		t.Errorf("during the cooldown: %v, want ErrEquipLocked", err)
	}
	if _, err := w.ReserveEquip(player, "s1", content.Weapon); !errors.Is(err, ErrWorn) {
		t.Errorf("equipping a worn item: %v, want ErrWorn", err)
	}
	if _, _, _, err := w.ReserveDrop(player, "s1"); !errors.Is(err, ErrWorn) {
		t.Errorf("dropping a worn item: %v, want ErrWorn", err)
	}
	if _, err := w.ReserveUnequip(player, content.Head); !errors.Is(err, ErrSlotEmpty) {
		t.Errorf("unequipping an empty slot: %v, want ErrSlotEmpty", err)
	}
	if o := w.Owned(other); len(o.Bag) != 1 || len(o.Worn) != 0 {
		t.Errorf("the other player's items moved: %+v", o)
	}
}

// A swap puts what the slot held back into the bag; a cancelled change
// leaves everything as it was and frees the slot.
func TestEquipSwapsAndCancels(t *testing.T) {
	w, player := gearWorld(t, Item{ID: "s1", Kind: "sword"}, Item{ID: "s2", Kind: "sword"})
	if err := equip(w, player, "s1", content.Weapon); err != nil {
		t.Fatal(err)
	}
	coolDown(w)
	eq, err := w.ReserveEquip(player, "s2", content.Weapon)
	if err != nil || eq.Swapped.ID != "s1" {
		t.Fatalf("swap reserved %+v, %v", eq, err)
	}
	w.CancelEquip(player, eq)
	if o := w.Owned(player); o.Worn[0].ID != "s1" || len(o.Bag) != 1 {
		t.Fatalf("a cancelled swap changed %+v", o)
	}
	if err := equip(w, player, "s2", content.Weapon); err != nil {
		t.Fatal(err)
	}
	if o := w.Owned(player); o.Worn[0].ID != "s2" || len(o.Bag) != 1 || o.Bag[0].ID != "s1" {
		t.Errorf("after the swap %+v", o)
	}
}

// A player that gave or took a blow cannot change its equipment until it
// has been out of the fight for a while.
func TestEquipIsLockedInCombat(t *testing.T) {
	w, npc := fightWorld(t, "wilds")
	player := w.JoinPlayer(PlayerSpec{Tag: "c1", Inventory: []Item{{ID: "s1", Kind: "sword"}}})
	besides(w, player, npc, 10)
	if err := w.Attack(player, npc); err != nil {
		t.Fatal(err)
	}
	w.Step()
	if _, err := w.ReserveEquip(player, "s1", content.Weapon); !errors.Is(err, ErrEquipLocked) {
		t.Fatalf("in combat: %v, want ErrEquipLocked", err)
	}
	w.find(npc).X += 500 // out of the fight
	for range ticks(combatLinger, 30) {
		w.Step()
	}
	if err := equip(w, player, "s1", content.Weapon); err != nil {
		t.Errorf("out of combat: %v", err)
	}
}

// Kills train the weapon's skill (or melee), which opens skill gates.
func TestKillsTrainSkillsThatOpenGates(t *testing.T) {
	w, player := gearWorld(t, Item{ID: "sh", Kind: "shield"})
	p := w.player(w.find(player))
	for range 3 { // a boar gives 2: 6 experience is melee level 2
		w.train(p, 2)
	}
	if got := w.skillLevel(p, "melee"); got != 2 {
		t.Fatalf("melee level %d after 6 experience, want 2", got)
	}
	if err := equip(w, player, "sh", content.Offhand); err != nil {
		t.Errorf("the shield at melee 2: %v", err)
	}
	rec, _ := w.Record(player)
	if rec.SkillXP["melee"] != 6 {
		t.Errorf("the record keeps %v", rec.SkillXP)
	}
	again := w.JoinPlayer(PlayerSpec{Tag: "c9", SkillXP: rec.SkillXP})
	if got := w.skillLevel(w.player(w.find(again)), "melee"); got != 2 {
		t.Errorf("a restored player has melee %d, want 2", got)
	}
}

// A kill trains the skill of the weapon worn.
func TestAKillTrainsTheWeaponsSkill(t *testing.T) {
	w, npc := fightWorld(t, "wilds")
	player := w.JoinPlayer(PlayerSpec{Tag: "c1", Worn: []Worn{{Item: Item{ID: "s1", Kind: "sword"}, Slot: content.Weapon}}})
	besides(w, player, npc, 10)
	w.find(npc).HP = 1
	if err := w.Attack(player, npc); err != nil {
		t.Fatal(err)
	}
	w.Step()
	o := w.Owned(player)
	if o.Skills[1].Name != "swords" || o.Skills[1].XP != w.combat.pack.Enemies[0].XP || o.Skills[0].XP != 0 {
		t.Errorf("skills after a kill with a sword: %+v", o.Skills)
	}
}

// The bag holds Capacity slots (a stack takes one) and MaxWeight; above
// EncumberedAt the player walks at EncumberedSpeed.
func TestBagLimitsAndEncumbrance(t *testing.T) {
	w, player := gearWorld(t)
	bag := w.combat.pack.Bag
	p := w.player(w.find(player))
	for i := range bag.Capacity - 1 { // a kind the pack does not know weighs 1
		p.inventory = append(p.inventory, Item{ID: string(rune('a' + i)), Kind: "trinket"})
	}
	p.inventory = append(p.inventory, Item{ID: "g", Kind: "gem"})
	w.changed(p)
	if err := w.canCarry(p, Item{ID: "g2", Kind: "gem"}); err != nil {
		t.Errorf("a gem onto the gem stack: %v", err)
	}
	if err := w.canCarry(p, Item{ID: "s", Kind: "trinket"}); !errors.Is(err, ErrBagFull) {
		t.Errorf("a sword into a full bag: %v, want ErrBagFull", err)
	}
	p.inventory = p.inventory[:1]
	p.inventory = append(p.inventory, Item{ID: "h", Kind: "hide"})
	for range int(bag.MaxWeight / 2) {
		p.inventory = append(p.inventory, Item{ID: "h", Kind: "hide"})
	}
	w.changed(p)
	if err := w.canCarry(p, Item{ID: "s", Kind: "sword"}); !errors.Is(err, ErrTooHeavy) {
		t.Errorf("a sword over the weight: %v, want ErrTooHeavy (weight %v)", err, w.Owned(player).Weight)
	}
	if p.speed != w.tun.PlayerSpeed*bag.EncumberedSpeed {
		t.Errorf("speed %v at weight %v, want %v", p.speed, w.Owned(player).Weight, w.tun.PlayerSpeed*bag.EncumberedSpeed)
	}
	x := w.find(player).X
	w.QueueInput(player, Input{Seq: 1, X: 1})
	w.Step()
	if got, want := w.find(player).X-x, p.speed/30; !near(got, want) {
		t.Errorf("an encumbered step moved %v, want %v", got, want)
	}
}

func near(a, b float32) bool { return a-b < 1e-4 && b-a < 1e-4 }

// TestWhatAPackNoLongerHasIsKept: a character saved under an older pack
// keeps what the new pack does not define (docs/content.md, "When a pack
// changes"): an item of an unknown kind stays in its bag, weighs 1 and is
// worn nowhere; one worn in a slot its kind no longer fits goes to the
// bag; experience in a skill the pack dropped is saved back as it was.
func TestWhatAPackNoLongerHasIsKept(t *testing.T) {
	p, _ := content.Named("wilds")
	tun := Defaults()
	tun.Content = p
	w := NewWorld(testStatic(t, mapgen.Config{Seed: 1, Width: 256, Height: 256}), 30, tun)
	relic, helm := Item{ID: "r1", Kind: "relic"}, Item{ID: "h1", Kind: "gem"}
	player := w.JoinPlayer(PlayerSpec{Tag: "c1", Inventory: []Item{relic},
		Worn:    []Worn{{Item: helm, Slot: content.Head}},
		SkillXP: map[string]int{"melee": 7, "alchemy": 12}})
	o := w.Owned(player)
	if len(o.Worn) != 0 || len(o.Bag) != 2 {
		t.Fatalf("owned %+v: want the relic and the gem, unworn, in the bag", o)
	}
	if o.Weight != 1+0.1 {
		t.Errorf("weight %v, want the unknown relic's 1 and the gem's 0.1", o.Weight)
	}
	if _, err := w.ReserveEquip(player, "r1", content.Head); !errors.Is(err, ErrIllegalSlot) {
		t.Errorf("wearing the unknown relic: %v, want ErrIllegalSlot", err)
	}
	rec, ok := w.Record(player)
	if !ok || rec.SkillXP["alchemy"] != 12 || rec.SkillXP["melee"] != 7 {
		t.Errorf("saved experience %v, want alchemy kept beside melee", rec.SkillXP)
	}
}
