// Package content declares what lives on a map beyond its shape: the
// enemy types, how they fight and what they drop, the players' own
// fighting stats, and the kinds of the map's generated loot.
// A pack is plain data, validated with errors that name the field; the
// simulation reads it, the transport never does. Packs are built in; a
// map names one in its config (MapConfig.content), or gets its biome's.
package content

import (
	"errors"
	"fmt"
	"hash/fnv"
	"maps"
	"slices"
)

// Fighter is what every combatant has.
type Fighter struct {
	// HP is the hit points it starts (and respawns) with, 1 to 255.
	HP uint8 `json:"hp"`
	// Attack and Defence make the damage of a hit: attack minus the
	// target's defence plus a roll of 0 to Roll, at least 1.
	Attack  int `json:"attack,omitempty"`
	Defence int `json:"defence,omitempty"`
	Roll    int `json:"roll,omitempty"`
	// Range is how near (world units) a target must be to be hit.
	Range float32 `json:"range"`
	// Cooldown is the time between two attacks, in seconds.
	Cooldown float32 `json:"cooldown"`
	// Respawn is how long after death it comes back, in seconds; 0 never
	// (an enemy that stays dead).
	Respawn float32 `json:"respawn,omitempty"`
}

// EnemyType is one kind of NPC.
type EnemyType struct {
	Name string `json:"name"`
	Fighter
	// Hostile enemies attack the nearest player within AggroRadius;
	// others fight only whoever attacked them.
	Hostile bool `json:"hostile,omitempty"`
	// AggroRadius is how near a player must be to be chased, at most
	// MaxAggroRadius.
	AggroRadius float32 `json:"aggroRadius,omitempty"`
	// LeashRadius is how far from its spawn an enemy follows a target
	// before it gives up and goes back.
	LeashRadius float32 `json:"leashRadius,omitempty"`
	// Speed is how fast it walks, world units per second.
	Speed float32 `json:"speed"`
	// Weight is its share of the map's NPC spawns.
	Weight int `json:"weight"`
	// Drops is its loot table: one roll per kill picks at most one line
	// (loot.go); a line may roll one of the pack's LootTables.
	Drops []Drop `json:"drops,omitempty"`
	// Phases change a boss's fighting as its hit points fall, in order of
	// falling thresholds.
	Phases []Phase `json:"phases,omitempty"`
	// XP is the experience a kill of it gives the killer's trained skill.
	XP int `json:"xp,omitempty"`
}

// Phase is a stage of a boss fight: once the boss's hit points fall to
// BelowPercent of its full hit points or under, it fights with this
// Attack and Cooldown.
type Phase struct {
	BelowPercent int     `json:"belowPercent"`
	Attack       int     `json:"attack"`
	Cooldown     float32 `json:"cooldown"`
}

// MaxAggroRadius bounds AggroRadius: the simulation finds prey in a grid
// of cells this size, looking at the 3x3 cells around an enemy.
const MaxAggroRadius = 64

// Pack is the content of a map.
type Pack struct {
	Name    string      `json:"name"`
	Player  Fighter     `json:"player"`
	Enemies []EnemyType `json:"enemies"`
	// GroundLoot are the kinds the map's generated loot spawns are (the
	// map generator places them; each spawn's kind comes from its id).
	GroundLoot []string `json:"groundLoot"`
	// Boss guards a dungeon's boss room (mapgen.RoleBoss); no Name: none.
	Boss EnemyType `json:"boss,omitzero"`
	// Key is the item kind that opens the boss room's locked doors; it lies
	// in the key room (mapgen.RoleKey). Without one the doors are not locked.
	Key string `json:"key,omitempty"`
	// Items define every item kind the pack names (items.go).
	Items []ItemDef `json:"items"`
	// Skills are what characters get better at; BaseSkill is the one a
	// kill trains when the weapon worn trains none.
	Skills    []SkillDef `json:"skills"`
	BaseSkill string     `json:"baseSkill"`
	// Bag is what a character carries; EquipCooldown is the seconds a
	// slot stays locked after an equip or unequip.
	Bag           Bag     `json:"bag"`
	EquipCooldown float32 `json:"equipCooldown,omitempty"`
	// Critical are the pack's critical items' policies (critical.go).
	Critical []CriticalPolicy `json:"critical,omitempty"`
	// Resources are the pools abilities cost; Abilities what players
	// cast (abilities.go).
	Resources Resources `json:"resources,omitzero"`
	Abilities []Ability `json:"abilities,omitempty"`
	// LootTables are the shared loot tables enemies' drops roll by name
	// (loot.go).
	LootTables []LootTable `json:"lootTables,omitempty"`
}

