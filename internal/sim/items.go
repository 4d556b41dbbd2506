package sim

import (
	"errors"
	"slices"
)

// KindLoot is an item lying on the ground.
const KindLoot Kind = 3

// EventLootRemoved is sent when loot is picked up.
const EventLootRemoved = "loot_removed"

// Errors of item actions; the room server maps them to protocol codes.
var (
	ErrNoPlayer   = errors.New("no such player")
	ErrNoItem     = errors.New("no such item here")
	ErrNotCarried = errors.New("the player does not carry that item")
	ErrOutOfRange = errors.New("out of reach")
	ErrReserved   = errors.New("someone is already taking it")
)

// Item is something a player can carry.
type Item struct {
	ID   string
	Kind string
}

// Loot describes an item to place on the ground.
type Loot struct {
	Item
	X, Y float32
}

// lootState is what loot has beyond its entity: the item, and whether a
// pickup of it is being committed.
type lootState struct {
	item     Item
	reserved bool
}

// lootOf returns loot id's entity and state, or nils when id is not loot.
func (w *World) lootOf(id uint32) (*Entity, *lootState) {
	e := w.find(id)
	if e == nil || e.Kind != KindLoot {
		return nil, nil
	}
	return e, &w.loot.rows[e.slot]
}

// SpawnLoot places items on the ground and returns their entity ids.
func (w *World) SpawnLoot(items []Loot) []uint32 {
	ids := make([]uint32, len(items))
	for i, it := range items {
		e := w.spawn(KindLoot, it.X, it.Y)
		w.loot.rows[e.slot].item = it.Item
		ids[i] = e.ID
	}
	return ids
}

// ReserveLoot starts a pickup: the loot entity must exist, be free and lie
// within reach of the player. While reserved nobody else can take it; the
// caller commits the pickup to the database and then calls CompletePickup
// or CancelPickup.
func (w *World) ReserveLoot(player, loot uint32, reach float32) (Item, error) {
	p, _, err := w.livingPlayer(player)
	if err != nil {
		return Item{}, err
	}
	e, l := w.lootOf(loot)
	switch {
	case l == nil:
		return Item{}, ErrNoItem
	case l.reserved:
		return Item{}, ErrReserved
	}
	if dx, dy := e.X-p.X, e.Y-p.Y; dx*dx+dy*dy > reach*reach {
		return Item{}, ErrOutOfRange
	}
	if err := w.canCarry(w.player(p), l.item); err != nil {
		return Item{}, err
	}
	l.reserved = true
	return l.item, nil
}

// CompletePickup moves reserved loot into the player's inventory. The item
// is the player's in the database already; if the player has left since,
// their next join loads it.
func (w *World) CompletePickup(player, loot uint32) {
	i, ok := w.index(loot)
	if !ok || w.entities[i].Kind != KindLoot {
		return
	}
	item := w.loot.rows[w.entities[i].slot].item
	l := w.remove(i)
	w.emit(Event{Type: EventLootRemoved, Tick: w.tick, Entity: loot, X: l.X, Y: l.Y, By: player, Item: item.ID})
	if _, p := w.findPlayer(player); p != nil {
		p.inventory = append(p.inventory, item)
		w.changed(p)
	}
}

// CancelPickup frees reserved loot after a failed commit.
func (w *World) CancelPickup(loot uint32) {
	if _, l := w.lootOf(loot); l != nil {
		l.reserved = false
	}
}

// ReserveDrop starts dropping an item the player carries; it returns the
// item and where it will land.
func (w *World) ReserveDrop(player uint32, itemID string) (Item, float32, float32, error) {
	e, p := w.findPlayer(player)
	if p == nil {
		return Item{}, 0, 0, ErrNoPlayer
	}
	for _, it := range p.inventory {
		if it.ID != itemID {
			continue
		}
		if slices.Contains(p.busy, itemID) {
			return Item{}, 0, 0, ErrReserved
		}
		p.busy = append(p.busy, itemID)
		return it, e.X, e.Y, nil
	}
	if p.wears(itemID) {
		return Item{}, 0, 0, ErrWorn
	}
	return Item{}, 0, 0, ErrNotCarried
}

