package sim

import (
	"maps"
	"slices"

	"github.com/roomkeeper/roomkeeper/internal/content"
)

// playerState is what a player has beyond its entity: the input backlog,
// what it carries, and its persistence bookkeeping.
type playerState struct {
	inputs  []Input
	lastSeq uint32
	// standing is the least the backlog held after a step since
	// windowFrom: inputs that waited the whole window (see trimStanding).
	standing   int
	windowFrom uint64
	inventory  []Item   // the bag
	busy       []string // item ids with a drop or equip being committed
	gear       equipment
	xp         []int // experience by skill, as the pack lists skills
	// mana and stamina are its pools (abilities.go); abilityReady the tick
	// each of the pack's abilities can be cast again; buffs those on it.
	mana, stamina float32
	abilityReady  []uint64
	buffs         []activeBuff
	// keptXP is the experience in skills the pack no longer has: saved
	// back as it came, never lost to a content change (docs/content.md).
	keptXP     map[string]int
	owned      *Owned          // what the owner sees; remade on every change
	bonus      content.Fighter // what the worn items add
	speed      float32         // world units per second, encumbrance counted
	foughtAt   uint64          // the last tick it gave or took a blow
	tag        string          // the room server's name for the player (its character)
	revision   int64           // last persisted revision
	epoch      int64           // authority lease epoch, carried into records
	dirty      bool            // changed since the last checkpoint
	committing int             // uses committing their own record (UseRecord): no checkpoint meanwhile
	nextAttack uint64          // the tick its attack cooldown ends
	respawnAt  uint64          // while dead: the tick it comes back; 0 while alive
	target     uint32          // whom it attacked last, while that one lives
}

// player is e's player state; e must be a player.
func (w *World) player(e *Entity) *playerState { return &w.players.rows[e.slot] }

// findPlayer returns player id's entity and state, or nils when id is not
// a player here.
func (w *World) findPlayer(id uint32) (*Entity, *playerState) {
	e := w.find(id)
	if e == nil || e.Kind != KindPlayer {
		return nil, nil
	}
	return e, w.player(e)
}

// livingPlayer returns player id's entity and state, or ErrNoPlayer when
// id is no player here, or ErrDead while it waits for its respawn.
func (w *World) livingPlayer(id uint32) (*Entity, *playerState, error) {
	e, p := w.findPlayer(id)
	switch {
	case p == nil:
		return nil, nil, ErrNoPlayer
	case e.HP == 0:
		return nil, nil, ErrDead
	}
	return e, p, nil
}

// PlayerSpec is who joins: a fresh player at the spawn, or one restored
// from its last checkpoint.
type PlayerSpec struct {
	// Tag names the player outside the world (its character id).
	Tag string
	// Restore places the player at X, Y with HP instead of at the spawn.
	Restore bool
	X, Y    float32
	HP      uint8
	// Revision is the checkpoint revision the state came from.
	Revision int64
	// Inventory is the bag; Worn what it wears.
	Inventory []Item
	Worn      []Worn
	// SkillXP is the experience by skill name.
	SkillXP map[string]int
	// Abilities are its pools, cooldowns and buffs as last saved (nil:
	// full pools, nothing cooling down), and Away the seconds since they
	// were: the pools regain and the cooldowns and buffs run down by it.
	Abilities *AbilityRecord
	Away      float32
	// Epoch is the authority lease epoch the player was admitted under.
	// The world only carries it into records: the store fences writes by it.
	Epoch int64
}

// PlayerRecord is a player's persistent state at one tick: an immutable
// copy the persistence goroutine writes while the world moves on.
type PlayerRecord struct {
	Tag      string
	X, Y     float32
	HP       uint8
	Revision int64
	Tick     uint64
	Epoch    int64
	// SkillXP is the experience by skill name; nil for none.
	SkillXP map[string]int
	// Abilities are its pools, cooldowns and buffs; nil when the pack has
	// no resources and no abilities.
	Abilities *AbilityRecord
}