// packs are the built-in packs by name.
var packs = map[string]Pack{
	"wilds": {
		Name:       "wilds",
		Player:     player,
		GroundLoot: []string{"sword", "shield", "potion", "gem", "scroll"},
		Items:      items("sword", "shield", "potion", "gem", "scroll", "hide", "pelt", "fang"),
		Skills:     skills, BaseSkill: "melee", Bag: bag, EquipCooldown: 1,
		Resources: resources, Abilities: abilities,
		Enemies: []EnemyType{
			{Name: "boar", Fighter: Fighter{HP: 40, Attack: 7, Defence: 2, Roll: 3, Range: 16, Cooldown: 1.5, Respawn: 30},
				AggroRadius: 64, LeashRadius: 160, Speed: 20, Weight: 3, XP: 2,
				Drops: []Drop{{Kind: "hide", PerMille: 500}, {Kind: "potion", PerMille: 100}}},
			{Name: "wolf", Fighter: Fighter{HP: 30, Attack: 9, Defence: 1, Roll: 4, Range: 16, Cooldown: 1.2, Respawn: 30},
				AggroRadius: 64, LeashRadius: 200, Speed: 24, Weight: 1, XP: 3,
				Drops: []Drop{{Kind: "pelt", PerMille: 600}, {Kind: "fang", PerMille: 200}}},
		},
	},
	"crypt": {
		Name:       "crypt",
		Player:     player,
		GroundLoot: []string{"gem", "scroll", "potion", "candle"},
		Items:      items("gem", "scroll", "potion", "candle", "bone", "rusty sword", "lich crown", "crypt key"),
		Skills:     skills, BaseSkill: "melee", Bag: bag, EquipCooldown: 1,
		Resources: resources, Abilities: abilities,
		// The key can never be lost for good: destroyed, dropped out of
		// reach or kept by someone long gone, it comes back to the key room.
		Critical: []CriticalPolicy{{Kind: "crypt key", Type: RegenerativeUnique,
			Anchors: []Anchor{{Room: AnchorKeyRoom}}, CooldownTicks: 600, OfflineTimeout: 600}},
		Enemies: []EnemyType{
			{Name: "skeleton", Fighter: Fighter{HP: 30, Attack: 6, Defence: 1, Roll: 3, Range: 20, Cooldown: 1.2},
				Hostile: true, AggroRadius: 64, LeashRadius: 128, Speed: 20, Weight: 3, XP: 2,
				Drops: []Drop{{Kind: "bone", PerMille: 500}, {Kind: "rusty sword", PerMille: 150}, {Table: "crypt spoils", PerMille: 50}}},
			{Name: "ghoul", Fighter: Fighter{HP: 50, Attack: 9, Defence: 3, Roll: 4, Range: 16, Cooldown: 1.6},
				Hostile: true, AggroRadius: 48, LeashRadius: 96, Speed: 16, Weight: 1, XP: 4,
				Drops: []Drop{{Table: "crypt spoils", PerMille: 600}}},
		},
		// The spoils the undead share: a ghoul's usual drop, a skeleton's
		// rare one.
		LootTables: []LootTable{{Name: "crypt spoils", Drops: []Drop{{Kind: "gem", PerMille: 500}, {Kind: "potion", PerMille: 500}}}},
		Boss: EnemyType{Name: "lich", Fighter: Fighter{HP: 200, Attack: 12, Defence: 4, Roll: 5, Range: 24, Cooldown: 1.5},
			Hostile: true, AggroRadius: 64, LeashRadius: 160, Speed: 14, Weight: 1, XP: 20,
			Drops:  []Drop{{Kind: "lich crown", PerMille: 1000}},
			Phases: []Phase{{BelowPercent: 66, Attack: 15, Cooldown: 1.2}, {BelowPercent: 33, Attack: 18, Cooldown: 0.9}}},
		Key: "crypt key",
	},
	// arena is a load for combat benchmarks (roomload bench --fight):
	// players hit every tick from far, dummies fall at one hit, drop
	// nothing and stand up again two ticks later where they stood.
	"arena": {
		Name:       "arena",
		Player:     Fighter{HP: 100, Attack: 10, Defence: 2, Roll: 3, Range: 160, Cooldown: 0.001, Respawn: 3},
		GroundLoot: []string{"coin"},
		Items:      []ItemDef{{Kind: "coin", Weight: 0.01, Stackable: true}},
		Skills:     skills, BaseSkill: "melee", Bag: bag,
		Enemies: []EnemyType{
			{Name: "dummy", Fighter: Fighter{HP: 1, Range: 8, Cooldown: 60, Respawn: 0.05}, Speed: 1, Weight: 1},
		},
	},
}