// CompleteDrop takes the item out of the inventory and lays it at (x, y).
// The drop is in the database already, so the item lands even if the
// player has left since.
func (w *World) CompleteDrop(player uint32, item Item, x, y float32) {
	if _, p := w.findPlayer(player); p != nil {
		p.busy = slices.DeleteFunc(p.busy, func(id string) bool { return id == item.ID })
		if i := slices.IndexFunc(p.inventory, func(it Item) bool { return it.ID == item.ID }); i >= 0 {
			p.inventory = slices.Delete(p.inventory, i, i+1)
			w.changed(p)
		}
	}
	w.logOnly(Event{Type: EventItemDropped, Tick: w.tick, By: player, X: x, Y: y, Item: item.ID})
	w.SpawnLoot([]Loot{{Item: item, X: x, Y: y}})
}

// OnGround reports whether the item lies on the ground of this map.
func (w *World) OnGround(itemID string) bool { return w.LootCount(itemID) > 0 }

// Present reports whether the item is anywhere in this world: on the
// ground, or with a player (carried, worn, or a drop or equip of it being
// committed).
func (w *World) Present(itemID string) bool {
	if w.OnGround(itemID) {
		return true
	}
	for i := range w.players.rows {
		p := &w.players.rows[i]
		held := func(it Item) bool { return it.ID == itemID }
		if slices.ContainsFunc(p.inventory, held) || p.wears(itemID) || slices.Contains(p.busy, itemID) {
			return true
		}
	}
	return false
}

// LootCount is how many loot entities of the item lie on this map: 0 or
// 1, unless something is wrong.
func (w *World) LootCount(itemID string) int {
	n := 0
	for _, l := range w.loot.rows {
		if l.item.ID == itemID {
			n++
		}
	}
	return n
}

// CancelDrop keeps the item in the inventory after a failed commit.
func (w *World) CancelDrop(player uint32, itemID string) {
	if _, p := w.findPlayer(player); p != nil {
		p.busy = slices.DeleteFunc(p.busy, func(id string) bool { return id == itemID })
	}
}

// Inventory returns a copy of the player's bag.
func (w *World) Inventory(player uint32) []Item {
	if _, p := w.findPlayer(player); p != nil {
		return slices.Clone(p.inventory)
	}
	return nil
}

// SyncLoot makes the loot on the ground what want says (the database's
// view, after another pod of this map changed it): loot that want does not
// list, or lists elsewhere, goes, unless its pickup is being committed,
// and the items of want that do not lie where it says are laid there.
func (w *World) SyncLoot(want []Loot) {
	wanted := make(map[string]Loot, len(want))
	for _, l := range want {
		wanted[l.ID] = l
	}
	present := map[string]bool{}
	for i := len(w.entities) - 1; i >= 0; i-- {
		e := &w.entities[i]
		if e.Kind != KindLoot {
			continue
		}
		l := w.loot.rows[e.slot]
		if at, ok := wanted[l.item.ID]; (ok && at.X == e.X && at.Y == e.Y) || l.reserved {
			present[l.item.ID] = true
		} else {
			w.remove(i)
		}
	}
	var missing []Loot
	for _, l := range want {
		if !present[l.ID] {
			missing = append(missing, l)
		}
	}
	w.SpawnLoot(missing)
}

// PlaceLoot lays item at (x, y), taking it away from wherever else this
// map has it (lying elsewhere, in a player's bag or slot): a recovered
// item is in one place only. It returns the loot's entity id.
func (w *World) PlaceLoot(item Item, x, y float32) uint32 {
	for i := len(w.entities) - 1; i >= 0; i-- {
		if e := &w.entities[i]; e.Kind == KindLoot && w.loot.rows[e.slot].item.ID == item.ID {
			w.remove(i)
		}
	}
	for i := range w.players.rows {
		p := &w.players.rows[i]
		held := func(it Item) bool { return it.ID == item.ID }
		if slices.ContainsFunc(p.inventory, held) || p.wears(item.ID) {
			p.inventory = slices.DeleteFunc(p.inventory, held)
			for s, it := range p.gear.worn {
				if held(it) {
					p.gear.worn[s] = Item{}
				}
			}
			w.changed(p)
		}
	}
	return w.SpawnLoot([]Loot{{Item: item, X: x, Y: y}})[0]
}

// Ground lists the loot lying on the map.
func (w *World) Ground() []Loot {
	loot := make([]Loot, 0, w.loot.len())
	for i := range w.entities {
		if e := &w.entities[i]; e.Kind == KindLoot {
			loot = append(loot, Loot{Item: w.loot.rows[e.slot].item, X: e.X, Y: e.Y})
		}
	}
	return loot
}
