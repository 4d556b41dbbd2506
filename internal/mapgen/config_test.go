package mapgen

import (
	"math"
	"reflect"
	"strings"
	"testing"
)

func validConfig() Config {
	return Config{Seed: 1, Width: 512, Height: 512, Biome: "forest", NPCDensity: 0.2, LootDensity: 0.3,
		Portals: []Portal{{To: "cave", X: 10, Y: 500}}}
}

func TestParseConfigDecodesOperatorJSON(t *testing.T) {
	// The shape the operator marshals from api/v1 MapConfig.
	data := []byte(`{"seed":-42,"width":640,"height":480,"biome":"dungeon","npcDensity":0.25,` +
		`"lootDensity":0.5,"portals":[{"to":"town-2","x":0,"y":479}]}`)
	got, err := ParseConfig(data)
	if err != nil {
		t.Fatal(err)
	}
	want := Config{Seed: -42, Width: 640, Height: 480, Biome: "dungeon", NPCDensity: 0.25, LootDensity: 0.5,
		Portals: []Portal{{To: "town-2", X: 0, Y: 479}}}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("ParseConfig = %+v, want %+v", got, want)
	}
}

func TestParseConfigMinimal(t *testing.T) {
	got, err := ParseConfig([]byte(`{"width":32,"height":4096}`))
	if err != nil {
		t.Fatal(err)
	}
	if got.Biome != "" || got.Seed != 0 || got.Width != 32 || got.Height != 4096 {
		t.Fatalf("ParseConfig = %+v", got)
	}
	if _, err := Generate(got); err != nil {
		t.Fatalf("minimal config does not generate: %v", err)
	}
}

func TestValidationNamesTheField(t *testing.T) {
	tests := []struct {
		name  string
		edit  func(*Config)
		field string
	}{
		{"width too small", func(c *Config) { c.Width = 31 }, "width"},
		{"width too large", func(c *Config) { c.Width = 4097 }, "width"},
		{"height too small", func(c *Config) { c.Height = 0 }, "height"},
		{"height too large", func(c *Config) { c.Height = 5000 }, "height"},
		{"negative npc density", func(c *Config) { c.NPCDensity = -0.1 }, "npcDensity"},
		{"npc density above one", func(c *Config) { c.NPCDensity = 1.01 }, "npcDensity"},
		{"npc density NaN", func(c *Config) { c.NPCDensity = math.NaN() }, "npcDensity"},
		{"loot density above one", func(c *Config) { c.LootDensity = 2 }, "lootDensity"},
		{"unknown biome", func(c *Config) { c.Biome = "swamp" }, "biome"},
		{"content pack that is no name", func(c *Config) { c.Content = "Zoo Pack" }, "content"},
		{"portal right of the map", func(c *Config) { c.Portals[0].X = 512 }, "portals[0]"},
		{"portal above the map", func(c *Config) { c.Portals[0].Y = -1 }, "portals[0]"},
		{"portal without destination", func(c *Config) { c.Portals[0].To = "" }, "portals[0].to"},
		{"portal destination not a name", func(c *Config) { c.Portals[0].To = "Town_1" }, "portals[0].to"},
		{"second portal", func(c *Config) { c.Portals = append(c.Portals, Portal{To: "x", X: 9999}) }, "portals[1]"},
		{"too many portals", func(c *Config) { c.Portals = make([]Portal, 17); fillPortals(c.Portals) }, "portals:"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := validConfig()
			tt.edit(&cfg)
			w, err := Generate(cfg)
			if err == nil || w != nil {
				t.Fatalf("Generate accepted %+v", cfg)
			}
			if !strings.Contains(err.Error(), tt.field) {
				t.Fatalf("error %q does not name %q", err, tt.field)
			}
		})
	}
}

func fillPortals(ps []Portal) {
	for i := range ps {
		ps[i] = Portal{To: "next", X: int32(i), Y: int32(i)}
	}
}

func TestValidationReportsEveryField(t *testing.T) {
	_, err := ParseConfig([]byte(`{"width":1,"height":99999,"biome":"moon","npcDensity":3,"portals":[{"to":"a","x":5,"y":5}]}`))
	if err == nil {
		t.Fatal("ParseConfig accepted a config that is wrong everywhere")
	}
	for _, field := range []string{"width", "height", "biome", "npcDensity", "portals[0]"} {
		if !strings.Contains(err.Error(), field) {
			t.Errorf("error %q does not name %q", err, field)
		}
	}
}

func TestParseConfigRejectsBadJSON(t *testing.T) {
	for _, data := range []string{``, `{`, `[]`, `{"width":"wide","height":64}`, `{"width":64,"height":64} trailing`} {
		if _, err := ParseConfig([]byte(data)); err == nil {
			t.Errorf("ParseConfig(%q) succeeded", data)
		}
	}
}

func TestValidMapName(t *testing.T) {
	for name, want := range map[string]bool{
		"a": true, "town": true, "cave-2": true, "0": true, "abcdefghijklmnopqrst": true,
		"": false, "-a": false, "a-": false, "Town": false, "a_b": false, "abcdefghijklmnopqrstu": false,
	} {
		if got := validMapName(name); got != want {
			t.Errorf("validMapName(%q) = %v, want %v", name, got, want)
		}
	}
}
