package content

import (
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
