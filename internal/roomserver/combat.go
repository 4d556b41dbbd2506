package roomserver

import (
	"context"
	"errors"
	"time"

	"github.com/roomkeeper/roomkeeper/internal/protocol"
	"github.com/roomkeeper/roomkeeper/internal/sim"
)

// violationLogEvery is how often one player's refused attacks are logged:
// a cheat or a laggy client repeats them many times a second.
const violationLogEvery = time.Minute

// handleAttack checks a combat.attack in the world, between two ticks, and
// acks it: ok means the hit lands in the next step (the snapshot shows the
// hit points, a death comes as an event). It runs off the reader, as the
// world answers only between ticks.
func (sess *session) handleAttack(env protocol.Envelope) {
	var a protocol.CombatAttack
	if err := protocol.DecodePayload(env, &a); err != nil {
		sess.refuse(env.Seq, err)
		return
	}
	srv, player := sess.srv, sess.seat.player
	srv.background.Go(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		var attackErr error
		if err := srv.loop.Do(ctx, func(w *sim.World) { attackErr = w.Attack(player, a.Target) }); err != nil {
			sess.refuse(env.Seq, loopError(err))
			return
		}
		if attackErr != nil {
			reason, err := attackError(attackErr, a.Target)
			srv.metrics.attacksRefused.WithLabelValues(reason).Inc()
			sess.logViolation(reason, err)
			sess.refuse(env.Seq, err)
			return
		}
		sess.sendJSON(protocol.KindAck, 0, protocol.Ack{Seq: env.Seq, OK: true})
	})
}

// attackError maps a refused attack to its metric reason and protocol code.
func attackError(err error, target uint32) (string, error) {
	switch {
	case errors.Is(err, sim.ErrCooldown):
		return "cooldown", protocol.Errorf(protocol.CodeCooldown, "attacks are still cooling down")
	case errors.Is(err, sim.ErrOutOfRange):
		return "out_of_range", protocol.Errorf(protocol.CodeOutOfRange, "entity %d is out of range", target)
	case errors.Is(err, sim.ErrNoLineOfSight):
		return "no_line_of_sight", protocol.Errorf(protocol.CodeInvalidAction, "a wall is between you and entity %d", target)
	case errors.Is(err, sim.ErrNotATarget):
		return "not_a_target", protocol.Errorf(protocol.CodeInvalidAction, "entity %d is not something to attack", target)
	case errors.Is(err, sim.ErrDead):
		return "dead", protocol.Errorf(protocol.CodeInvalidAction, "%v", err)
	default: // on the way through a portal, or gone
		return "other", protocol.Errorf(protocol.CodeInvalidAction, "%v", err)
	}
}

// logViolation logs a player's refused action at most once a minute.
func (sess *session) logViolation(reason string, err error) {
	st := sess.seat
	now := time.Now().UnixNano()
	last := st.violationLogged.Load()
	if now-last < int64(violationLogEvery) || !st.violationLogged.CompareAndSwap(last, now) {
		return
	}
	sess.srv.deps.Log.Info("Refused an attack (logged once a minute per player)", "character", st.character,
		"player", st.player, "reason", reason, "err", err)
}
