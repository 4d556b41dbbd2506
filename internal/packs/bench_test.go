package packs

import (
	"bytes"
	"compress/gzip"
	"encoding/json"
	"fmt"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	gamev1 "github.com/roomkeeper/roomkeeper/api/v1"
	"github.com/roomkeeper/roomkeeper/internal/content"
)

// bigPack is the budget pack: 500 items, 100 enemies, and 50
// shared loot tables that the enemies' drops roll (two enemies a table),
// each table rolling the next one in a line (a chain of 50 for the
// cycle check to walk), as a GameContent.
func bigPack(tb testing.TB) *gamev1.GameContent {
	tb.Helper()
	p, _ := content.Named("crypt")
	p.Name = "big"
	base := p.Items
	p.Items = nil
	for i := range 500 - len(base) {
		d := content.ItemDef{Kind: fmt.Sprintf("item-%03d", i), Weight: 1 + float32(i%7), Attack: i % 5, Defence: i % 3}
		switch i % 4 {
		case 0:
			d.Slots = content.Weapon.Mask()
			d.Trains = "swords"
		case 1:
			d.Slots = content.Head.Mask() | content.Chest.Mask()
			d.Requires = content.SkillReq{Skill: "melee", Level: 2}
		case 2:
			d.Stackable = true
		}
		p.Items = append(p.Items, d)
	}
	p.Items = append(p.Items, base...)
	enemy := p.Enemies[0]
	p.Enemies = nil
	p.LootTables = nil
	for t := range 50 {
		table := content.LootTable{Name: fmt.Sprintf("table-%02d", t),
			Drops: []content.Drop{{Kind: fmt.Sprintf("item-%03d", t*9), PerMille: 300}, {Kind: fmt.Sprintf("item-%03d", t*9+1), PerMille: 200}}}
		if t < 49 {
			table.Drops = append(table.Drops, content.Drop{Table: fmt.Sprintf("table-%02d", t+1), PerMille: 50})
		}
		p.LootTables = append(p.LootTables, table)
	}
	for i := range 100 {
		e := enemy
		e.Name = fmt.Sprintf("enemy-%03d", i)
		e.Drops = []content.Drop{{Kind: fmt.Sprintf("item-%03d", i), PerMille: 100}, {Table: fmt.Sprintf("table-%02d", i%50), PerMille: 500}}
		p.Enemies = append(p.Enemies, e)
	}
	encoded, err := p.Encode()
	if err != nil {
		tb.Fatal(err)
	}
	gc := &gamev1.GameContent{ObjectMeta: metav1.ObjectMeta{Name: "big"}}
	if err := json.Unmarshal(encoded, &gc.Spec); err != nil {
		tb.Fatal(err)
	}
	if _, err := Check(gc); err != nil {
		tb.Fatal(err)
	}
	return gc
}

// BenchmarkCheckABigPack is the operator's check of the budget pack
// (budget: 50 ms).
func BenchmarkCheckABigPack(b *testing.B) {
	gc := bigPack(b)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Check(gc); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkLoadABigPack is what the map pod does with its revision before
// its first tick: decode and check the file, and hash the definitions it
// serves (budget: 100 ms added to a pod's start). It reports the
// definitions' size, as the join API sends them, gzipped (budget: 64 KiB).
func BenchmarkLoadABigPack(b *testing.B) {
	pack, err := Parse(bigPack(b))
	if err != nil {
		b.Fatal(err)
	}
	encoded, _ := pack.Encode()
	defs, _ := json.Marshal(pack.Definitions())
	var zipped bytes.Buffer
	zw := gzip.NewWriter(&zipped)
	_, _ = zw.Write(defs)
	_ = zw.Close()
	b.ReportAllocs()
	for b.Loop() {
		p, err := content.Decode(encoded)
		if err != nil {
			b.Fatal(err)
		}
		_ = p.Definitions().Hash()
	}
	b.ReportMetric(float64(len(encoded)), "pack-bytes")
	b.ReportMetric(float64(len(defs)), "definitions-bytes")
	b.ReportMetric(float64(zipped.Len()), "definitions-gzip-bytes")
}
