package content

import (
	"reflect"
	"slices"
	"strings"
	"testing"
)

func TestBuiltInPacksAreValid(t *testing.T) {
	for name, p := range packs {
		if err := p.Validate(); err != nil {
			t.Errorf("pack %s: %v", name, err)
		}
		if p.Name != name {
			t.Errorf("pack %s calls itself %s", name, p.Name)
		}
	}
	if ForBiome("dungeon").Name != "crypt" || ForBiome("meadow").Name != "wilds" || ForBiome("").Name != "wilds" {
		t.Error("ForBiome picks the wrong packs")
	}
	if ForMap("crypt", "meadow").Name != "crypt" || ForMap("", "dungeon").Name != "crypt" || ForMap("zoo", "forest").Name != "wilds" {
		t.Error("ForMap picks the wrong packs")
	}
}

// A bad pack is refused with every bad field named.
func TestValidateNamesTheFields(t *testing.T) {
	p := packs["crypt"]
	p.Enemies = append([]EnemyType(nil), p.Enemies...)
	p.Enemies[1].AggroRadius = 200
	p.Enemies[1].Cooldown = -1
	p.Enemies[0].Weight = 0
	p.Player.HP = 0
	p.Enemies[1].Drops = []Drop{{Kind: "gem", PerMille: 700}, {Kind: "", PerMille: 400}}
	err := p.Validate()
	if err == nil {
		t.Fatal("a bad pack validated")
	}
	for _, field := range []string{"enemies[1].aggroRadius", "enemies[1].cooldown", "enemies[0].weight", "player.hp",
		"enemies[1].drops[1].kind", "enemies[1].drops: the chances add up to 1100"} {
		if !strings.Contains(err.Error(), field) {
			t.Errorf("the error does not name %s: %v", field, err)
		}
	}
	if err := (Pack{Player: player}).Validate(); err == nil || !strings.Contains(err.Error(), "enemies") || !strings.Contains(err.Error(), "groundLoot") {
		t.Errorf("a pack without enemies: %v", err)
	}
}

// Bad items, skills, bag and policies are refused with the field named.
func TestValidateNamesItemAndPolicyFields(t *testing.T) {
	p := packs["crypt"]
	p.Items = append(slices.Clone(p.Items), ItemDef{Kind: "gem"}, ItemDef{Kind: "axe", Slots: 1 << 7, Weight: -1,
		Requires: SkillReq{Skill: "axes", Level: 0}, Trains: "axes"}, ItemDef{Kind: "ring", Slots: Hands.Mask(), Stackable: true})
	p.GroundLoot = append(slices.Clone(p.GroundLoot), "feather")
	p.Skills = []SkillDef{{Name: "melee", Levels: []int{5, 3}}}
	p.BaseSkill = "archery"
	p.Bag = Bag{Capacity: 0, MaxWeight: 10, EncumberedAt: 20, EncumberedSpeed: 2}
	p.EquipCooldown = -1
	p.Critical = []CriticalPolicy{
		{Kind: "crypt key", Type: "forever", Anchors: []Anchor{{Room: AnchorKeyRoom}}},
		{Kind: "gem", Type: RegenerativeUnique, CooldownTicks: -5},
		{Kind: "candle", Type: InstanceQuota, Quota: 3, Anchors: []Anchor{{X: 1, Y: 1}, {Room: "attic"}}, QuestGate: "dawn"},
		{Kind: "unicorn", Type: UniquePersistent, Anchors: []Anchor{{X: -1, Y: 2}}, OfflineTimeout: -3},
	}
	err := p.Validate()
	if err == nil {
		t.Fatal("a bad pack validated")
	}
	for _, field := range []string{
		`items[8].kind: "gem" is defined twice`, "items[9].slots", "items[9].weight", "items[9].requires.skill", "items[9].requires.level",
		"items[9].trains", "items[10].stackable", `groundLoot[4]: item "feather"`, "skills[0].levels", `baseSkill: "archery"`,
		"bag.capacity", "bag.encumberedAt", "bag.encumberedSpeed", "equipCooldown",
		`critical[0].type: "forever"`, "critical[1].anchors: at least one anchor", "critical[1].cooldownTicks: -5 is negative",
		"critical[2].quota: 3 is not within 1 to the 2 anchors", `critical[2].anchors[1].room: "attic"`, `critical[2].questGate: "dawn"`,
		`critical[3].kind: "unicorn"`, "critical[3].anchors[0]", "critical[3].offlineTimeout",
	} {
		if !strings.Contains(err.Error(), field) {
			t.Errorf("the error does not name %s:\n%v", field, err)
		}
	}
}

// SpeedFactor slows a character above EncumberedAt only.
func TestSpeedFactor(t *testing.T) {
	b := Bag{Capacity: 20, MaxWeight: 40, EncumberedAt: 25, EncumberedSpeed: 0.6}
	for _, c := range []struct{ weight, want float32 }{{0, 1}, {25, 1}, {25.01, 0.6}, {40, 0.6}} {
		if got := b.SpeedFactor(c.weight); got != c.want {
			t.Errorf("SpeedFactor(%v) = %v, want %v", c.weight, got, c.want)
		}
	}
}

// TestEveryBuiltInPackSurvivesItsJSONForm: what a GameContent carries is
// the same pack the server would have built in.
func TestEveryBuiltInPackSurvivesItsJSONForm(t *testing.T) {
	for _, name := range Names() {
		p, _ := Named(name)
		encoded, err := p.Encode()
		if err != nil {
			t.Fatal(err)
		}
		back, err := Decode(encoded)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if !reflect.DeepEqual(normalized(back), normalized(p)) {
			t.Errorf("%s changed on its way through JSON:\n%+v\n%+v", name, back, p)
		}
		again, _ := back.Encode()
		if Revision(again) != Revision(encoded) {
			t.Errorf("%s: the revision changed on a round trip", name)
		}
	}
}

// normalized makes empty and absent lists alike, as JSON does.
func normalized(p Pack) Pack {
	if len(p.Critical) == 0 {
		p.Critical = nil
	}
	return p
}

func TestAPackWithAnUnknownFieldOrSlotIsRefused(t *testing.T) {
	p, _ := Named("crypt")
	good, _ := p.Encode()
	for name, bad := range map[string]string{
		"unknown field": strings.Replace(string(good), `"baseSkill"`, `"baseSkil":"x","baseSkill"`, 1),
		"unknown slot":  strings.Replace(string(good), `"slots":["weapon"]`, `"slots":["tail"]`, 1),
		"invalid pack":  strings.Replace(string(good), `"perMille":500`, `"perMille":5000`, 1),
	} {
		if bad == string(good) {
			t.Fatalf("%s: the case changed nothing", name)
		}
		if _, err := Decode([]byte(bad)); err == nil {
			t.Errorf("%s: decoded", name)
		}
	}
}
