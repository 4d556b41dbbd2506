// Package fanout turns the simulation's frames into what each client is
// sent: the views of its area of interest, their binary and JSON
// encodings against the baselines the client acknowledged, and the map's
// numbered events. It is the room server's hot path: every client's
// writer builds its snapshot here at the snapshot rate, and views and
// encodings are shared between clients and recycled, so a steady stream
// allocates nothing (BenchmarkSnapshotFanout200).
package fanout

import (
	"sync"

	"github.com/roomkeeper/roomkeeper/internal/sim"
)

// Stream is one map's fan-out: the newest frame, prepared for sending and
// held until the next, and the log of recent events. The tick goroutine
// publishes; writers acquire.
type Stream struct {
	framer *framer // the tick goroutine's
	mu     sync.RWMutex
	latest *Frame
	Events EventLog
}

// NewStream returns the fan-out of a map whose clients watch cells of
// cellSize with hysteresis, whose far entities are refreshed on one frame
// in farEvery, and whose events are numbered after firstEvent.
func NewStream(farEvery int, cellSize, hysteresis float32, firstEvent uint64) *Stream {
	s := &Stream{framer: newFramer(farEvery, cellSize, hysteresis)}
	s.Events.StartAt(firstEvent)
	return s
}

// Recycled is the sim loop's Recycled hook: the sim frame of a released
// frame, to be filled again and published.
func (s *Stream) Recycled() *sim.Frame { return s.framer.recycledSimFrame() }

// Publish logs sf's events and makes sf the newest frame, letting go of
// the one before. It is called by the tick goroutine alone.
func (s *Stream) Publish(sf *sim.Frame) {
	s.Events.Add(sf.Events)
	f := s.framer.next(sf)
	s.mu.Lock()
	old := s.latest
	s.latest = f
	s.mu.Unlock()
	if old != nil {
		old.Release()
	}
}

// Acquire returns the newest frame, held for the caller to Release, or
// nil before the first.
func (s *Stream) Acquire() *Frame {
	s.mu.RLock()
	defer s.mu.RUnlock()
	if s.latest != nil {
		s.latest.Acquire()
	}
	return s.latest
}
