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
	player := sess.seat.player
	sess.worldAction(env.Seq, func(w *sim.World) error { return w.Attack(player, a.Target) }, func(err error) error {
		reason, perr := attackError(err, a.Target)
		sess.srv.metrics.attacksRefused.WithLabelValues(reason).Inc()
		sess.logViolation(reason, perr)
		return perr
	})
}

// worldAction runs act in the world between two ticks, off the reader (the
// world answers only between ticks), and acks the command: ok, or refused
// with what refusal makes of act's error.
func (sess *session) worldAction(seq uint32, act func(*sim.World) error, refusal func(error) error) {
	srv := sess.srv
	srv.background.Go(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		var actErr error
		if err := srv.loop.Do(ctx, func(w *sim.World) { actErr = act(w) }); err != nil {
			sess.refuse(seq, loopError(err))
			return
		}
		if actErr != nil {
			sess.refuse(seq, refusal(actErr))
			return
		}
		sess.sendJSON(protocol.KindAck, 0, protocol.Ack{Seq: seq, OK: true})
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
