package mapgen

import "testing"

func benchmarkGenerate(b *testing.B, cfg Config) {
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Generate(cfg); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkGenerate512(b *testing.B) {
	benchmarkGenerate(b, goldenConfigs[0].cfg)
}

func BenchmarkGenerate4096Forest(b *testing.B) {
	benchmarkGenerate(b, Config{Seed: 1, Width: 4096, Height: 4096, Biome: "forest", NPCDensity: 0.05, LootDensity: 0.1,
		Portals: edgePortals(4096, 4096)})
}

func BenchmarkGenerate4096Dungeon(b *testing.B) {
	benchmarkGenerate(b, Config{Seed: 1, Width: 4096, Height: 4096, Biome: "dungeon", NPCDensity: 0.05, LootDensity: 0.1,
		Portals: edgePortals(4096, 4096)})
}

// BenchmarkBlocked measures one query on a large forest, with points spread
// over the map and a margin outside it, so both the bounds check and the
// grid lookup are exercised. It must not allocate.
func BenchmarkBlocked(b *testing.B) {
	w := mustGenerate(b, Config{Seed: 1, Width: 4096, Height: 4096, Biome: "forest"})
	r := newRNG(1, 99)
	var pts [4096][2]float64
	for i := range pts {
		pts[i] = [2]float64{float64(r.intn(4200*16))/16 - 50, float64(r.intn(4200*16))/16 - 50}
	}
	b.ReportAllocs()
	n, i := 0, 0
	for b.Loop() {
		p := &pts[i%len(pts)]
		if w.Blocked(p[0], p[1]) {
			n++
		}
		i++
	}
	if n == 0 {
		b.Fatal("no query was blocked")
	}
}
