// Package mapgen turns a map's configuration into its static world:
// colliders, decorative props, portal anchors, spawn points and the
// walkability grid the simulation queries every tick.
//
// Generation is deterministic. The same Config builds the same World, with
// the same Hash, on every platform and Go version: randomness comes only from
// the splitmix64 generator defined in this package, placement is on integer
// cells, every loop walks slices in index order, and the Hash covers a fixed
// little-endian encoding rather than floats or JSON. The package imports only
// the standard library and builds for GOOS=js GOARCH=wasm, so a browser
// client builds the identical world the server simulates (docs/design.md
// section 5).
package mapgen

import (
	"encoding/json"
	"fmt"
	"math"
	"strings"
)

// Limits of a Config. They repeat the CRD validation of api/v1 MapConfig,
// because the generator also runs on configs that never passed the
// apiserver (a browser client, a test, a hand-written environment variable).
// controllers/contracts_test.go fails when they differ from the CRD's.
const (
	minSize          = 32
	maxSize          = 4096
	maxPortals       = 16
	maxPortalNameLen = 20
	// MaxSpawnPoints bounds Config.SpawnPoints.
	MaxSpawnPoints = 64
	// MaxPlayerSpeed bounds Config.PlayerSpeed, in world units per second.
	MaxPlayerSpeed = 256
)

// Biome names, as api/v1 spells them.
const (
	biomeMeadow  = "meadow"
	biomeForest  = "forest"
	biomeDesert  = "desert"
	biomeDungeon = "dungeon"
)

// Config mirrors api/v1 MapConfig's JSON (same json names) so the JSON the
// operator puts in ROOMKEEPER_MAP_CONFIG decodes into it. It is a copy rather
// than an import because this package must not depend on Kubernetes types;
// controllers/contracts_test.go fails when the two drift apart.
type Config struct {
	// Seed feeds the generator's PRNG; equal seeds give equal worlds.
	Seed int64 `json:"seed,omitempty"`
	// Width of the map in world units, 32 to 4096.
	Width int32 `json:"width"`
	// Height of the map in world units, 32 to 4096.
	Height int32 `json:"height"`
	// Biome is meadow, forest, desert or dungeon; "" means meadow.
	Biome string `json:"biome,omitempty"`
	// NPCDensity is the fraction of walkable cells that get an NPC spawn, 0 to 1.
	NPCDensity float64 `json:"npcDensity,omitempty"`
	// LootDensity, 0 to 1, sets LootDensity*walkableCells/4 loot spawns.
	LootDensity float64 `json:"lootDensity,omitempty"`
	// Portals lead from this map to other maps of the same room.
	Portals []Portal `json:"portals,omitempty"`
	// SpawnPoints is how many places new players start at, 1 to 64; 0
	// means 1, the centre. More spread a crowd that joins at once.
	SpawnPoints int32 `json:"spawnPoints,omitempty"`
	// PlayerSpeed is how fast players walk, world units per second, 1 to
	// MaxPlayerSpeed; 0 leaves the simulation's default. Not used by the
	// generator: it is the map's rule, carried with its shape.
	PlayerSpeed int32 `json:"playerSpeed,omitempty"`
	// Content names the map's content pack (a GameContent, else a built-in
	// pack of internal/content); "" is the biome's. Not used by the
	// generator either.
	Content string `json:"content,omitempty"`
}

// Portal is a spot on the map that transfers a player to another map.
type Portal struct {
	// To names the destination map in the same GameRoom.
	To string `json:"to"`
	// X is the portal's position along the map's width, in world units.
	X int32 `json:"x"`
	// Y is the portal's position along the map's height, in world units.
	Y int32 `json:"y"`
}

// ParseConfig decodes the JSON form of a MapConfig and validates it the way
// Generate does, so a bad environment variable fails at startup with the
// name of the offending field.
func ParseConfig(data []byte) (Config, error) {
	var cfg Config
	if err := json.Unmarshal(data, &cfg); err != nil {
		return Config{}, fmt.Errorf("mapgen: decoding config: %w", err)
	}
	if err := cfg.validate(); err != nil {
		return Config{}, err
	}
	return cfg, nil
}

