package content

import (
	"errors"
	"fmt"
	"math"
)

// Abilities are what a player casts (combat.cast) beside its plain attack,
// each for a cost in a resource it regenerates: mana or stamina.

// The targets of an ability.
const (
	// TargetEnemy abilities hit or weaken an NPC within range and sight.
	TargetEnemy = "enemy"
	// TargetSelf abilities heal or strengthen the caster.
	TargetSelf = "self"
)

// Resources are the pools every character has; a zero Max: none.
type Resources struct {
	Mana    Resource `json:"mana,omitzero"`
	Stamina Resource `json:"stamina,omitzero"`
}

// Resource is one pool: a character starts full (on every join) and gains
// Regen back each second, up to Max.
type Resource struct {
	Max   int     `json:"max"`
	Regen float32 `json:"regen,omitempty"`
}

// Ability is one thing a player casts.
type Ability struct {
	Name string `json:"name"`
	// Mana and Stamina are what a cast costs.
	Mana    int `json:"mana,omitempty"`
	Stamina int `json:"stamina,omitempty"`
	// Cooldown is the seconds before the same ability can be cast again.
	Cooldown float32 `json:"cooldown"`
	// Target is TargetEnemy or TargetSelf.
	Target string `json:"target"`
	// Range is how near (world units) an enemy target must be.
	Range float32 `json:"range,omitempty"`
	// Damage is what it does to an enemy target, whatever its defence.
	Damage int `json:"damage,omitempty"`
	// Heal is the hit points it gives the caster back, up to full.
	Heal int `json:"heal,omitempty"`
	// Buff strengthens the caster for a while (a self ability).
	Buff *Buff `json:"buff,omitempty"`
	// Debuff weakens an enemy target for a while: its attack and defence
	// are what the target loses (an enemy ability).
	Debuff *Buff `json:"debuff,omitempty"`
}

// Buff adds to a fighter's attack and defence for Duration seconds, or,
// as a debuff, takes them off (never below 0).
type Buff struct {
	Attack   int     `json:"attack,omitempty"`
	Defence  int     `json:"defence,omitempty"`
	Duration float32 `json:"duration"`
}

// Ability is the pack's ability of that name, its index, and whether it
// has one.
func (p *Pack) Ability(name string) (Ability, int, bool) {
	for i, a := range p.Abilities {
		if a.Name == name {
			return a, i, true
		}
	}
	return Ability{}, -1, false
}

// validateAbilities checks the resources and each ability, naming the
// field.
func (p *Pack) validateAbilities() error {
	errs := []error{p.Resources.Mana.validate("resources.mana"), p.Resources.Stamina.validate("resources.stamina")}
	seen := map[string]bool{}
	for i, a := range p.Abilities {
		field := fmt.Sprintf("abilities[%d]", i)
		if a.Name == "" || seen[a.Name] {
			errs = append(errs, fmt.Errorf("%s.name: %q is empty or defined twice", field, a.Name))
		}
		seen[a.Name] = true
		errs = append(errs, p.validateAbility(field, a))
	}
	return errors.Join(errs...)
}

func (r Resource) validate(field string) error {
	if r.Max < 0 || r.Max > 10000 {
		return fmt.Errorf("%s.max: %d is not within 0 to 10000", field, r.Max)
	}
	if !(r.Regen >= 0 && r.Regen <= math.MaxInt16) {
		return fmt.Errorf("%s.regen: %v is not within 0 to %d a second", field, r.Regen, math.MaxInt16)
	}
	return nil
}

func (p *Pack) validateAbility(field string, a Ability) error {
	var errs []error
	if a.Mana < 0 || a.Mana > p.Resources.Mana.Max {
		errs = append(errs, fmt.Errorf("%s.mana: %d is not within 0 to resources.mana.max %d", field, a.Mana, p.Resources.Mana.Max))
	}
	if a.Stamina < 0 || a.Stamina > p.Resources.Stamina.Max {
		errs = append(errs, fmt.Errorf("%s.stamina: %d is not within 0 to resources.stamina.max %d", field, a.Stamina, p.Resources.Stamina.Max))
	}
	if !(a.Cooldown > 0 && a.Cooldown <= 600) {
		errs = append(errs, fmt.Errorf("%s.cooldown: %v s is not within (0, 600]", field, a.Cooldown))
	}
	switch a.Target {
	case TargetEnemy:
		if !(a.Range > 0 && a.Range <= 256) {
			errs = append(errs, fmt.Errorf("%s.range: %v is not within (0, 256]", field, a.Range))
		}
		if a.Damage < 0 || a.Damage > 255 || (a.Damage == 0 && a.Debuff == nil) || a.Heal != 0 || a.Buff != nil {
			errs = append(errs, fmt.Errorf("%s.damage: an enemy ability does 1 to 255 damage or weakens (debuff), and only that", field))
		}
		errs = append(errs, a.Debuff.validate(field+".debuff"))
	case TargetSelf:
		if a.Damage != 0 || a.Debuff != nil || (a.Heal == 0 && a.Buff == nil) {
			errs = append(errs, fmt.Errorf("%s: a self ability heals or buffs, and does no damage and no debuff", field))
		}
		if a.Heal < 0 || a.Heal > 255 {
			errs = append(errs, fmt.Errorf("%s.heal: %d is not within 0 to 255", field, a.Heal))
		}
		errs = append(errs, a.Buff.validate(field+".buff"))
	default:
		errs = append(errs, fmt.Errorf("%s.target: %q is not %s or %s", field, a.Target, TargetEnemy, TargetSelf))
	}
	return errors.Join(errs...)
}

func (b *Buff) validate(field string) error {
	switch {
	case b == nil:
		return nil
	case b.Attack < 0 || b.Defence < 0 || b.Attack+b.Defence == 0:
		return fmt.Errorf("%s: attack and defence must not be negative, and one above 0 (%d, %d)", field, b.Attack, b.Defence)
	case !(b.Duration > 0 && b.Duration <= 600):
		return fmt.Errorf("%s.duration: %v s is not within (0, 600]", field, b.Duration)
	}
	return nil
}
