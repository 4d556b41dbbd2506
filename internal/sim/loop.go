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
	// Hibernate lets a quiet world (World.Quiet: no player) stop ticking:
	// the loop sleeps until a job comes or the world's next wake is due,
	// and first takes the world to the tick it would have reached
	// (World.SkipTo), so nothing ever sees the difference.
	Hibernate bool
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
	// Hibernating: the world is quiet and the loop takes no steps until
	// something happens; Tick and LastTick are then what ticking would show.
	Hibernating bool
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
	// asleepFrom is, while the loop hibernates, the time the world's
	// tick began (ns); 0 while it ticks.
	asleepFrom atomic.Int64
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
	s := Stats{Tick: l.tick.Load(), Players: int(l.players.Load()), Entities: int(l.entities.Load()),
		LastTick: time.Unix(0, l.lastTick.Load()), DroppedInputs: l.dropped.Load() + l.backlog.Load(),
		RejectedInputs: l.rejected.Load(), SkippedInputs: l.standing.Load(), SkippedSteps: l.skipped.Load(),
		QueuedJobs: len(l.control)}
	if from := l.asleepFrom.Load(); from != 0 {
		// A job wakes the loop before it runs: a stuck job shows as a
		// stale LastTick, as it does on a ticking loop.
		now := time.Now()
		s.Hibernating, s.LastTick = true, now
		s.Tick += uint64(now.Sub(time.Unix(0, from)) / l.stepLength())
	}
	return s
}

// stepLength is the time one step stands for.
func (l *Loop) stepLength() time.Duration { return time.Second / time.Duration(l.cfg.TickRate) }

// Run steps the world until Stop. It uses a ticker plus an accumulator, so
// the average rate stays exact even when the ticker fires late. A quiet
// world (LoopConfig.Hibernate) is not stepped: the loop sleeps until a job
// or the world's next wake and then skips the world to its tick.
func (l *Loop) Run() {
	defer close(l.done)
	c := newClock(l.stepLength())
	defer c.stop()
	snapshotAcc := 0
	l.publishStats()
	for {
		select {
		case <-l.stop:
			l.drainControl()
			return
		case job := <-l.control:
			if c.asleep {
				l.catchUp(c, time.Now())
			}
			job(l.world)
			// A join or a leave shows in the counts at once, not a tick
			// later: a player leaving through a portal is counted here no
			// more before the destination can count it.
			l.publishStats()
			l.settle(c)
		case now := <-c.alarm():
			l.catchUp(c, now)
			l.publishStats()
			l.settle(c)
		case now := <-c.ticks():
			if l.frozen {
				l.publishStats() // still alive: only stopped stepping
				continue
			}
			due := c.advance(now)
			for n := range due {
				if n == l.cfg.MaxCatchUp {
					l.skipped.Add(uint64(due - n)) // a stall's backlog is dropped
					break
				}
				snapshotAcc = l.step(snapshotAcc)
			}
			l.settle(c)
		}
	}
}

// catchUp takes a sleeping world to the tick it would have reached by now.
func (l *Loop) catchUp(c *clock, now time.Time) {
	l.world.SkipTo(l.world.Tick() + uint64(c.advance(now)))
}

// settle puts the loop to sleep when its world is quiet, or wakes it when
// it no longer is (a player arrived, an event waits for a frame).
func (l *Loop) settle(c *clock) {
	quiet := l.cfg.Hibernate && !l.frozen && l.world.Quiet()
	switch {
	case quiet:
		next, ok := l.world.NextWake()
		c.sleep(l.world.Tick(), next, ok)
		l.asleepFrom.Store(c.tickStart().UnixNano())
	case c.asleep:
		l.asleepFrom.Store(0)
		c.wake()
		l.publishStats()
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

// clock turns wall time into steps: a ticker and an accumulator while the
// loop ticks, a timer for the world's next wake while it sleeps.
type clock struct {
	step   time.Duration
	ticker *time.Ticker
	timer  *time.Timer
	// last is when the time was last taken into steps; acc is what was
	// left of it, less than a step.
	last   time.Time
	acc    time.Duration
	asleep bool
}

func newClock(step time.Duration) *clock {
	c := &clock{step: step, ticker: time.NewTicker(step), timer: time.NewTimer(step), last: time.Now()}
	c.timer.Stop()
	return c
}

func (c *clock) stop() {
	c.ticker.Stop()
	c.timer.Stop()
}

// ticks fires every step while the loop is awake (nil, never, asleep).
func (c *clock) ticks() <-chan time.Time {
	if c.asleep {
		return nil
	}
	return c.ticker.C
}

// alarm fires when a sleeping world's next wake is due (nil, never, awake).
func (c *clock) alarm() <-chan time.Time {
	if !c.asleep {
		return nil
	}
	return c.timer.C
}

// advance takes the time up to now into steps and returns how many are due.
func (c *clock) advance(now time.Time) int {
	c.acc += now.Sub(c.last)
	c.last = now
	n := c.acc / c.step
	c.acc -= n * c.step
	return int(n)
}

// tickStart is when the world's current tick began.
func (c *clock) tickStart() time.Time { return c.last.Add(-c.acc) }

// sleep stops the ticker; with a wake due (ok), the alarm is set for the
// start of tick next, the world being at tick now.
func (c *clock) sleep(tick, next uint64, ok bool) {
	c.asleep = true
	c.ticker.Stop()
	c.timer.Stop()
	if ok {
		c.timer.Reset(time.Until(c.tickStart().Add(time.Duration(next-tick) * c.step)))
	}
}

// wake starts the ticker again.
func (c *clock) wake() {
	c.asleep = false
	c.timer.Stop()
	c.ticker.Reset(c.step)
}
