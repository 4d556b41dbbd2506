package sim

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"time"
)

// LoopConfig sets a Loop's rates and limits.
type LoopConfig struct {
	TickRate, SnapshotRate int
	// CellSize is the AOI grid cell of published frames.
	CellSize float32
	// MaxCatchUp bounds the steps taken at once after a stall; the rest of
	// the backlog is dropped so a slow moment does not become a long burst.
	MaxCatchUp int
	// InputQueue bounds the inputs waiting for the tick goroutine.
	InputQueue int
}

// Hooks are called on the tick goroutine; they must not block.
type Hooks struct {
	// OnFrame receives a frame at the snapshot rate.
	OnFrame func(*Frame)
	// Recycled, if set, returns a frame OnFrame received earlier that
	// nobody reads any more, or nil; the next frame is captured into it.
	Recycled func() *Frame
	// OnTick receives how long each step's work took.
	OnTick func(time.Duration)
}

// ErrStopped is returned by Do once the loop has stopped.
var ErrStopped = errors.New("simulation stopped")

// Stats is a consistent-enough view of the loop for health and metrics.
type Stats struct {
	Tick           uint64
	Players        int
	Entities       int
	LastTick       time.Time
	DroppedInputs  uint64
	RejectedInputs uint64
	// SkippedInputs are inputs that stood in a backlog for a whole window.
	SkippedInputs uint64
	SkippedSteps  uint64
	// QueuedJobs are the jobs waiting in the control queue (Do) now.
	QueuedJobs int
}

type playerInput struct {
	player uint32
	input  Input
}

// Loop runs a World at a fixed step. One goroutine (Run) owns the world;
// everything else talks to it through a bounded input queue that never
// blocks and a control queue for rarer work such as joins.
type Loop struct {
	world   *World
	cfg     LoopConfig
	hooks   Hooks
	inputs  chan playerInput
	control chan func(*World)
	stop    chan struct{}
	done    chan struct{}
	once    sync.Once
	// frozen is set (on the tick goroutine) by Freeze: the world takes no
	// more steps.
	frozen bool

	// dropped counts inputs refused by a full queue, backlog those refused
	// by a player's full backlog inside the world.
	tick, dropped, backlog, rejected, skipped, standing atomic.Uint64
	players, entities                                   atomic.Int64
	lastTick                                            atomic.Int64
}

// NewLoop prepares a loop for world; call Run to start it.
func NewLoop(world *World, cfg LoopConfig, hooks Hooks) *Loop {
	if cfg.MaxCatchUp <= 0 {
		cfg.MaxCatchUp = 5
	}
	if cfg.InputQueue <= 0 {
		cfg.InputQueue = 8192
	}
	return &Loop{world: world, cfg: cfg, hooks: hooks,
		inputs: make(chan playerInput, cfg.InputQueue), control: make(chan func(*World), 256),
		stop: make(chan struct{}), done: make(chan struct{})}
}

// Input queues a player's input without blocking. A full queue drops it and
// counts the drop; it reports whether the input was queued.
func (l *Loop) Input(player uint32, in Input) bool {
	select {
	case l.inputs <- playerInput{player, in}:
		return true
	default:
		l.dropped.Add(1)
		return false
	}
}

// The states of a job queued by Do.
const (
	jobQueued int32 = iota
	jobRunning
	jobAbandoned
)

// Do runs fn on the tick goroutine between steps and waits for it. It
// returns nil if and only if fn ran: a job still queued when ctx ends (a
// busy map: context.DeadlineExceeded) or the loop stops (ErrStopped) is
// abandoned and never runs; one that has started is waited for.
func (l *Loop) Do(ctx context.Context, fn func(*World)) error {
	var state atomic.Int32
	finished := make(chan struct{})
	job := func(w *World) {
		if !state.CompareAndSwap(jobQueued, jobRunning) {
			return // abandoned by its caller
		}
		defer close(finished)
		fn(w)
	}
	select {
	case l.control <- job:
	case <-l.done:
		return ErrStopped
	case <-ctx.Done():
		return ctx.Err()
	}
	select {
	case <-finished:
		return nil
	case <-l.done:
	case <-ctx.Done():
	}
	if state.CompareAndSwap(jobQueued, jobAbandoned) {
		if err := ctx.Err(); err != nil {
			return err
		}
		return ErrStopped
	}
	<-finished // it started before we gave up: it ends soon, and it ran
	return nil
}

