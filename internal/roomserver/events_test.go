package roomserver

import (
	"encoding/json"
	"errors"
	"slices"
	"testing"

	"github.com/roomkeeper/roomkeeper/internal/protocol"
	"github.com/roomkeeper/roomkeeper/internal/sim"
	"github.com/roomkeeper/roomkeeper/pkg/client"
)

// eventIDs are the ids of the events c received of type typ ("": all).
func eventIDs(s client.State, typ string) []uint64 {
	var ids []uint64
	for _, e := range s.Events {
		if typ == "" || e.Type == typ {
			ids = append(ids, e.ID)
		}
	}
	return ids
}

// Events of frames a client's writer never sent a snapshot of (here put in
// the log between two of its snapshots, as when it lags) still reach it,
// each once and in order; events outside its area do not.
func TestEventsOfSkippedFramesArriveOnceInOrder(t *testing.T) {
	h := newHarness(t, nil)
	c := h.join()
	s := waitFor(t, c, "a first snapshot", func(s client.State) bool { return s.Snapshots > 0 })
	x, y := s.Self.X, s.Self.Y
	var batches [][]sim.Event
	for i := range 5 {
		batches = append(batches, []sim.Event{
			{Type: sim.EventDeath, Entity: uint32(1000 + i), X: x, Y: y},
			{Type: sim.EventDeath, Entity: uint32(2000 + i), X: x + 1000, Y: y + 1000}, // far away
		})
	}
	for _, b := range batches {
		h.srv.stream.Events.Add(b)
	}
	s = waitFor(t, c, "the five deaths near it", func(s client.State) bool { return len(eventIDs(s, sim.EventDeath)) >= 5 })
	var entities []uint32
	for _, e := range s.Events {
		if e.Type == sim.EventDeath {
			entities = append(entities, e.Entity)
		}
	}
	if want := []uint32{1000, 1001, 1002, 1003, 1004}; !slices.Equal(entities, want) {
		t.Errorf("deaths received for %v, want %v: each near one once, in order, no far one", entities, want)
	}
	if ids := eventIDs(s, sim.EventDeath); !slices.IsSorted(ids) {
		t.Errorf("event ids out of order: %v", ids)
	}
}

// A client that resumes names the last event it got and receives, once,
// the events of its area it missed while away.
func TestEventsMissedWhileAwayArriveOnResume(t *testing.T) {
	h := newHarness(t, nil)
	c := h.join()
	w := c.Welcome()
	s := waitFor(t, c, "a first snapshot", func(s client.State) bool { return s.Snapshots > 0 })
	last := uint64(0)
	for _, e := range s.Events {
		last = max(last, e.ID)
	}
	if err := c.Drop(); err != nil {
		t.Fatal(err)
	}
	other := h.join() // joins next to the dropped player's seat
	otherID := other.Welcome().PlayerID
	h.srv.stream.Events.Add([]sim.Event{{Type: sim.EventDeath, Entity: 4242, X: s.Self.X, Y: s.Self.Y}})
	poll(t, func() error {
		for _, ev := range h.srv.stream.Events.Since(last, nil) {
			var msg struct{ Payload protocol.Event }
			if err := json.Unmarshal(ev.Message(), &msg); err != nil {
				return err
			}
			if msg.Payload.Type == sim.EventJoin && msg.Payload.Entity == otherID {
				return nil
			}
		}
		return errors.New("the other player's join is not in the log yet")
	})
	r := h.dial(protocol.Hello{Resume: w.ResumeToken, LastEvent: last}, client.Options{})
	missed := func(e protocol.Event) bool {
		return (e.Type == sim.EventJoin && e.Entity == otherID) || (e.Type == sim.EventDeath && e.Entity == 4242)
	}
	s = waitFor(t, r, "the missed join and death", func(s client.State) bool {
		n := 0
		for _, e := range s.Events {
			if missed(e) {
				n++
			}
		}
		return n >= 2
	})
	n := 0
	for _, e := range s.Events {
		if missed(e) {
			n++
		}
		if e.ID <= last {
			t.Errorf("event %d again after resuming from %d", e.ID, last)
		}
	}
	if n != 2 {
		t.Errorf("%d of the missed events arrived, want each of the 2 once", n)
	}
	if ids := eventIDs(s, ""); !slices.IsSorted(ids) {
		t.Errorf("event ids out of order: %v", ids)
	}
}
