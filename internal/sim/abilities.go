package sim

import (
	"errors"
	"math"
	"slices"

	"github.com/roomkeeper/roomkeeper/internal/content"
)

// Abilities (content.Ability): a cast is checked when it arrives (Cast),
// like an attack; an enemy ability lands in the next step's combat with
// its own damage and weakens its target at once (its debuff, which
// provokes it like a hit), a self ability heals or buffs the caster at
// once. Buffs and debuffs show in everyone's snapshots as effect bits of
// the entity's state (StateStrengthened, StateWeakened). Mana
// and stamina come back each second, up to their most; the owner sees
// them, its buffs and its abilities' cooldowns in its inventory channel,
// which changes at most once a second while they regenerate. A character
// keeps its pools, cooldowns and buffs across maps and sessions
// (AbilityRecord): they go on running while it is away, so a portal or a
// reconnect refills or readies nothing early.

// Errors of a cast; the room server maps them to protocol codes.
var (
	ErrNoAbility         = errors.New("no such ability in this map's content pack")
	ErrNotEnoughMana     = errors.New("not enough mana")
	ErrNotEnoughStamina  = errors.New("not enough stamina")
	ErrAbilityOnCooldown = errors.New("the ability is still cooling down")
)

// activeBuff is one ability's buff on a player, until a tick.
type activeBuff struct {
	ability int
	until   uint64
}

// Resources is a player's pools as its owner sees them.
type Resources struct {
	Mana, ManaMax, Stamina, StaminaMax int
}

// BuffState is one buff on a player: the ability's, what it adds, until
// when.
type BuffState struct {
	Ability         string
	Attack, Defence int
	Until           uint64
}

// AbilityState is when the player can cast an ability again (a tick; 0:
// now).
type AbilityState struct {
	Name  string
	Ready uint64
}

// AbilityRecord is what a character keeps of its abilities: its pools,
// and the seconds left of each ability's cooldown and buff, by name (an
// ability a later pack does not have is forgotten: it cools and buffs
// nothing there).
type AbilityRecord struct {
	Mana, Stamina    float32
	Cooldowns, Buffs map[string]float32
}

// abilityRecord is what the player keeps of its abilities now; nil when
// the pack has none and no pools.
func (w *World) abilityRecord(p *playerState) *AbilityRecord {
	pack := &w.combat.pack
	if len(pack.Abilities) == 0 && pack.Resources == (content.Resources{}) {
		return nil
	}
	r := &AbilityRecord{Mana: p.mana, Stamina: p.stamina}
	for i, a := range pack.Abilities {
		if left := w.secondsUntil(p.abilityReady[i]); left > 0 {
			r.Cooldowns = setSeconds(r.Cooldowns, a.Name, left)
		}
	}
	for _, b := range p.buffs {
		if left := w.secondsUntil(b.until); left > 0 {
			r.Buffs = setSeconds(r.Buffs, pack.Abilities[b.ability].Name, left)
		}
	}
	return r
}

func setSeconds(m map[string]float32, name string, seconds float32) map[string]float32 {
	if m == nil {
		m = map[string]float32{}
	}
	m[name] = seconds
	return m
}

// secondsUntil is the time from now to tick, 0 for a tick passed.
func (w *World) secondsUntil(tick uint64) float32 {
	if tick <= w.tick || w.combat.tickRate <= 0 {
		return 0
	}
	return float32(tick-w.tick) / float32(w.combat.tickRate)
}

// restoreAbilities gives a joining player what it kept, as it is after
// away seconds: each pool regained a second's gain for every whole second
// (up to its most), and cooldowns and buffs ran down by away (and last
// no longer than the pack's own: a pack may have shortened them). A nil
// record leaves the full pools of fillResources.
func (w *World) restoreAbilities(p *playerState, r *AbilityRecord, away float32) {
	if r == nil {
		return
	}
	res, seconds := w.combat.pack.Resources, float32(math.Floor(float64(max(0, away))))
	p.mana = clamp(r.Mana+res.Mana.Regen*seconds, float32(res.Mana.Max))
	p.stamina = clamp(r.Stamina+res.Stamina.Regen*seconds, float32(res.Stamina.Max))
	for i, a := range w.combat.pack.Abilities {
		if left := r.Cooldowns[a.Name] - away; left > 0 {
			p.abilityReady[i] = w.tick + max(1, ticks(min(left, a.Cooldown), w.combat.tickRate))
		}
		if left := r.Buffs[a.Name] - away; left > 0 && a.Buff != nil {
			p.buffs = append(p.buffs, activeBuff{ability: i, until: w.tick + max(1, ticks(min(left, a.Buff.Duration), w.combat.tickRate))})
		}
	}
}

// clamp keeps a restored pool within 0 and its most (a saved value is
// not trusted beyond that).
func clamp(v, most float32) float32 {
	if !(v > 0) { // also NaN
		return 0
	}
	return min(v, most)
}

// fillResources gives a joining player full pools.
func (w *World) fillResources(p *playerState) {
	r := w.combat.pack.Resources
	p.mana, p.stamina = float32(r.Mana.Max), float32(r.Stamina.Max)
	p.abilityReady, p.buffs = make([]uint64, len(w.combat.pack.Abilities)), nil
}

