package mapgen

import "testing"

// FuzzParseConfig checks that no input makes ParseConfig panic and that
// every config it accepts generates a world whose spawns are walkable.
func FuzzParseConfig(f *testing.F) {
	for _, seed := range []string{
		`{"width":512,"height":512}`,
		`{"seed":42,"width":512,"height":512,"biome":"meadow","npcDensity":0.1,"lootDensity":0.2,"portals":[{"to":"town","x":500,"y":256}]}`,
		`{"seed":-7,"width":32,"height":4096,"biome":"dungeon","npcDensity":1,"lootDensity":1,"portals":[{"to":"a","x":0,"y":0},{"to":"b","x":31,"y":4095}]}`,
		`{"seed":9223372036854775807,"width":33,"height":33,"biome":"forest","npcDensity":1}`,
		`{"width":31,"height":512}`,
		`{"width":512,"height":512,"portals":[{"to":"","x":-1,"y":0}]}`,
		`{"width":512,"height":512,"npcDensity":1e308}`,
		`null`,
		`{`,
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		cfg, err := ParseConfig(data)
		if err != nil {
			return
		}
		w, err := Generate(cfg)
		if err != nil {
			t.Fatalf("ParseConfig accepted %s but Generate failed: %v", data, err)
		}
		if w.Blocked(float64(w.PlayerSpawn.X), float64(w.PlayerSpawn.Y)) {
			t.Fatalf("player spawn %+v is blocked", w.PlayerSpawn)
		}
		for _, p := range w.NPCSpawns {
			if w.Blocked(float64(p.X), float64(p.Y)) {
				t.Fatalf("NPC spawn %+v is blocked", p)
			}
		}
		for _, p := range w.Portals {
			if w.Blocked(float64(p.X), float64(p.Y)) {
				t.Fatalf("portal %+v is blocked", p)
			}
		}
		if len(w.Hash) != 64 {
			t.Fatalf("hash %q is not hex SHA-256", w.Hash)
		}
	})
}
