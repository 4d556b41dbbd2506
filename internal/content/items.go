package content

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
)

// Slot is one place on a character where an item is worn; SlotMask is a
// set of them (an item's Slots: where it fits).
type (
	Slot     uint8
	SlotMask uint8
)

// The equipment slots, in the order Slots lists them.
const (
	Head Slot = iota
	Chest
	Hands
	Legs
	Feet
	Weapon
	Offhand
	// SlotCount is how many slots there are.
	SlotCount
)

var slotNames = [SlotCount]string{"head", "chest", "hands", "legs", "feet", "weapon", "offhand"}

// Slots are every slot, in order.
func Slots() []Slot {
	s := make([]Slot, SlotCount)
	for i := range s {
		s[i] = Slot(i)
	}
	return s
}

// String is the slot's name on the wire and in content.
func (s Slot) String() string {
	if s < SlotCount {
		return slotNames[s]
	}
	return fmt.Sprintf("slot(%d)", uint8(s))
}

// ParseSlot reads a slot name; false for a name that is no slot.
func ParseSlot(name string) (Slot, bool) {
	i := slices.Index(slotNames[:], name)
	return Slot(i), i >= 0
}

// Mask is the set holding s alone.
func (s Slot) Mask() SlotMask { return 1 << s }

// Has reports whether s is in m.
func (m SlotMask) Has(s Slot) bool { return s < SlotCount && m&s.Mask() != 0 }

// String lists the mask's slots, "a|b", or "none".
func (m SlotMask) String() string {
	var names []string
	for _, s := range Slots() {
		if m.Has(s) {
			names = append(names, s.String())
		}
	}
	if len(names) == 0 {
		return "none"
	}
	return strings.Join(names, "|")
}

// ItemDef is one kind of item.
type ItemDef struct {
	// Kind names it: loot tables, ground loot and the key name kinds.
	Kind string `json:"kind"`
	// Slots are where it can be worn; none: it is only carried.
	Slots SlotMask `json:"slots,omitzero"`
	// Weight counts against the bag's MaxWeight and encumbrance, 0 to 100.
	Weight float32 `json:"weight,omitempty"`
	// Attack and Defence are added to the wearer's while it is worn.
	Attack  int `json:"attack,omitempty"`
	Defence int `json:"defence,omitempty"`
	// Requires is the skill level needed to wear it (no Skill: none).
	Requires SkillReq `json:"requires,omitzero"`
	// Trains is the skill a kill trains while it is worn as the weapon;
	// "" trains the pack's BaseSkill.
	Trains string `json:"trains,omitempty"`
	// Stackable items of one kind share a bag slot.
	Stackable bool `json:"stackable,omitempty"`
	// Use is what using it does (inventory.use consumes it); nil: it
	// cannot be used.
	Use *UseEffect `json:"use,omitempty"`
}

// UseEffect is what a usable item (a consumable) does when used.
type UseEffect struct {
	// Heal is the hit points it gives back, 1 to 255, up to the user's
	// full hit points.
	Heal int `json:"heal"`
}

// SkillReq is a skill level an item asks of its wearer.
type SkillReq struct {
	Skill string `json:"skill"`
	Level int    `json:"level"`
}

// SkillDef is a skill: it rises by level as kills give it experience.
type SkillDef struct {
	Name string `json:"name"`
	// Levels are the experience needed for level 2, 3, ...: rising. A
	// skill without experience is level 1.
	Levels []int `json:"levels"`
}

// Level is the level xp experience reaches.
func (s SkillDef) Level(xp int) int {
	level := 1
	for _, need := range s.Levels {
		if xp >= need {
			level++
		}
	}
	return level
}

// Bag is what a character can carry.
type Bag struct {
	// Capacity is how many bag slots it has: an item takes one, a stack of
	// a stackable kind takes one. Worn items take none.
	Capacity int `json:"capacity"`
	// MaxWeight is the most a character carries, worn items included: a
	// pickup above it is refused.
	MaxWeight float32 `json:"maxWeight"`
	// EncumberedAt is the weight above which a character is slowed to
	// EncumberedSpeed (a fraction of full speed).
	EncumberedAt    float32 `json:"encumberedAt"`
	EncumberedSpeed float32 `json:"encumberedSpeed"`
}

// SpeedFactor is the fraction of full speed a character carrying weight
// walks at. The server's movement and the client's prediction both use it.
func (b Bag) SpeedFactor(weight float32) float32 {
	if b.EncumberedSpeed > 0 && weight > b.EncumberedAt {
		return b.EncumberedSpeed
	}
	return 1
}

// Item is the pack's definition of kind, and whether it has one.
func (p *Pack) Item(kind string) (ItemDef, bool) {
	i := slices.IndexFunc(p.Items, func(d ItemDef) bool { return d.Kind == kind })
	if i < 0 {
		return ItemDef{}, false
	}
	return p.Items[i], true
}

// Skill is the pack's definition of the named skill, and whether it has one.
func (p *Pack) Skill(name string) (SkillDef, bool) {
	i := slices.IndexFunc(p.Skills, func(d SkillDef) bool { return d.Name == name })
	if i < 0 {
		return SkillDef{}, false
	}
	return p.Skills[i], true
}

