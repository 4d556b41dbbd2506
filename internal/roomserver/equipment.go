package roomserver

import (
	"github.com/roomkeeper/roomkeeper/internal/content"
	"github.com/roomkeeper/roomkeeper/internal/protocol"
	"github.com/roomkeeper/roomkeeper/internal/sim"
	"github.com/roomkeeper/roomkeeper/internal/store"
)

// handleEquip wears a bag item in a slot: a critical action (critical.go),
// acked once the item's slot is committed. What the slot held goes back
// into the bag in the same transaction.
func (sess *session) handleEquip(env protocol.Envelope) {
	var e protocol.InventoryEquip
	if err := protocol.DecodePayload(env, &e); err != nil {
		sess.refuse(env.Seq, err)
		return
	}
	slot, ok := content.ParseSlot(e.Slot)
	if !ok {
		sess.refuse(env.Seq, protocol.Errorf(protocol.CodeIllegalSlot, "no slot %q", e.Slot))
		return
	}
	sess.runEquip(env.Seq, "inventory.equip", func(w *sim.World) (sim.Equip, error) {
		return w.ReserveEquip(sess.seat.player, e.Item, slot)
	})
}

// handleUnequip takes what a slot holds back into the bag: a critical
// action like equip.
func (sess *session) handleUnequip(env protocol.Envelope) {
	var u protocol.InventoryUnequip
	if err := protocol.DecodePayload(env, &u); err != nil {
		sess.refuse(env.Seq, err)
		return
	}
	slot, ok := content.ParseSlot(u.Slot)
	if !ok {
		sess.refuse(env.Seq, protocol.Errorf(protocol.CodeIllegalSlot, "no slot %q", u.Slot))
		return
	}
	sess.runEquip(env.Seq, "inventory.unequip", func(w *sim.World) (sim.Equip, error) {
		return w.ReserveUnequip(sess.seat.player, slot)
	})
}

// runEquip runs an equipment change reserved by reserve as a critical
// action.
func (sess *session) runEquip(seq uint32, kind string, reserve func(w *sim.World) (sim.Equip, error)) {
	player, character := sess.seat.player, sess.seat.character
	var eq sim.Equip
	sess.runCritical(seq, criticalAction{
		kind: kind,
		reserve: func(w *sim.World) (sim.Item, error) {
			var err error
			eq, err = reserve(w)
			return eq.Item, err
		},
		moves:    func(sim.Item) []store.Move { return equipMoves(character, eq) },
		complete: func(w *sim.World) { w.CompleteEquip(player, eq) },
		cancel:   func(w *sim.World) { w.CancelEquip(player, eq) },
	})
}

// equipMoves are the slot changes of eq: the item taken off first, so the
// slot is free when the new one goes in.
func equipMoves(character string, eq sim.Equip) []store.Move {
	move := func(it sim.Item, from, to string) store.Move {
		return store.Move{FromKind: store.OwnerCharacter, FromID: character, FromSlot: from,
			To: store.Item{ItemID: it.ID, Kind: it.Kind, OwnerKind: store.OwnerCharacter, OwnerID: character, Slot: to}}
	}
	slot := eq.Slot.String()
	if eq.Unequip {
		return []store.Move{move(eq.Item, slot, "")}
	}
	moves := []store.Move{move(eq.Item, "", slot)}
	if eq.Swapped.ID != "" {
		moves = append([]store.Move{move(eq.Swapped, slot, "")}, moves...)
	}
	return moves
}
