package sim

import (
	"errors"
	"slices"
)

// ErrNotUsable refuses using an item whose kind has no use (the pack's
// ItemDef.Use).
var ErrNotUsable = errors.New("that item cannot be used")

// Using a consumable (a potion) is a critical action, like a drop: the
// world reserves the carried item, the room server commits its end (the
// item destroyed) with the event, and only then does the world use it up
// and apply its effect. An item reserved once cannot be used again, so a
// potion used twice in one tick heals once.

// ReserveUse checks that the living player carries itemID and that its
// kind can be used, and holds it until CompleteUse or CancelUse.
func (w *World) ReserveUse(player uint32, itemID string) (Item, error) {
	_, p, err := w.livingPlayer(player)
	if err != nil {
		return Item{}, err
	}
	i := slices.IndexFunc(p.inventory, func(it Item) bool { return it.ID == itemID })
	switch {
	case i < 0 && p.wears(itemID):
		return Item{}, ErrWorn
	case i < 0:
		return Item{}, ErrNotCarried
	case slices.Contains(p.busy, itemID):
		return Item{}, ErrReserved
	case w.itemDef(p.inventory[i].Kind).Use == nil:
		return Item{}, ErrNotUsable
	}
	p.busy = append(p.busy, itemID)
	return p.inventory[i], nil
}

// UseRecord is the player's record, with its next revision, as the use of
// the reserved item leaves it (healed): what the use commits with the
// item's end, so that an acked use is whole after a crash. The player's
// position and the rest are as they are now.
func (w *World) UseRecord(player uint32, item Item) (PlayerRecord, bool) {
	e, p := w.findPlayer(player)
	if p == nil || p.tag == "" {
		return PlayerRecord{}, false
	}
	r := w.record(e, p)
	if use := w.itemDef(item.Kind).Use; use != nil && e.HP > 0 {
		r.HP = w.healed(e.HP, use.Heal)
	}
	p.committing++ // no checkpoint of it until the use completes or is cancelled
	return r, true
}

// settled ends a use's commit: the player is checkpointed again, and its
// state since the use's record is written by the next checkpoint.
func settled(p *playerState) {
	if p.committing > 0 {
		p.committing--
	}
	p.dirty = true
}

// CompleteUse uses the reserved item up and applies its effect: the use
// is in the database already. A player who died meanwhile is not healed;
// the item is used up all the same, as committed.
func (w *World) CompleteUse(player uint32, item Item) {
	e, p := w.findPlayer(player)
	if p == nil {
		return
	}
	settled(p)
	p.busy = slices.DeleteFunc(p.busy, func(id string) bool { return id == item.ID })
	if i := slices.IndexFunc(p.inventory, func(it Item) bool { return it.ID == item.ID }); i >= 0 {
		p.inventory = slices.Delete(p.inventory, i, i+1)
	}
	if use := w.itemDef(item.Kind).Use; use != nil && e.HP > 0 {
		w.heal(e, use.Heal)
	}
	w.changed(p)
}

// heal gives a player hp hit points back, up to full: a potion's and an
// ability's rule.
func (w *World) heal(e *Entity, hp int) { e.HP = w.healed(e.HP, hp) }

// healed is hp with by hit points more, up to full.
func (w *World) healed(hp uint8, by int) uint8 { return uint8(min(int(hp)+by, int(w.tun.MaxHP))) }

// CancelUse releases a reservation whose commit failed.
func (w *World) CancelUse(player uint32, itemID string) {
	if _, p := w.findPlayer(player); p != nil {
		settled(p)
	}
	w.CancelDrop(player, itemID)
}
