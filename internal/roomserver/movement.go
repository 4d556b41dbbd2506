package roomserver

import (
	"github.com/roomkeeper/roomkeeper/internal/protocol"
	"github.com/roomkeeper/roomkeeper/internal/sim"
)

// Movement: inputs are not acked one by one; each snapshot's ackSeq says
// which were applied, and the client reconciles its prediction on it.

// handleMovement queues the inputs of a movement.input command.
func (sess *session) handleMovement(env protocol.Envelope) {
	var mi protocol.MovementInput
	if err := protocol.DecodePayload(env, &mi); err != nil {
		sess.refuse(env.Seq, err)
		return
	}
	sess.queueInputs(env.Seq, mi.Inputs)
}

// handleBinaryInput queues the movement inputs of a binary input frame; a
// refusal is an error (the frame has no command seq).
func (sess *session) handleBinaryInput(data []byte) {
	sess.markPlayed()
	ackTick, inputs, err := protocol.DecodeBinaryInput(data, sess.inputs[:0])
	sess.inputs = inputs[:0]
	if err != nil {
		sess.refuse(0, err)
		return
	}
	if ackTick > 0 {
		sess.ackTick.Store(ackTick)
	}
	sess.queueInputs(0, inputs)
}

// queueInputs hands valid movement inputs to the simulation; each invalid
// one is refused (acked with seq when the command has one).
func (sess *session) queueInputs(seq uint32, inputs []protocol.Input) {
	for _, in := range inputs {
		if err := protocol.ValidateInput(in); err != nil {
			sess.refuse(seq, err)
			continue
		}
		sess.srv.loop.Input(sess.seat.player, sim.Input{Seq: in.Seq, X: in.X, Y: in.Y})
	}
}
