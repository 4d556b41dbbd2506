package content

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
)

// Definitions are a pack as players' clients see it: its items (to show
// their names, slots and stats before the server refuses anything), the
// enemies, the skills and the bag. The join API serves a room's
// (docs/joinapi.md, content) and a map's welcome carries its pack's Hash,
// so a client keeps them by hash and asks again only for a new one.
type Definitions struct {
	Name    string            `json:"name"`
	Items   []ItemDefinition  `json:"items"`
	Enemies []EnemyDefinition `json:"enemies"`
	Skills  []SkillDefinition `json:"skills"`
	Bag     BagDefinition     `json:"bag"`
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

// Definitions are the pack's, in its own order.
func (p *Pack) Definitions() Definitions {
	d := Definitions{Name: p.Name, Items: make([]ItemDefinition, len(p.Items)), Skills: make([]SkillDefinition, len(p.Skills)),
		Bag: BagDefinition{Capacity: p.Bag.Capacity, MaxWeight: p.Bag.MaxWeight, EncumberedAt: p.Bag.EncumberedAt,
			EncumberedSpeed: p.Bag.EncumberedSpeed}}
	for i, it := range p.Items {
		d.Items[i] = itemDefinition(p, it)
	}
	for _, e := range p.Enemies {
		d.Enemies = append(d.Enemies, enemyDefinition(e, false))
	}
	if p.Boss.Name != "" {
		d.Enemies = append(d.Enemies, enemyDefinition(p.Boss, true))
	}
	for i, s := range p.Skills {
		d.Skills[i] = SkillDefinition{Name: s.Name, Levels: append([]int(nil), s.Levels...)}
	}
	return d
}

func itemDefinition(p *Pack, it ItemDef) ItemDefinition {
	d := ItemDefinition{Kind: it.Kind, Weight: it.Weight, Attack: it.Attack, Defence: it.Defence,
		Stackable: it.Stackable, Trains: it.Trains}
	for _, s := range Slots() {
		if it.Slots.Has(s) {
			d.Slots = append(d.Slots, s.String())
		}
	}
	if it.Requires.Skill != "" {
		d.Requires = &SkillRequirement{Skill: it.Requires.Skill, Level: it.Requires.Level}
	}
	_, d.Critical = p.Policy(it.Kind)
	return d
}

func enemyDefinition(e EnemyType, boss bool) EnemyDefinition {
	d := EnemyDefinition{Name: e.Name, HP: int(e.HP), Attack: e.Attack, Defence: e.Defence, Range: e.Range,
		Speed: e.Speed, Hostile: e.Hostile, Boss: boss}
	for _, ph := range e.Phases {
		d.Phases = append(d.Phases, ph.BelowPercent)
	}
	return d
}

// Hash names the definitions: the SHA-256 of their JSON, in hex. Equal
// definitions have equal hashes on every pod and in the join API.
func (d Definitions) Hash() string {
	data, _ := json.Marshal(d) // plain data: cannot fail
	sum := sha256.Sum256(data)
	return hex.EncodeToString(sum[:])
}