// Freeze runs fn on the tick goroutine, as Do does, and from then on the
// world takes no more steps (jobs still run): the state fn sees is the
// world's last, as a map that hands its world over needs.
func (l *Loop) Freeze(ctx context.Context, fn func(*World)) error {
	return l.Do(ctx, func(w *World) {
		l.frozen = true
		fn(w)
	})
}

// Stop ends Run and waits for it. It is safe to call more than once.
func (l *Loop) Stop() {
	l.once.Do(func() { close(l.stop) })
	<-l.done
}

// Done is closed when Run has returned.
func (l *Loop) Done() <-chan struct{} { return l.done }

// Stats reads the loop's counters.
func (l *Loop) Stats() Stats {
	return Stats{Tick: l.tick.Load(), Players: int(l.players.Load()), Entities: int(l.entities.Load()),
		LastTick: time.Unix(0, l.lastTick.Load()), DroppedInputs: l.dropped.Load() + l.backlog.Load(),
		RejectedInputs: l.rejected.Load(), SkippedInputs: l.standing.Load(), SkippedSteps: l.skipped.Load(),
		QueuedJobs: len(l.control)}
}

// Run steps the world until Stop. It uses a ticker plus an accumulator, so
// the average rate stays exact even when the ticker fires late.
func (l *Loop) Run() {
	defer close(l.done)
	step := time.Second / time.Duration(l.cfg.TickRate)
	ticker := time.NewTicker(step)
	defer ticker.Stop()
	last := time.Now()
	var acc time.Duration
	snapshotAcc := 0
	l.publishStats()
	for {
		select {
		case <-l.stop:
			l.drainControl()
			return
		case job := <-l.control:
			job(l.world)
			// A join or a leave shows in the counts at once, not a tick
			// later: a player leaving through a portal is counted here no
			// more before the destination can count it.
			l.publishStats()
		case now := <-ticker.C:
			if l.frozen {
				l.publishStats() // still alive: only stopped stepping
				continue
			}
			acc += now.Sub(last)
			last = now
			for n := 0; acc >= step; n++ {
				if n == l.cfg.MaxCatchUp {
					l.skipped.Add(uint64(acc / step))
					acc = 0
					break
				}
				acc -= step
				snapshotAcc = l.step(snapshotAcc)
			}
		}
	}
}

// step takes one fixed step and publishes a frame when one is due.
func (l *Loop) step(snapshotAcc int) int {
	start := time.Now()
	l.drainInputs()
	l.world.Step()
	snapshotAcc += l.cfg.SnapshotRate
	if snapshotAcc >= l.cfg.TickRate {
		snapshotAcc -= l.cfg.TickRate
		if l.hooks.OnFrame != nil {
			var into *Frame
			if l.hooks.Recycled != nil {
				into = l.hooks.Recycled()
			}
			l.hooks.OnFrame(l.world.FrameInto(into, l.cfg.CellSize))
		}
	}
	if l.hooks.OnTick != nil {
		l.hooks.OnTick(time.Since(start))
	}
	l.publishStats()
	return snapshotAcc
}

func (l *Loop) drainInputs() {
	for {
		select {
		case pi := <-l.inputs:
			l.world.QueueInput(pi.player, pi.input)
		default:
			return
		}
	}
}

// drainControl runs the control jobs already queued at stop, so callers
// waiting in Do (a leaving player, say) are not left hanging.
func (l *Loop) drainControl() {
	for {
		select {
		case job := <-l.control:
			job(l.world)
		default:
			return
		}
	}
}

func (l *Loop) publishStats() {
	w := l.world
	l.tick.Store(w.tick)
	l.players.Store(int64(w.Players()))
	l.entities.Store(int64(len(w.entities)))
	l.rejected.Store(w.RejectedInputs)
	l.lastTick.Store(time.Now().UnixNano())
	l.backlog.Store(w.DroppedInputs)
	l.standing.Store(w.SkippedInputs)
}
