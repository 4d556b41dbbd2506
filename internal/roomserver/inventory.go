package roomserver

import (
	"github.com/roomkeeper/roomkeeper/internal/protocol"
	"github.com/roomkeeper/roomkeeper/internal/sim"
	"github.com/roomkeeper/roomkeeper/internal/store"
)

// handleDrop lays a carried item where the player stands: a critical
// action (critical.go), acked once the map owns it again.
func (sess *session) handleDrop(env protocol.Envelope) {
	var d protocol.InventoryDrop
	if err := protocol.DecodePayload(env, &d); err != nil {
		sess.refuse(env.Seq, err)
		return
	}
	player, instance, character := sess.seat.player, sess.srv.cfg.Instance, sess.seat.character
	var x, y float32
	var dropped sim.Item
	sess.runCritical(env.Seq, criticalAction{
		kind: "inventory.drop",
		reserve: func(w *sim.World) (item sim.Item, err error) {
			item, x, y, err = w.ReserveDrop(player, d.Item)
			dropped = item
			return item, err
		},
		moves: func(item sim.Item) []store.Move {
			return []store.Move{{FromKind: store.OwnerCharacter, FromID: character,
				To: store.Item{ItemID: item.ID, Kind: item.Kind, OwnerKind: store.OwnerMap, OwnerID: instance, X: x, Y: y}}}
		},
		complete: func(w *sim.World) { w.CompleteDrop(player, dropped, x, y) },
		cancel:   func(w *sim.World) { w.CancelDrop(player, d.Item) },
	})
}

// handleUse uses up a carried consumable (a potion heals): a critical
// action (critical.go) whose end and heal commit in one transaction
// before the ack, so it is used once however often the command comes,
// and a crash never leaves the potion gone without its heal.
func (sess *session) handleUse(env protocol.Envelope) {
	var u protocol.InventoryUse
	if err := protocol.DecodePayload(env, &u); err != nil {
		sess.refuse(env.Seq, err)
		return
	}
	player, character := sess.seat.player, sess.seat.character
	var used sim.Item
	sess.runCritical(env.Seq, criticalAction{
		kind: "inventory.use",
		reserve: func(w *sim.World) (item sim.Item, err error) {
			used, err = w.ReserveUse(player, u.Item)
			return used, err
		},
		moves: func(item sim.Item) []store.Move {
			return []store.Move{{FromKind: store.OwnerCharacter, FromID: character,
				To: store.Item{ItemID: item.ID, Kind: item.Kind, OwnerKind: store.OwnerDestroyed}}}
		},
		state:    func(w *sim.World, item sim.Item) (sim.PlayerRecord, bool) { return w.UseRecord(player, item) },
		complete: func(w *sim.World) { w.CompleteUse(player, used) },
		cancel:   func(w *sim.World) { w.CancelUse(player, u.Item) },
	})
}
