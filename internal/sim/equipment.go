package sim

import (
	"errors"
	"slices"

	"github.com/roomkeeper/roomkeeper/internal/content"
)

// Inventory and equipment: a player carries items in its bag (a capacity
// of bag slots, a stack of a stackable kind taking one) and wears some in
// equipment slots. Everything carried or worn counts towards its weight:
// above the bag's MaxWeight nothing more is picked up, above EncumberedAt
// it walks slower (content.Bag.SpeedFactor, which the client's prediction
// shares). Worn items add their attack and defence to the player's.
//
// Equipping moves an item between the bag and a slot, a critical action
// like a pickup: ReserveEquip checks the rules and holds the item and the
// slot, the room server commits the move, then CompleteEquip applies it
// (or CancelEquip lets go). A slot stays locked for the pack's
// EquipCooldown after a change, and while the player fights.

// Errors of equipment actions; the room server maps them to protocol codes.
var (
	ErrItemNotFound = errors.New("no such item in the bag")
	ErrIllegalSlot  = errors.New("the item is not worn there")
	ErrSkillGate    = errors.New("the skill is too low to wear it")
	ErrEquipLocked  = errors.New("the slot is locked: cooling down, fighting, or busy")
	ErrBagFull      = errors.New("the bag is full")
	ErrTooHeavy     = errors.New("that would be too heavy to carry")
	ErrWorn         = errors.New("the item is worn: unequip it first")
	ErrSlotEmpty    = errors.New("nothing is worn there")
)

// combatLinger is how long, in seconds, after its last blow given or
// taken a player still counts as fighting (and cannot change equipment).
const combatLinger = 3

// Worn is an item worn in a slot.
type Worn struct {
	Item
	Slot content.Slot
}

// Equip is a reserved equipment change: Item goes into Slot (equip) or
// out of it into the bag (unequip, Unequip set); Swapped is the item an
// equip takes off the slot into the bag, if any.
type Equip struct {
	Item    Item
	Slot    content.Slot
	Swapped Item
	Unequip bool
}

// Owned is a player's inventory as its owner sees it: made anew on every
// change, never changed after, so views share it and a new pointer means
// a change.
type Owned struct {
	Bag    []Item
	Worn   []Worn
	Weight float32
	Skills []SkillLevel
	// Resources, Buffs and Abilities (those cooling down) are its pools,
	// buffs and cooldowns (abilities.go).
	Resources Resources
	Buffs     []BuffState
	Abilities []AbilityState
}

// SkillLevel is a player's standing in one skill.
type SkillLevel struct {
	Name  string
	Level int
	XP    int
}

// equipment is what a player wears and the locks on its slots.
type equipment struct {
	worn [content.SlotCount]Item
	// lockedUntil is the tick each slot's cooldown ends; busy marks the
	// slots with a change being committed.
	lockedUntil [content.SlotCount]uint64
	busy        content.SlotMask
}

var slotNames = content.Slots()

// itemDef is the pack's definition of kind; a kind the pack does not know
// (an item from an older content version) weighs 1 and is worn nowhere.
func (w *World) itemDef(kind string) content.ItemDef {
	if d, ok := w.combat.pack.Item(kind); ok {
		return d
	}
	return content.ItemDef{Kind: kind, Weight: 1}
}

// ReserveEquip checks that the player can wear the bag's item itemID in
// slot, and holds both until CompleteEquip or CancelEquip.
func (w *World) ReserveEquip(player uint32, itemID string, slot content.Slot) (Equip, error) {
	p, err := w.equipper(player)
	if err != nil {
		return Equip{}, err
	}
	i := slices.IndexFunc(p.inventory, func(it Item) bool { return it.ID == itemID })
	switch {
	case i < 0 && p.wears(itemID):
		return Equip{}, ErrWorn
	case i < 0:
		return Equip{}, ErrItemNotFound
	case slices.Contains(p.busy, itemID):
		return Equip{}, ErrEquipLocked
	}
	item := p.inventory[i]
	def := w.itemDef(item.Kind)
	if !def.Slots.Has(slot) {
		return Equip{}, ErrIllegalSlot
	}
	if req := def.Requires; req.Skill != "" && w.skillLevel(p, req.Skill) < req.Level {
		return Equip{}, ErrSkillGate
	}
	if err := w.slotFree(p, slot); err != nil {
		return Equip{}, err
	}
	eq := Equip{Item: item, Slot: slot, Swapped: p.gear.worn[slot]}
	p.gear.busy |= slot.Mask()
	p.busy = append(p.busy, item.ID)
	return eq, nil
}

// ReserveUnequip checks that the player can take off what it wears in
// slot into its bag, and holds the slot until CompleteEquip or CancelEquip.
func (w *World) ReserveUnequip(player uint32, slot content.Slot) (Equip, error) {
	p, err := w.equipper(player)
	if err != nil {
		return Equip{}, err
	}
	if p.gear.worn[slot].ID == "" {
		return Equip{}, ErrSlotEmpty
	}
	if err := w.slotFree(p, slot); err != nil {
		return Equip{}, err
	}
	item := p.gear.worn[slot]
	if w.bagSlotsWith(p, item) > w.combat.pack.Bag.Capacity {
		return Equip{}, ErrBagFull
	}
	p.gear.busy |= slot.Mask()
	return Equip{Item: item, Slot: slot, Unequip: true}, nil
}