// validate reports every problem at once, each prefixed with the JSON path
// of its field, so one failed start names everything that needs fixing.
func (c Config) validate() error {
	var problems []string
	add := func(field, format string, args ...any) {
		problems = append(problems, field+": "+fmt.Sprintf(format, args...))
	}
	if c.Width < minSize || c.Width > maxSize {
		add("width", "must be between %d and %d, got %d", minSize, maxSize, c.Width)
	}
	if c.Height < minSize || c.Height > maxSize {
		add("height", "must be between %d and %d, got %d", minSize, maxSize, c.Height)
	}
	if !knownBiome(c.Biome) {
		add("biome", "must be one of meadow, forest, desert, dungeon, got %q", c.Biome)
	}
	if !isFraction(c.NPCDensity) {
		add("npcDensity", "must be between 0 and 1, got %v", c.NPCDensity)
	}
	if !isFraction(c.LootDensity) {
		add("lootDensity", "must be between 0 and 1, got %v", c.LootDensity)
	}
	if c.SpawnPoints < 0 || c.SpawnPoints > MaxSpawnPoints {
		add("spawnPoints", "must be between 0 and %d, got %d", MaxSpawnPoints, c.SpawnPoints)
	}
	if !packName(c.Content) {
		add("content", "must name a content pack (lowercase letters, digits and inner dashes, at most 40), got %q", c.Content)
	}
	if c.PlayerSpeed < 0 || c.PlayerSpeed > MaxPlayerSpeed {
		add("playerSpeed", "must be between 0 and %d, got %d", MaxPlayerSpeed, c.PlayerSpeed)
	}
	if len(c.Portals) > maxPortals {
		add("portals", "at most %d portals, got %d", maxPortals, len(c.Portals))
	}
	for i, p := range c.Portals {
		field := fmt.Sprintf("portals[%d]", i)
		if !validMapName(p.To) {
			add(field+".to", "must be 1 to %d lowercase letters, digits or '-', starting and ending alphanumeric, got %q", maxPortalNameLen, p.To)
		}
		if p.X < 0 || p.Y < 0 || p.X >= c.Width || p.Y >= c.Height {
			add(field, "position (%d,%d) must lie inside the %dx%d map", p.X, p.Y, c.Width, c.Height)
		}
	}
	if len(problems) == 0 {
		return nil
	}
	return fmt.Errorf("mapgen: invalid config: %s", strings.Join(problems, "; "))
}

// knownBiome accepts "" as meadow, the CRD's default, so a config written
// before defaulting still generates.
func knownBiome(b string) bool {
	switch b {
	case "", biomeMeadow, biomeForest, biomeDesert, biomeDungeon:
		return true
	}
	return false
}

// packName accepts what may name a content pack (a GameContent or a
// built-in pack; mapgen only checks the name, as the CRD does) and "".
func packName(name string) bool {
	if len(name) > 40 || strings.HasPrefix(name, "-") || strings.HasSuffix(name, "-") {
		return false
	}
	for _, r := range name {
		if (r < 'a' || r > 'z') && (r < '0' || r > '9') && r != '-' {
			return false
		}
	}
	return true
}

// isFraction is false for NaN too, which plain range checks would let pass.
func isFraction(f float64) bool {
	return f >= 0 && f <= 1 && !math.IsNaN(f)
}

// validMapName mirrors the CRD pattern ^[a-z0-9]([-a-z0-9]*[a-z0-9])?$
// without regexp, which would add weight to the wasm build.
func validMapName(s string) bool {
	if s == "" || len(s) > maxPortalNameLen || s[0] == '-' || s[len(s)-1] == '-' {
		return false
	}
	for i := range len(s) {
		ch := s[i]
		if (ch < 'a' || ch > 'z') && (ch < '0' || ch > '9') && ch != '-' {
			return false
		}
	}
	return true
}

// normalized returns the config a World records: biome defaulted and the
// portal slice copied so later changes by the caller cannot alter the world.
func (c Config) normalized() Config {
	if c.Biome == "" {
		c.Biome = biomeMeadow
	}
	if c.Portals != nil {
		c.Portals = append([]Portal(nil), c.Portals...)
	}
	return c
}
