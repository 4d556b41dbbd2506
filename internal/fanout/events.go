package fanout

import (
	"sync"
	"sync/atomic"

	"github.com/roomkeeper/roomkeeper/internal/aoi"
	"github.com/roomkeeper/roomkeeper/internal/protocol"
	"github.com/roomkeeper/roomkeeper/internal/sim"
)

// Events are delivered reliably: the map numbers every event and keeps the
// last eventLogSize in a log. A pod numbers from its start time in
// microseconds, so the ids of a map only grow, across its pods too: a
// client that resumes on the pod that replaced a crashed one names an
// event older than any here and gets every event since the pod started. A client's writer sends, with
// each snapshot, the events after the last one it sent that happened in the
// client's area of interest, whichever frames it skipped; a resumed client
// says the last event it received (hello.lastEvent) and gets the rest. So a
// client sees each event in its area once, in order, as long as it is not
// eventLogSize events behind.

// eventLogSize bounds the events kept: at the seed-004 load of 1,000 events
// a second, four seconds, longer than a writer lags before it is dropped.
const eventLogSize = 4096

// EventLog is the map's recent events, written by the tick goroutine when
// it publishes a frame and read by every writer.
type EventLog struct {
	mu      sync.RWMutex
	entries [eventLogSize]*Event // a ring: event id lives at id % eventLogSize
	last    atomic.Uint64        // the newest event's id; first before the first
	first   uint64               // the id before the pod's first event
}

// StartAt numbers the events after first; before the first event is added.
func (l *EventLog) StartAt(first uint64) {
	l.first = first
	l.last.Store(first)
}

// Event is one logged event. The first writer that sends it encodes it, for
// every client: the tick goroutine only numbers it.
type Event struct {
	id   uint64
	ev   sim.Event
	once sync.Once
	data []byte
}

// ID is the event's number in its map.
func (e *Event) ID() uint64 { return e.id }

// Message is the event's encoded message.
func (e *Event) Message() []byte {
	e.once.Do(func() {
		ev := e.ev
		// An event is plain numbers and strings: encoding does not fail.
		e.data, _ = protocol.MarshalMessage(protocol.KindEvent, 0, protocol.Event{ID: e.id, Type: ev.Type, Tick: ev.Tick,
			Entity: ev.Entity, X: ev.X, Y: ev.Y, By: ev.By, Detail: ev.Detail, Room: ev.Room, Phase: ev.Phase})
	})
	return e.data
}

// mapWide are the event types every client of the map gets, wherever it
// stands: a dungeon's progress concerns the whole party.
var mapWide = map[string]bool{sim.EventRoomCleared: true}

// Add numbers the frame's events clients get (not LogOnly) and keeps
// them.
func (l *EventLog) Add(events []sim.Event) {
	if len(events) == 0 {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	id := l.last.Load()
	for _, ev := range events {
		if ev.LogOnly {
			continue
		}
		id++
		l.entries[id%eventLogSize] = &Event{id: id, ev: ev}
	}
	l.last.Store(id)
}

// Since appends the kept events after id to dst, oldest first. It hands
// out pointers, so writers send without holding the log: a slow socket
// never holds up the tick that adds the next events (an event is never
// changed once logged, only replaced in the ring).
func (l *EventLog) Since(id uint64, dst []*Event) []*Event {
	l.mu.RLock()
	defer l.mu.RUnlock()
	last := l.last.Load()
	if last > eventLogSize && id < last-eventLogSize {
		id = last - eventLogSize // older ones are gone
	}
	id = max(id, l.first)
	for ; id < last; id++ {
		dst = append(dst, l.entries[(id+1)%eventLogSize])
	}
	return dst
}

// Last is the newest event's id (where StartAt began before the first).
func (l *EventLog) Last() uint64 { return l.last.Load() }

// Concerns reports whether a client watching cell is sent e: it happened
// in the 3x3 cells around it, or it is map-wide.
func (e *Event) Concerns(grid *aoi.Grid, cell aoi.Cell) bool {
	at := grid.CellOf(e.ev.X, e.ev.Y)
	return (abs32(at.X-cell.X) <= 1 && abs32(at.Y-cell.Y) <= 1) || mapWide[e.ev.Type]
}
