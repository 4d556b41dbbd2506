package roomserver

import (
	"github.com/roomkeeper/roomkeeper/internal/protocol"
	"github.com/roomkeeper/roomkeeper/internal/sim"
)

// handleDoorToggle opens or closes a door in the world and acks it: ok
// means the door moved (the door event and the snapshot's doors channel
// show it to everyone in range).
func (sess *session) handleDoorToggle(env protocol.Envelope) {
	var d protocol.DoorToggle
	if err := protocol.DecodePayload(env, &d); err != nil {
		sess.refuse(env.Seq, err)
		return
	}
	player := sess.seat.player
	sess.worldAction(env.Seq, func(w *sim.World) error { return w.ToggleDoor(player, d.Door) }, func(err error) error {
		return doorError(err, d.Door)
	})
}
