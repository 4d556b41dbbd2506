package fanout

import (
	"slices"
	"testing"

	"github.com/roomkeeper/roomkeeper/internal/sim"
)

func TestTheEventLogKeepsTheNewestInOrder(t *testing.T) {
	var l EventLog
	ids := func(after uint64) []uint64 {
		var out []uint64
		for _, ev := range l.Since(after, nil) {
			out = append(out, ev.ID())
		}
		return out
	}
	if got := ids(0); len(got) != 0 {
		t.Fatalf("an empty log has %v", got)
	}
	l.Add([]sim.Event{{Type: sim.EventJoin}, {Type: sim.EventLeave}})
	l.Add(nil)
	l.Add([]sim.Event{{Type: sim.EventDeath}})
	if got := ids(0); !slices.Equal(got, []uint64{1, 2, 3}) {
		t.Errorf("since 0: %v", got)
	}
	if got := ids(2); !slices.Equal(got, []uint64{3}) {
		t.Errorf("since 2: %v", got)
	}
	for range eventLogSize {
		l.Add([]sim.Event{{Type: sim.EventJoin}})
	}
	got := ids(1)
	if len(got) != eventLogSize || got[0] != 4 || got[len(got)-1] != eventLogSize+3 {
		t.Errorf("after wrapping, since 1: %d events from %d to %d, want the newest %d", len(got), got[0], got[len(got)-1], eventLogSize)
	}
}
