package roomserver

import (
	"time"

	"github.com/roomkeeper/roomkeeper/internal/protocol"
	"github.com/roomkeeper/roomkeeper/internal/sim"
)

// violationLogEvery is how often one player's refused attacks are logged:
// a cheat or a laggy client repeats them many times a second.
const violationLogEvery = time.Minute

// handleAttack checks a combat.attack in the world, between two ticks, and
// acks it: ok means the hit lands in the next step (the snapshot shows the
// hit points, a death comes as an event). It is a world action
// (worldactions.go): off the reader, in command order.
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

// handleCast checks a combat.cast in the world and acks it, as an attack
// is: an enemy ability lands in the next step, a self one at once; the
// cost, the cooldown and the range are the server's to check.
func (sess *session) handleCast(env protocol.Envelope) {
	var c protocol.CombatCast
	if err := protocol.DecodePayload(env, &c); err != nil {
		sess.refuse(env.Seq, err)
		return
	}
	player := sess.seat.player
	sess.worldAction(env.Seq, func(w *sim.World) error { return w.Cast(player, c.Ability, c.Target) }, func(err error) error {
		reason, perr := castError(err, c)
		sess.srv.metrics.attacksRefused.WithLabelValues(reason).Inc()
		sess.logViolation(reason, perr)
		return perr
	})
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
