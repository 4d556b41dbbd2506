package protocol

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
)

// RoomContent is what the join API's GET .../content answers
// (docs/joinapi.md): the definitions of the content packs the room's maps
// play, so a client shows an item's name, slots and stats before the
// server refuses anything. Maps names each map's pack; a map's welcome
// carries its pack's hash (contentHash), and Hashes holds them by pack
// name. Hash, the answer's ETag, changes with any of them.
type RoomContent struct {
	Hash   string                     `json:"hash"`
	Maps   map[string]string          `json:"maps"`
	Packs  map[string]PackDefinitions `json:"packs"`
	Hashes map[string]string          `json:"hashes"`
}

// Pack is the pack a welcome's contentHash names.
func (c RoomContent) Pack(contentHash string) (PackDefinitions, bool) {
	for name, hash := range c.Hashes {
		if hash == contentHash {
			p, ok := c.Packs[name]
			return p, ok
		}
	}
	return PackDefinitions{}, false
}

// PackDefinitions are a content pack as players' clients see it: its items (to show
// their names, slots and stats before the server refuses anything), the
// enemies, the skills and the bag. The join API serves a room's
// (RoomContent) and a map's welcome carries its pack's Hash,
// so a client keeps them by hash and asks again only for a new one.
type PackDefinitions struct {
	Name    string            `json:"name"`
	Items   []ItemDefinition  `json:"items"`
	Enemies []EnemyDefinition `json:"enemies"`
	Skills  []SkillDefinition `json:"skills"`
	Bag     BagDefinition     `json:"bag"`
	// Resources are the pools abilities cost (absent: none); Abilities
	// what combat.cast casts.
	Resources *ResourcesDefinition `json:"resources,omitempty"`
	Abilities []AbilityDefinition  `json:"abilities,omitempty"`
}

// ResourcesDefinition is each pool's most and its gain a second.
type ResourcesDefinition struct {
	Mana         int     `json:"mana"`
	ManaRegen    float32 `json:"manaRegen"`
	Stamina      int     `json:"stamina"`
	StaminaRegen float32 `json:"staminaRegen"`
}

// AbilityDefinition is an ability as a player casts it.
type AbilityDefinition struct {
	Name     string  `json:"name"`
	Mana     int     `json:"mana,omitempty"`
	Stamina  int     `json:"stamina,omitempty"`
	Cooldown float32 `json:"cooldown"`
	// Target is enemy (give combat.cast its target) or self.
	Target string  `json:"target"`
	Range  float32 `json:"range,omitempty"`
	Damage int     `json:"damage,omitempty"`
	Heal   int     `json:"heal,omitempty"`
	// BuffAttack and BuffDefence are added for BuffSeconds.
	BuffAttack  int     `json:"buffAttack,omitempty"`
	BuffDefence int     `json:"buffDefence,omitempty"`
	BuffSeconds float32 `json:"buffSeconds,omitempty"`
	// DebuffAttack and DebuffDefence are taken off an enemy target for
	// DebuffSeconds.
	DebuffAttack  int     `json:"debuffAttack,omitempty"`
	DebuffDefence int     `json:"debuffDefence,omitempty"`
	DebuffSeconds float32 `json:"debuffSeconds,omitempty"`
}

// ItemDefinition is an item kind: its name is its kind.
type ItemDefinition struct {
	Kind string `json:"kind"`
	// Slots are the slots it is worn in, by name; none: only carried.
	Slots     []string `json:"slots,omitempty"`
	Weight    float32  `json:"weight"`
	Attack    int      `json:"attack,omitempty"`
	Defence   int      `json:"defence,omitempty"`
	Stackable bool     `json:"stackable,omitempty"`
	// Requires is the skill level wearing it asks for.
	Requires *SkillRequirement `json:"requires,omitempty"`
	// Trains is the skill a kill trains while it is the weapon worn.
	Trains string `json:"trains,omitempty"`
	// Critical items are kept obtainable by their map (a key).
	Critical bool `json:"critical,omitempty"`
	// Use is what inventory.use of it does; nil: it cannot be used.
	Use *UseDefinition `json:"use,omitempty"`
}

// UseDefinition is what using a consumable does.
type UseDefinition struct {
	// Heal is the hit points it gives back, up to full.
	Heal int `json:"heal"`
}

// SkillRequirement is a skill level an item asks of its wearer.
type SkillRequirement struct {
	Skill string `json:"skill"`
	Level int    `json:"level"`
}

// EnemyDefinition is an enemy kind as a player meets it.
type EnemyDefinition struct {
	Name    string  `json:"name"`
	HP      int     `json:"hp"`
	Attack  int     `json:"attack"`
	Defence int     `json:"defence"`
	Range   float32 `json:"range"`
	Speed   float32 `json:"speed"`
	Hostile bool    `json:"hostile,omitempty"`
	// Boss guards a dungeon's boss room; Phases are the hit points (in
	// percent of its full hit points) below which it fights harder.
	Boss   bool  `json:"boss,omitempty"`
	Phases []int `json:"phases,omitempty"`
}

// SkillDefinition is a skill and the experience each level needs.
type SkillDefinition struct {
	Name   string `json:"name"`
	Levels []int  `json:"levels"`
}

// BagDefinition is what a character carries.
type BagDefinition struct {
	Capacity        int     `json:"capacity"`
	MaxWeight       float32 `json:"maxWeight"`
	EncumberedAt    float32 `json:"encumberedAt"`
	EncumberedSpeed float32 `json:"encumberedSpeed"`
}

// Hash names the definitions: the SHA-256 of their JSON, in hex. Equal
// definitions have equal hashes on every pod and in the join API.
func (d PackDefinitions) Hash() string {
	data, _ := json.Marshal(d) // plain data: cannot fail
	sum := sha256.Sum256(data)
	return hex.EncodeToString(sum[:])
}
