package roomserver

import (
	"context"
	"sync"
	"time"

	"github.com/roomkeeper/roomkeeper/internal/sim"
	"github.com/roomkeeper/roomkeeper/internal/store"
)

// The event log (docs/operations.md, "The event log"): every event of the
// map, those clients get and those only the log gets (hits, drops), and
// the transfers out of it, go to the database's event_log. The tick
// goroutine only appends them to a bounded buffer under a mutex, never
// waiting for the database; a goroutine of its own writes the buffer in
// batches. A batch that fails stays for the next try while the buffer has
// room, so an outage shorter than the buffer loses nothing; past that the
// newest events are dropped, counted and logged (at most once a minute),
// and the tick never stalls. The critical actions among them keep their
// exactly-once record in critical_events regardless.

// eventAppender is the store's capability the log needs.
type eventAppender interface {
	AppendEvents(ctx context.Context, events []store.LoggedEvent) error
}

// Config.EventLogBuffer's default, 65536, is about a minute of seed 004's
// 1,000 events a second, some 10 MB.
const (
	// eventLogBatch is the most events one statement writes.
	eventLogBatch = 4096
	// eventLogInterval is how often the buffer is written.
	eventLogInterval = 500 * time.Millisecond
	// eventLogWriteTimeout bounds one batch's statement.
	eventLogWriteTimeout = 5 * time.Second
)

// opEventLog is the background-failure op of a batch not written.
const opEventLog = "event_log"

// eventLog is the map's writer to event_log.
type eventLog struct {
	srv      *Server
	appender eventAppender

	mu      sync.Mutex
	pending []store.LoggedEvent
	// seq numbers the map's logged events: from the pod's start time in
	// microseconds, as fanout numbers the events clients get, so a map's
	// log order only grows across its pods.
	seq int64
}

func newEventLog(srv *Server, appender eventAppender) *eventLog {
	return &eventLog{srv: srv, appender: appender, seq: srv.deps.Clock().UnixMicro()}
}

// addFrame takes a published frame's events, on the tick goroutine:
// lastID is the protocol id of the frame's last event clients get, added
// is how many of those the frame has.
func (l *eventLog) addFrame(f *sim.Frame, lastID, added uint64) {
	if len(f.Events) == 0 {
		return
	}
	at := l.srv.deps.Clock()
	id := lastID - added // the id before the frame's first
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, ev := range f.Events {
		var eventID uint64
		if !ev.LogOnly {
			id++
			eventID = id
		}
		l.addLocked(l.row(at, ev, int64(eventID)))
	}
}

// add logs one event that happened outside the world (a transfer).
func (l *eventLog) add(ev store.LoggedEvent) {
	ev.At, ev.MapInstance = l.srv.deps.Clock(), l.srv.cfg.Instance
	l.mu.Lock()
	defer l.mu.Unlock()
	l.addLocked(ev)
}

// addLocked numbers the event and buffers it, or counts it dropped.
func (l *eventLog) addLocked(ev store.LoggedEvent) {
	l.seq++
	if len(l.pending) >= l.srv.cfg.EventLogBuffer {
		l.srv.metrics.eventLogDropped.Inc()
		return
	}
	ev.Seq = l.seq
	l.pending = append(l.pending, ev)
}

// row is a sim event as event_log keeps it.
func (l *eventLog) row(at time.Time, ev sim.Event, eventID int64) store.LoggedEvent {
	amount := int32(ev.Damage)
	switch ev.Type {
	case sim.EventBossPhase:
		amount = int32(ev.Phase)
	case sim.EventRoomCleared:
		amount = int32(ev.Room)
	}
	return store.LoggedEvent{At: at, MapInstance: l.srv.cfg.Instance, Tick: int64(ev.Tick), EventID: eventID, Type: ev.Type,
		Entity: int64(ev.Entity), Character: ev.Character, By: int64(ev.By), ByCharacter: ev.ByCharacter,
		ItemID: ev.Item, Amount: amount, X: ev.X, Y: ev.Y, Detail: ev.Detail}
}

// run writes the buffer every eventLogInterval until ctx ends.
func (l *eventLog) run(ctx context.Context) {
	ticker := time.NewTicker(eventLogInterval)
	defer ticker.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-ticker.C:
			l.srv.noteFailure(opEventLog, l.flush(ctx))
		}
	}
}

// flush writes what is pending, a batch at a time, until it is all
// written or a batch fails: that batch goes back to the front (as much of
// it as the buffer has room for; the rest is dropped and counted).
func (l *eventLog) flush(ctx context.Context) error {
	for {
		l.mu.Lock()
		n := min(len(l.pending), eventLogBatch)
		batch := l.pending[:n:n]
		l.pending = l.pending[n:]
		l.mu.Unlock()
		if n == 0 {
			return nil
		}
		wctx, cancel := context.WithTimeout(ctx, eventLogWriteTimeout)
		err := l.appender.AppendEvents(wctx, batch)
		cancel()
		if err != nil {
			l.putBack(batch)
			return err
		}
		l.srv.metrics.eventLogWritten.Add(float64(n))
	}
}

// putBack returns a batch that failed to the front of the buffer, keeping
// its oldest events when there is not room for all.
func (l *eventLog) putBack(batch []store.LoggedEvent) {
	l.mu.Lock()
	defer l.mu.Unlock()
	room := max(0, l.srv.cfg.EventLogBuffer-len(l.pending))
	if len(batch) > room {
		l.srv.metrics.eventLogDropped.Add(float64(len(batch) - room))
		batch = batch[:room]
	}
	l.pending = append(batch[:len(batch):len(batch)], l.pending...)
}