// JoinPlayer adds a player and returns its entity id.
func (w *World) JoinPlayer(spec PlayerSpec) uint32 {
	id := w.addPlayer(spec.Tag)
	e, p := w.findPlayer(id)
	p.revision, p.inventory, p.epoch = spec.Revision, slices.Clone(spec.Inventory), spec.Epoch
	w.dress(p, spec.Worn)
	for i, s := range w.combat.pack.Skills {
		p.xp[i] = max(0, spec.SkillXP[s.Name])
	}
	for name, xp := range spec.SkillXP {
		if _, ok := w.combat.pack.Skill(name); !ok && xp > 0 {
			if p.keptXP == nil {
				p.keptXP = map[string]int{}
			}
			p.keptXP[name] = xp
		}
	}
	w.restoreAbilities(p, spec.Abilities, spec.Away)
	w.changed(p)
	if spec.Restore {
		e.HP = spec.HP // its hit points whatever became of the spot it left
		if !w.Blocked(float64(spec.X), float64(spec.Y)) {
			e.X, e.Y = spec.X, spec.Y
		}
	}
	if e.HP == 0 {
		p.respawnAt = w.tick + 1 // saved while dead: it comes back at once
	}
	return id
}

// CollectDirty returns a record of every player that changed since the
// last collection (every player with all), each with its next revision.
// A player whose use is committing its own record is left for the next
// collection: a checkpoint between that record and the use's effect would
// write the player without it.
func (w *World) CollectDirty(all bool) []PlayerRecord {
	var out []PlayerRecord
	for i := range w.entities {
		e := &w.entities[i]
		if e.Kind != KindPlayer {
			continue
		}
		if p := w.player(e); p.tag != "" && p.committing == 0 && (p.dirty || all) {
			out = append(out, w.record(e, p))
		}
	}
	return out
}

// Record returns one player's record with its next revision, for a save on
// leave or disconnect.
func (w *World) Record(player uint32) (PlayerRecord, bool) {
	e, p := w.findPlayer(player)
	if p == nil || p.tag == "" {
		return PlayerRecord{}, false
	}
	return w.record(e, p), true
}

func (w *World) record(e *Entity, p *playerState) PlayerRecord {
	p.revision++
	p.dirty = false
	return PlayerRecord{Tag: p.tag, X: e.X, Y: e.Y, HP: e.HP, Revision: p.revision, Tick: w.tick, Epoch: p.epoch,
		SkillXP: w.skillXP(p), Abilities: w.abilityRecord(p)}
}

// dress puts on a joining player's worn items; one that no longer fits its
// slot (the content changed) or whose slot is taken goes into the bag.
func (w *World) dress(p *playerState, worn []Worn) {
	for _, it := range worn {
		if it.Slot < content.SlotCount && w.itemDef(it.Kind).Slots.Has(it.Slot) && p.gear.worn[it.Slot].ID == "" {
			p.gear.worn[it.Slot] = it.Item
		} else {
			p.inventory = append(p.inventory, it.Item)
		}
	}
}

// skillXP is the player's experience by skill name, nil for none: the
// pack's skills and those it no longer has.
func (w *World) skillXP(p *playerState) map[string]int {
	var xp map[string]int
	if len(p.keptXP) > 0 {
		xp = maps.Clone(p.keptXP)
	}
	for i, s := range w.combat.pack.Skills {
		if p.xp[i] > 0 {
			if xp == nil {
				xp = map[string]int{}
			}
			xp[s.Name] = p.xp[i]
		}
	}
	return xp
}

// skillLevel is the player's level in the named skill; 0 for a skill the
// pack does not have.
func (w *World) skillLevel(p *playerState, name string) int {
	for i, s := range w.combat.pack.Skills {
		if s.Name == name {
			return s.Level(p.xp[i])
		}
	}
	return 0
}

// train gives the player xp experience in the skill its weapon trains (or
// the pack's base skill).
func (w *World) train(p *playerState, xp int) {
	if xp <= 0 {
		return
	}
	skill := w.combat.pack.BaseSkill
	if weapon := p.gear.worn[content.Weapon]; weapon.ID != "" {
		if t := w.itemDef(weapon.Kind).Trains; t != "" {
			skill = t
		}
	}
	if i := slices.IndexFunc(w.combat.pack.Skills, func(s content.SkillDef) bool { return s.Name == skill }); i >= 0 {
		p.xp[i] += xp
		w.changed(p)
		p.dirty = true
	}
}

// Tag is the player's outside name.
func (w *World) Tag(player uint32) string {
	if _, p := w.findPlayer(player); p != nil {
		return p.tag
	}
	return ""
}
