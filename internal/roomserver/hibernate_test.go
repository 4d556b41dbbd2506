package roomserver

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/roomkeeper/roomkeeper/pkg/client"
)

// TestAnEmptyMapSleepsAndWakesForAPlayer: a map nobody plays takes no
// steps (docs/design.md, "Density") yet stays healthy and keeps its
// world's time; a player's arrival wakes it at the tick it would have
// reached, and the last one leaving puts it back to sleep. The world
// keeper's checkpoint jobs run on the sleeping loop meanwhile.
func TestAnEmptyMapSleepsAndWakesForAPlayer(t *testing.T) {
	db, _ := newDB(t)
	h := persistentHarness(t, db, nil, func(c *Config) {
		c.ResumeGrace, c.GuestResumeGrace = 300*time.Millisecond, 300*time.Millisecond // a dropped player's seat stays in the world until then
	})
	hibernating := func(want bool) func() error {
		return func() error {
			if got := h.srv.Stats().Hibernating; got != want {
				return errors.New("hibernating is not yet as expected")
			}
			return nil
		}
	}
	poll(t, hibernating(true))
	for path, want := range map[string]string{"/healthz": "ok tick=", "/metrics": "roomkeeper_roomserver_hibernating 1"} {
		if body := get(t, h.http.URL+path); !strings.Contains(body, want) {
			t.Fatalf("%s of a sleeping map = %q, want %q", path, body, want)
		}
	}
	asleep := h.srv.Stats().Tick
	poll(t, func() error {
		if h.srv.Stats().Tick < asleep+15 {
			return errors.New("the sleeping world's clock has not run half a second")
		}
		return nil
	})

	c := h.join()
	s := waitFor(t, c, "a snapshot showing me", func(s client.State) bool { return s.Sees(c.Welcome().PlayerID) })
	if s.Tick < asleep+15 {
		t.Fatalf("the woken world is at tick %d, behind the %d its clock had reached", s.Tick, asleep+15)
	}
	if h.srv.Stats().Hibernating {
		t.Fatal("a map with a player hibernates")
	}
	walk(t, c, 1, 0, 10)
	_ = c.Close()
	poll(t, hibernating(true))
}
