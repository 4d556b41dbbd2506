package content

import "github.com/roomkeeper/roomkeeper/internal/protocol"

// Definitions are the pack as players' clients see it (the join API's
// GET .../content, a welcome's contentHash), in the pack's own order.
func (p *Pack) Definitions() protocol.PackDefinitions {
	d := protocol.PackDefinitions{Name: p.Name, Items: make([]protocol.ItemDefinition, len(p.Items)), Skills: make([]protocol.SkillDefinition, len(p.Skills)),
		Bag: protocol.BagDefinition{Capacity: p.Bag.Capacity, MaxWeight: p.Bag.MaxWeight, EncumberedAt: p.Bag.EncumberedAt,
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
		d.Skills[i] = protocol.SkillDefinition{Name: s.Name, Levels: append([]int(nil), s.Levels...)}
	}
	if r := p.Resources; r.Mana.Max > 0 || r.Stamina.Max > 0 {
		d.Resources = &protocol.ResourcesDefinition{Mana: r.Mana.Max, ManaRegen: r.Mana.Regen, Stamina: r.Stamina.Max, StaminaRegen: r.Stamina.Regen}
	}
	for _, a := range p.Abilities {
		ad := protocol.AbilityDefinition{Name: a.Name, Mana: a.Mana, Stamina: a.Stamina, Cooldown: a.Cooldown, Target: a.Target,
			Range: a.Range, Damage: a.Damage, Heal: a.Heal}
		if b := a.Buff; b != nil {
			ad.BuffAttack, ad.BuffDefence, ad.BuffSeconds = b.Attack, b.Defence, b.Duration
		}
		if b := a.Debuff; b != nil {
			ad.DebuffAttack, ad.DebuffDefence, ad.DebuffSeconds = b.Attack, b.Defence, b.Duration
		}
		d.Abilities = append(d.Abilities, ad)
	}
	return d
}

func itemDefinition(p *Pack, it ItemDef) protocol.ItemDefinition {
	d := protocol.ItemDefinition{Kind: it.Kind, Weight: it.Weight, Attack: it.Attack, Defence: it.Defence,
		Stackable: it.Stackable, Trains: it.Trains}
	for _, s := range Slots() {
		if it.Slots.Has(s) {
			d.Slots = append(d.Slots, s.String())
		}
	}
	if it.Requires.Skill != "" {
		d.Requires = &protocol.SkillRequirement{Skill: it.Requires.Skill, Level: it.Requires.Level}
	}
	_, d.Critical = p.Policy(it.Kind)
	if it.Use != nil {
		d.Use = &protocol.UseDefinition{Heal: it.Use.Heal}
	}
	return d
}

func enemyDefinition(e EnemyType, boss bool) protocol.EnemyDefinition {
	d := protocol.EnemyDefinition{Name: e.Name, HP: int(e.HP), Attack: e.Attack, Defence: e.Defence, Range: e.Range,
		Speed: e.Speed, Hostile: e.Hostile, Boss: boss}
	for _, ph := range e.Phases {
		d.Phases = append(d.Phases, ph.BelowPercent)
	}
	return d
}