// player is the players' stats in every built-in pack.
var player = Fighter{HP: 100, Attack: 10, Defence: 2, Roll: 3, Range: 32, Cooldown: 0.5, Respawn: 3}

// resources and abilities are the wilds' and the crypt's: a bolt and a
// curse of mana that strike from afar, a second wind and a battle cry of
// stamina.
var (
	resources = Resources{Mana: Resource{Max: 100, Regen: 2}, Stamina: Resource{Max: 100, Regen: 5}}
	abilities = []Ability{
		{Name: "firebolt", Mana: 20, Cooldown: 3, Target: TargetEnemy, Range: 96, Damage: 20},
		{Name: "curse", Mana: 15, Cooldown: 8, Target: TargetEnemy, Range: 96, Debuff: &Buff{Attack: 4, Defence: 2, Duration: 6}},
		{Name: "second wind", Stamina: 40, Cooldown: 20, Target: TargetSelf, Heal: 30},
		{Name: "battle cry", Stamina: 30, Cooldown: 30, Target: TargetSelf, Buff: &Buff{Attack: 5, Duration: 10}},
	}
)

// skills and bag are every built-in pack's: kills train melee, or swords
// with a sword in hand.
var (
	skills = []SkillDef{{Name: "melee", Levels: []int{5, 15, 30, 60}}, {Name: "swords", Levels: []int{4, 12, 25, 50}}}
	bag    = Bag{Capacity: 20, MaxWeight: 40, EncumberedAt: 25, EncumberedSpeed: 0.6}
)

// itemDefs are the built-in packs' items, by kind.
var itemDefs = map[string]ItemDef{
	"sword":       {Slots: Weapon.Mask(), Weight: 3, Attack: 4, Trains: "swords"},
	"rusty sword": {Slots: Weapon.Mask(), Weight: 3, Attack: 2, Trains: "swords"},
	"shield":      {Slots: Offhand.Mask(), Weight: 5, Defence: 3, Requires: SkillReq{Skill: "melee", Level: 2}},
	"lich crown":  {Slots: Head.Mask(), Weight: 1, Attack: 2, Defence: 4, Requires: SkillReq{Skill: "swords", Level: 3}},
	"crypt key":   {Weight: 0.1},
	"potion":      {Weight: 0.5, Stackable: true, Use: &UseEffect{Heal: 30}},
	"gem":         {Weight: 0.1, Stackable: true},
	"scroll":      {Weight: 0.2, Stackable: true},
	"candle":      {Weight: 0.3, Stackable: true},
	"bone":        {Weight: 0.5, Stackable: true},
	"hide":        {Weight: 2, Stackable: true},
	"pelt":        {Weight: 1.5, Stackable: true},
	"fang":        {Weight: 0.1, Stackable: true},
}

// items are the definitions of kinds.
func items(kinds ...string) []ItemDef {
	defs := make([]ItemDef, len(kinds))
	for i, k := range kinds {
		defs[i] = itemDefs[k]
		defs[i].Kind = k
	}
	return defs
}

// GroundLootKind is the kind of the generated ground loot with the given
// id: one of GroundLoot, picked by a hash of the id, so a map's loot is the
// same on every start.
func (p *Pack) GroundLootKind(id string) string {
	h := fnv.New32a()
	_, _ = h.Write([]byte(id))
	return p.GroundLoot[h.Sum32()%uint32(len(p.GroundLoot))]
}

// Names are the built-in packs' names, sorted.
func Names() []string {
	return slices.Sorted(maps.Keys(packs))
}

// Named returns the built-in pack name, or false.
func Named(name string) (Pack, bool) {
	p, ok := packs[name]
	return p, ok
}

// ForMap is the pack a map gets: the one its config names, else its
// biome's. A name that is no pack (the CRD and mapgen refuse those) falls
// back to the biome's too.
func ForMap(name, biome string) Pack {
	if p, ok := packs[name]; ok {
		return p
	}
	return ForBiome(biome)
}

// ForBiome is the pack a map of the biome gets: the crypt's undead in
// dungeons, the wilds' beasts elsewhere.
func ForBiome(biome string) Pack {
	if biome == "dungeon" {
		return packs["crypt"]
	}
	return packs["wilds"]
}

