package content

import (
	"encoding/json"
	"slices"
	"testing"

	"github.com/roomkeeper/roomkeeper/internal/protocol"
)

// TestDefinitionsDescribeThePack: a client learns every item's slots and
// stats, the critical ones, the enemies and the boss's phases from the
// definitions, and their hash tells packs apart and stays put.
func TestDefinitionsDescribeThePack(t *testing.T) {
	crypt, _ := Named("crypt")
	d := crypt.Definitions()
	if len(d.Items) != len(crypt.Items) || d.Name != "crypt" || d.Bag.Capacity != crypt.Bag.Capacity {
		t.Fatalf("definitions %+v", d)
	}
	byKind := map[string]protocol.ItemDefinition{}
	for _, it := range d.Items {
		byKind[it.Kind] = it
	}
	if sword := byKind["rusty sword"]; !slices.Equal(sword.Slots, []string{"weapon"}) || sword.Attack != 2 || sword.Trains != "swords" {
		t.Errorf("rusty sword: %+v", sword)
	}
	if crown := byKind["lich crown"]; crown.Requires == nil || crown.Requires.Skill != "swords" || crown.Requires.Level != 3 {
		t.Errorf("lich crown: %+v", crown)
	}
	if key := byKind["crypt key"]; !key.Critical || len(key.Slots) != 0 {
		t.Errorf("crypt key: %+v, want critical and worn nowhere", key)
	}
	if bone := byKind["bone"]; !bone.Stackable || bone.Critical {
		t.Errorf("bone: %+v", bone)
	}
	lich := d.Enemies[len(d.Enemies)-1]
	if !lich.Boss || lich.Name != "lich" || lich.HP != 200 || !slices.Equal(lich.Phases, []int{66, 33}) {
		t.Errorf("the boss: %+v", lich)
	}
	data, err := json.Marshal(d)
	if err != nil {
		t.Fatal(err)
	}
	var back protocol.PackDefinitions
	if err := json.Unmarshal(data, &back); err != nil || back.Hash() != d.Hash() {
		t.Errorf("through JSON: %v, hash %s, want %s", err, back.Hash(), d.Hash())
	}
	wilds, _ := Named("wilds")
	if crypt.Definitions().Hash() != d.Hash() || wilds.Definitions().Hash() == d.Hash() {
		t.Error("the hash is not the pack's alone")
	}
}