// Cast checks player's cast of the named ability (on target, for an enemy
// ability) now. It fails, changing nothing, when the player is dead or
// leaving, the ability is unknown or cooling down, its cost is more than
// the player has, or an enemy target is no living NPC within range and
// sight.
func (w *World) Cast(player uint32, name string, target uint32) error {
	e, p, err := w.livingPlayer(player)
	switch {
	case err != nil:
		return err
	case w.leaving[player]:
		return ErrLeaving
	}
	a, i, ok := w.combat.pack.Ability(name)
	switch {
	case !ok:
		return ErrNoAbility
	case w.tick < p.abilityReady[i]:
		return ErrAbilityOnCooldown
	case float32(a.Mana) > p.mana:
		return ErrNotEnoughMana
	case float32(a.Stamina) > p.stamina:
		return ErrNotEnoughStamina
	}
	if a.Target == content.TargetEnemy {
		if err := w.castAt(e, a, i, target); err != nil {
			return err
		}
	} else {
		w.castOnSelf(e, p, a, i)
	}
	p.mana -= float32(a.Mana)
	p.stamina -= float32(a.Stamina)
	p.abilityReady[i] = w.tick + max(1, ticks(a.Cooldown, w.combat.tickRate))
	p.dirty = true // the next checkpoint keeps what it spent
	w.changed(p)
	return nil
}

// castAt lands an enemy ability's damage on target in the next step and
// puts its debuff (ability i's) on target now.
func (w *World) castAt(e *Entity, a content.Ability, i int, target uint32) error {
	t := w.find(target)
	switch {
	case t == nil || t.Kind != KindNPC || t.HP == 0:
		return ErrNotATarget
	case dist2(e, t) > a.Range*a.Range:
		return ErrOutOfRange
	case !w.lineOfSight(e.X, e.Y, t.X, t.Y):
		return ErrNoLineOfSight
	}
	w.player(e).target = target
	if a.Damage > 0 {
		w.combat.attacks = append(w.combat.attacks, hit{from: e.ID, to: target, damage: a.Damage})
	}
	if a.Debuff != nil {
		n := w.npc(t)
		n.debuff = activeBuff{ability: i, until: w.tick + max(1, ticks(a.Debuff.Duration, w.combat.tickRate))}
		w.provoke(n, e)
	}
	return nil
}

// weakened reports whether a debuff is on n now.
func (w *World) weakened(n *npcState) bool { return n.debuff.until > w.tick }

// weaken takes the debuff on n, if any, off its stats f (never below 0).
func (w *World) weaken(f content.Fighter, n *npcState) content.Fighter {
	if !w.weakened(n) {
		return f
	}
	d := w.combat.pack.Abilities[n.debuff.ability].Debuff
	f.Attack, f.Defence = max(0, f.Attack-d.Attack), max(0, f.Defence-d.Defence)
	return f
}

// castOnSelf heals the caster and puts the ability's buff on it (a new
// cast of the same ability renews it).
func (w *World) castOnSelf(e *Entity, p *playerState, a content.Ability, i int) {
	w.heal(e, a.Heal)
	if a.Buff == nil {
		return
	}
	p.buffs = slices.DeleteFunc(p.buffs, func(b activeBuff) bool { return b.ability == i })
	p.buffs = append(p.buffs, activeBuff{ability: i, until: w.tick + max(1, ticks(a.Buff.Duration, w.combat.tickRate))})
}

// regenerate gives each player its pools' gain once a second, ends the
// buffs whose time is up, and remakes the owner's view of whoever
// changed.
func (w *World) regenerate() {
	r := w.combat.pack.Resources
	second := w.combat.tickRate > 0 && w.tick%uint64(w.combat.tickRate) == 0
	for i := range w.players.rows {
		p := &w.players.rows[i]
		changed := false
		if second {
			changed = refill(&p.mana, r.Mana) || changed
			changed = refill(&p.stamina, r.Stamina) || changed
		}
		if n := len(p.buffs); n > 0 {
			p.buffs = slices.DeleteFunc(p.buffs, func(b activeBuff) bool { return b.until <= w.tick })
			changed = changed || len(p.buffs) != n
		}
		if changed {
			w.changed(p)
		}
	}
}

// refill adds a second's gain to a pool below its most, and says whether
// its whole value changed.
func refill(pool *float32, r content.Resource) bool {
	full := float32(r.Max)
	if *pool >= full {
		return false
	}
	before := int(*pool)
	*pool = min(full, *pool+r.Regen)
	return int(*pool) != before
}

// buffBonus is what the player's buffs add to its attack and defence.
func (w *World) buffBonus(p *playerState) content.Fighter {
	var f content.Fighter
	for _, b := range p.buffs {
		if buff := w.combat.pack.Abilities[b.ability].Buff; buff != nil {
			f.Attack += buff.Attack
			f.Defence += buff.Defence
		}
	}
	return f
}

// ownedAbilities is the owner's view of its pools, buffs and cooldowns.
func (w *World) ownedAbilities(p *playerState, o *Owned) {
	pack := &w.combat.pack
	o.Resources = Resources{Mana: int(p.mana), ManaMax: pack.Resources.Mana.Max,
		Stamina: int(p.stamina), StaminaMax: pack.Resources.Stamina.Max}
	for _, b := range p.buffs {
		a := pack.Abilities[b.ability]
		o.Buffs = append(o.Buffs, BuffState{Ability: a.Name, Attack: a.Buff.Attack, Defence: a.Buff.Defence, Until: b.until})
	}
	for i, a := range pack.Abilities {
		if i < len(p.abilityReady) && p.abilityReady[i] > w.tick {
			o.Abilities = append(o.Abilities, AbilityState{Name: a.Name, Ready: p.abilityReady[i]})
		}
	}
}
