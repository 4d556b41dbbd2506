package content

import (
	"slices"
	"strings"
	"testing"
)

// Shared loot tables are checked as a whole: every table a line names
// exists, every item a table drops is defined, a line names a kind or a
// table, and no table rolls itself again through any chain of tables.
func TestValidateNamesLootTableFields(t *testing.T) {
	p := packs["crypt"]
	p.Enemies = slices.Clone(p.Enemies)
	p.Enemies[0].Drops = []Drop{{Table: "treasure", PerMille: 100}, {Kind: "bone", Table: "crypt spoils", PerMille: 100}}
	p.LootTables = []LootTable{
		{Name: "crypt spoils", Drops: []Drop{{Kind: "gem", PerMille: 500}, {Table: "deeper", PerMille: 100}}},
		{Name: "deeper", Drops: []Drop{{Kind: "unicorn", PerMille: 10}, {Table: "deepest", PerMille: 10}}},
		{Name: "deepest", Drops: []Drop{{Table: "crypt spoils", PerMille: 10}}},
		{Name: "mirror", Drops: []Drop{{Table: "mirror", PerMille: 1000}}},
		{Name: "empty"},
		{Name: "empty"},
	}
	err := p.Validate()
	if err == nil {
		t.Fatal("a pack with broken loot tables validated")
	}
	for _, field := range []string{
		`enemies[0].drops[0].table: loot table "treasure" is not in lootTables`,
		"enemies[0].drops[1].kind: a drop names an item kind or a loot table",
		`lootTables[1].drops[0].kind: item "unicorn" is not in items`,
		`lootTables[2].drops[0].table: loot table "crypt spoils" rolls itself again: crypt spoils → deeper → deepest → crypt spoils`,
		`lootTables[3].drops[0].table: loot table "mirror" rolls itself again: mirror → mirror`,
		"lootTables[4].drops: a loot table has at least one line",
		`lootTables[5].name: "empty" is empty or defined twice`,
	} {
		if !strings.Contains(err.Error(), field) {
			t.Errorf("the error does not name %s:\n%v", field, err)
		}
	}
	if n := strings.Count(err.Error(), "rolls itself again"); n != 2 {
		t.Errorf("%d cycles reported, want the 2 there are:\n%v", n, err)
	}
}

// Pick rolls a line, and a line that names a table rolls that table with
// the next depth's roll: over every pair of rolls, each kind comes out as
// often as its chances say.
func TestPickRollsNestedTables(t *testing.T) {
	p := packs["crypt"]
	ghoul := p.Enemies[1].Drops
	counts := map[string]int{}
	for r0 := range 1000 {
		for r1 := range 1000 {
			kind, ok := p.Pick(ghoul, func(depth int) int { return []int{r0, r1}[depth] })
			if ok {
				counts[kind]++
			}
		}
	}
	// 600 per mille of spoils, half gems and half potions.
	if want := 600 * 1000 / 2; counts["gem"] != want || counts["potion"] != want || len(counts) != 2 {
		t.Errorf("a ghoul's drops over a million rolls: %v, want %d gems and %d potions", counts, want, want)
	}
}