// kinds are every item kind the pack mentions outside Items: its ground
// loot, its loot tables' drops and its key, each with the field that
// names it.
func (p *Pack) kinds() map[string]string {
	named := map[string]string{}
	mention := func(kind, field string) {
		if _, ok := named[kind]; !ok && kind != "" {
			named[kind] = field
		}
	}
	for i, k := range p.GroundLoot {
		mention(k, fmt.Sprintf("groundLoot[%d]", i))
	}
	p.eachDrop(func(field string, d Drop) { mention(d.Kind, field+".kind") })
	mention(p.Key, "key")
	return named
}

// validateItems checks the items, skills and bag, and that every kind the
// pack mentions is an item it defines.
func (p *Pack) validateItems() error {
	var errs []error
	seen := map[string]bool{}
	for i, d := range p.Items {
		field := fmt.Sprintf("items[%d]", i)
		if seen[d.Kind] {
			errs = append(errs, fmt.Errorf("%s.kind: %q is defined twice", field, d.Kind))
		}
		seen[d.Kind] = true
		errs = append(errs, p.validateItem(field, d))
	}
	for kind, field := range p.kinds() {
		if !seen[kind] {
			errs = append(errs, fmt.Errorf("%s: item %q is not in items", field, kind))
		}
	}
	skills := map[string]bool{}
	for i, s := range p.Skills {
		field := fmt.Sprintf("skills[%d]", i)
		if s.Name == "" || skills[s.Name] {
			errs = append(errs, fmt.Errorf("%s.name: %q is empty or defined twice", field, s.Name))
		}
		skills[s.Name] = true
		if !slices.IsSorted(s.Levels) || slices.Contains(s.Levels, 0) || len(slices.Compact(slices.Clone(s.Levels))) != len(s.Levels) {
			errs = append(errs, fmt.Errorf("%s.levels: %v must rise from above 0", field, s.Levels))
		}
	}
	if _, ok := p.Skill(p.BaseSkill); !ok {
		errs = append(errs, fmt.Errorf("baseSkill: %q is not in skills", p.BaseSkill))
	}
	errs = append(errs, p.Bag.validate(), p.validateEquipCooldown())
	return errors.Join(errs...)
}

func (p *Pack) validateItem(field string, d ItemDef) error {
	var errs []error
	if d.Kind == "" {
		errs = append(errs, fmt.Errorf("%s.kind: must not be empty", field))
	}
	if d.Slots >= 1<<SlotCount {
		errs = append(errs, fmt.Errorf("%s.slots: %#x names slots that do not exist", field, uint8(d.Slots)))
	}
	if !(d.Weight >= 0 && d.Weight <= 100) {
		errs = append(errs, fmt.Errorf("%s.weight: %v is not within 0 to 100", field, d.Weight))
	}
	if d.Attack < 0 || d.Defence < 0 {
		errs = append(errs, fmt.Errorf("%s: attack and defence must not be negative (%d, %d)", field, d.Attack, d.Defence))
	}
	if d.Requires.Skill != "" {
		if _, ok := p.Skill(d.Requires.Skill); !ok {
			errs = append(errs, fmt.Errorf("%s.requires.skill: %q is not in skills", field, d.Requires.Skill))
		}
		if d.Requires.Level < 1 {
			errs = append(errs, fmt.Errorf("%s.requires.level: %d must be at least 1", field, d.Requires.Level))
		}
	}
	if _, ok := p.Skill(d.Trains); d.Trains != "" && !ok {
		errs = append(errs, fmt.Errorf("%s.trains: %q is not in skills", field, d.Trains))
	}
	if d.Stackable && d.Slots != 0 {
		errs = append(errs, fmt.Errorf("%s.stackable: an item worn in %v cannot stack", field, d.Slots))
	}
	if u := d.Use; u != nil {
		if u.Heal < 1 || u.Heal > 255 {
			errs = append(errs, fmt.Errorf("%s.use.heal: %d is not within 1 to 255", field, u.Heal))
		}
		if d.Slots != 0 {
			errs = append(errs, fmt.Errorf("%s.use: an item worn in %v is not used up", field, d.Slots))
		}
	}
	return errors.Join(errs...)
}

func (b Bag) validate() error {
	var errs []error
	if b.Capacity < 1 || b.Capacity > 64 {
		errs = append(errs, fmt.Errorf("bag.capacity: %d is not within 1 to 64", b.Capacity))
	}
	if !(b.MaxWeight > 0 && b.MaxWeight < math.MaxFloat32) {
		errs = append(errs, fmt.Errorf("bag.maxWeight: %v must be above 0", b.MaxWeight))
	}
	if !(b.EncumberedAt >= 0 && b.EncumberedAt <= b.MaxWeight) {
		errs = append(errs, fmt.Errorf("bag.encumberedAt: %v is not within 0 to maxWeight %v", b.EncumberedAt, b.MaxWeight))
	}
	if !(b.EncumberedSpeed > 0 && b.EncumberedSpeed <= 1) {
		errs = append(errs, fmt.Errorf("bag.encumberedSpeed: %v is not within (0, 1]", b.EncumberedSpeed))
	}
	return errors.Join(errs...)
}

func (p *Pack) validateEquipCooldown() error {
	if !(p.EquipCooldown >= 0 && p.EquipCooldown <= 60) {
		return fmt.Errorf("equipCooldown: %v s is not within [0, 60]", p.EquipCooldown)
	}
	return nil
}