// equipper is the state of a living player that is not leaving.
func (w *World) equipper(player uint32) (*playerState, error) {
	_, p, err := w.livingPlayer(player)
	if err == nil && w.leaving[player] {
		err = ErrLeaving
	}
	return p, err
}

// slotFree refuses a slot that is cooling down, busy, or whose player
// fights.
func (w *World) slotFree(p *playerState, slot content.Slot) error {
	if slot >= content.SlotCount {
		return ErrIllegalSlot
	}
	if p.gear.busy&slot.Mask() != 0 || w.tick < p.gear.lockedUntil[slot] || w.fighting(p) {
		return ErrEquipLocked
	}
	return nil
}

// fighting reports whether the player gave or took a blow lately.
func (w *World) fighting(p *playerState) bool {
	return p.foughtAt > 0 && w.tick < p.foughtAt+ticks(combatLinger, w.combat.tickRate)
}

// CompleteEquip applies a committed equipment change; the slot then cools
// down. The change is in the database already: if the player left since,
// its next join loads it.
func (w *World) CompleteEquip(player uint32, eq Equip) {
	_, p := w.findPlayer(player)
	if p == nil {
		return
	}
	w.releaseEquip(p, eq)
	if eq.Unequip {
		p.gear.worn[eq.Slot] = Item{}
		p.inventory = append(p.inventory, eq.Item)
	} else {
		p.inventory = slices.DeleteFunc(p.inventory, func(it Item) bool { return it.ID == eq.Item.ID })
		if eq.Swapped.ID != "" {
			p.inventory = append(p.inventory, eq.Swapped)
		}
		p.gear.worn[eq.Slot] = eq.Item
	}
	p.gear.lockedUntil[eq.Slot] = w.tick + ticks(w.combat.pack.EquipCooldown, w.combat.tickRate)
	w.changed(p)
}

// CancelEquip lets go of a reserved change after a failed commit.
func (w *World) CancelEquip(player uint32, eq Equip) {
	if _, p := w.findPlayer(player); p != nil {
		w.releaseEquip(p, eq)
	}
}

func (w *World) releaseEquip(p *playerState, eq Equip) {
	p.gear.busy &^= eq.Slot.Mask()
	p.busy = slices.DeleteFunc(p.busy, func(id string) bool { return id == eq.Item.ID })
}

// wears reports whether the player wears item id.
func (p *playerState) wears(id string) bool {
	return slices.ContainsFunc(p.gear.worn[:], func(it Item) bool { return it.ID == id })
}

// bagSlotsWith is how many bag slots the player's bag takes with item
// added: one an item, one a stack of a stackable kind.
func (w *World) bagSlotsWith(p *playerState, item Item) int {
	n, stacks := 0, map[string]bool{}
	for _, it := range append(slices.Clip(p.inventory), item) {
		if !w.itemDef(it.Kind).Stackable {
			n++
		} else if !stacks[it.Kind] {
			stacks[it.Kind] = true
			n++
		}
	}
	return n
}

// canCarry refuses an item that the player's bag has no room for or that
// would make it too heavy.
func (w *World) canCarry(p *playerState, item Item) error {
	bag := w.combat.pack.Bag
	if w.bagSlotsWith(p, item) > bag.Capacity {
		return ErrBagFull
	}
	if p.owned.Weight+w.itemDef(item.Kind).Weight > bag.MaxWeight {
		return ErrTooHeavy
	}
	return nil
}

// changed remakes the player's Owned, its speed and its fighting bonus
// after its inventory, equipment or skills changed.
func (w *World) changed(p *playerState) {
	o := &Owned{Bag: slices.Clone(p.inventory)}
	p.bonus = content.Fighter{}
	for _, it := range p.inventory {
		o.Weight += w.itemDef(it.Kind).Weight
	}
	for _, s := range slotNames {
		if it := p.gear.worn[s]; it.ID != "" {
			def := w.itemDef(it.Kind)
			o.Worn = append(o.Worn, Worn{Item: it, Slot: s})
			o.Weight += def.Weight
			p.bonus.Attack += def.Attack
			p.bonus.Defence += def.Defence
		}
	}
	for i, s := range w.combat.pack.Skills {
		o.Skills = append(o.Skills, SkillLevel{Name: s.Name, Level: s.Level(p.xp[i]), XP: p.xp[i]})
	}
	buff := w.buffBonus(p)
	p.bonus.Attack += buff.Attack
	p.bonus.Defence += buff.Defence
	w.ownedAbilities(p, o)
	p.owned = o
	p.speed = w.tun.PlayerSpeed * w.combat.pack.Bag.SpeedFactor(o.Weight)
}

// Owned is the player's inventory, equipment and skills; nil for no player.
func (w *World) Owned(player uint32) *Owned {
	if _, p := w.findPlayer(player); p != nil {
		return p.owned
	}
	return nil
}
