package sim

import "math"

// QueueInput adds a player's input to its backlog, applied one per tick.
// It reports false when the input was refused (too long a direction) or
// dropped (backlog full).
func (w *World) QueueInput(id uint32, in Input) bool {
	_, p := w.findPlayer(id)
	if p == nil {
		return false
	}
	if !validDirection(in.X, in.Y) {
		w.RejectedInputs++
		return false
	}
	if w.leaving[id] {
		return false // on its way through a portal: it no longer moves here
	}
	if len(p.inputs) >= w.tun.InputBacklog {
		w.DroppedInputs++
		return false
	}
	p.inputs = append(p.inputs, in)
	return true
}

// validDirection refuses NaN, infinities and anything longer than 1: the
// server applies its own speed, so a longer vector would be a speed hack.
func validDirection(x, y float32) bool {
	l := x*x + y*y
	return !math.IsNaN(float64(l)) && l <= 1.002
}

// movePlayers is the input system: each player applies its oldest queued
// input, one step of movement.
func (w *World) movePlayers() {
	for i := range w.entities {
		if e := &w.entities[i]; e.Kind == KindPlayer {
			w.stepPlayer(e, w.player(e))
		}
	}
}

// stepPlayer applies the oldest queued input for one step of movement.
func (w *World) stepPlayer(e *Entity, p *playerState) {
	if len(p.inputs) > 0 {
		in := p.inputs[0]
		p.inputs = append(p.inputs[:0], p.inputs[1:]...)
		p.lastSeq = in.Seq
		// The dead do not move, but the input counts as handled, so the
		// client's reconciliation goes on.
		if e.HP > 0 {
			bx, by := e.X, e.Y
			w.move(e, in.X, in.Y, p.speed)
			p.dirty = p.dirty || e.X != bx || e.Y != by
		}
	}
	w.trimStanding(p)
}

// trimStanding keeps a player's backlog from standing: one input a tick is
// applied, so a client that sends a little faster than the tick rate, or
// whose inputs bunched up once, would otherwise keep a queue (and that
// much latency) for good. Inputs that stayed in the backlog after every
// step of a whole window are skipped, oldest first: counted as handled
// (ackSeq covers them) without moving, so the client's reconciliation
// from the next snapshot stays exact. A client that batches several ticks
// into one message drains its backlog within the window and loses nothing.
func (w *World) trimStanding(p *playerState) {
	p.standing = min(p.standing, len(p.inputs))
	if w.tick-p.windowFrom < w.inputWindow {
		return
	}
	if n := p.standing; n > 0 {
		p.lastSeq = p.inputs[n-1].Seq
		p.inputs = append(p.inputs[:0], p.inputs[n:]...)
		w.SkippedInputs += uint64(n)
	}
	p.windowFrom, p.standing = w.tick, len(p.inputs)
}