// Validate checks every field, naming each bad one.
func (p Pack) Validate() error {
	errs := []error{p.Player.validate("player")}
	if len(p.Enemies) == 0 {
		errs = append(errs, errors.New("enemies: at least one enemy type"))
	}
	if len(p.GroundLoot) == 0 {
		errs = append(errs, errors.New("groundLoot: at least one kind"))
	}
	for i, k := range p.GroundLoot {
		if k == "" {
			errs = append(errs, fmt.Errorf("groundLoot[%d]: must not be empty", i))
		}
	}
	for i, e := range p.Enemies {
		field := fmt.Sprintf("enemies[%d]", i)
		errs = append(errs, e.validate(field))
	}
	if (p.Boss.Name == "") != (p.Key == "") {
		errs = append(errs, fmt.Errorf("boss and key: both or neither (boss %q, key %q)", p.Boss.Name, p.Key))
	}
	if p.Boss.Name != "" {
		errs = append(errs, p.Boss.validate("boss"))
	}
	errs = append(errs, p.validateItems(), p.validateCritical(), p.validateAbilities(), p.validateLootTables())
	return errors.Join(errs...)
}

// PhaseAt is the index of the phase a boss with hp of full hit points
// fights in, or -1 before the first.
func (e *EnemyType) PhaseAt(hp uint8) int {
	phase := -1
	for i, p := range e.Phases {
		if int(hp)*100 <= int(e.HP)*p.BelowPercent {
			phase = i
		}
	}
	return phase
}

func (e EnemyType) validate(field string) error {
	errs := []error{e.Fighter.validate(field)}
	if e.Name == "" {
		errs = append(errs, fmt.Errorf("%s.name: must not be empty", field))
	}
	if !(e.AggroRadius >= 0 && e.AggroRadius <= MaxAggroRadius) {
		errs = append(errs, fmt.Errorf("%s.aggroRadius: %v is not within 0 to %d", field, e.AggroRadius, MaxAggroRadius))
	}
	if !(e.LeashRadius >= e.AggroRadius) {
		errs = append(errs, fmt.Errorf("%s.leashRadius: %v is less than aggroRadius %v", field, e.LeashRadius, e.AggroRadius))
	}
	if !(e.Speed > 0 && e.Speed <= 256) {
		errs = append(errs, fmt.Errorf("%s.speed: %v is not within (0, 256]", field, e.Speed))
	}
	if e.Weight < 1 {
		errs = append(errs, fmt.Errorf("%s.weight: %d must be at least 1", field, e.Weight))
	}
	if e.XP < 0 {
		errs = append(errs, fmt.Errorf("%s.xp: %d is negative", field, e.XP))
	}
	errs = append(errs, validateDrops(field+".drops", e.Drops))
	return errors.Join(append(errs, validatePhases(field, e.Phases))...)
}

func validatePhases(field string, phases []Phase) error {
	var errs []error
	last := 100
	for i, p := range phases {
		f := fmt.Sprintf("%s.phases[%d]", field, i)
		if p.BelowPercent < 1 || p.BelowPercent >= last {
			errs = append(errs, fmt.Errorf("%s.belowPercent: %d is not within 1 to %d (thresholds fall)", f, p.BelowPercent, last-1))
		}
		if p.Attack < 0 {
			errs = append(errs, fmt.Errorf("%s.attack: %d is negative", f, p.Attack))
		}
		if !(p.Cooldown > 0 && p.Cooldown <= 60) {
			errs = append(errs, fmt.Errorf("%s.cooldown: %v s is not within (0, 60]", f, p.Cooldown))
		}
		last = p.BelowPercent
	}
	return errors.Join(errs...)
}

func (f Fighter) validate(field string) error {
	var errs []error
	if f.HP == 0 {
		errs = append(errs, fmt.Errorf("%s.hp: must be at least 1", field))
	}
	if f.Attack < 0 || f.Defence < 0 || f.Roll < 0 {
		errs = append(errs, fmt.Errorf("%s: attack, defence and roll must not be negative (%d, %d, %d)", field, f.Attack, f.Defence, f.Roll))
	}
	if !(f.Range > 0 && f.Range <= 256) {
		errs = append(errs, fmt.Errorf("%s.range: %v is not within (0, 256]", field, f.Range))
	}
	if !(f.Cooldown > 0 && f.Cooldown <= 60) {
		errs = append(errs, fmt.Errorf("%s.cooldown: %v s is not within (0, 60]", field, f.Cooldown))
	}
	if !(f.Respawn >= 0 && f.Respawn <= 3600) {
		errs = append(errs, fmt.Errorf("%s.respawn: %v s is not within [0, 3600]", field, f.Respawn))
	}
	return errors.Join(errs...)
}
