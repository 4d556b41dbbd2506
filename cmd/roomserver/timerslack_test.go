package main

import (
	"os"
	"testing"
	"time"

	"github.com/roomkeeper/roomkeeper/internal/testenv"
)

// TestEveryThreadWakesWithTheTimerSlack: the server gives every one of its
// threads, the Go runtime's monitor among them, the --timer-slack it was
// started with, and stays the process that was started (the pod's PID)
// under the name it was started with (what ps, top and pgrep show); with
// --timer-slack=0 its threads keep the slack they were born with.
func TestEveryThreadWakesWithTheTimerSlack(t *testing.T) {
	f := newFixture(t)
	inherited := threadsOf(t, os.Getpid())[0].TimerSlack
	for _, tc := range []struct {
		flag string
		want time.Duration
	}{
		{"", time.Millisecond},
		{"--timer-slack=3ms", 3 * time.Millisecond},
		{"--timer-slack=0", inherited},
	} {
		var extra []string
		if tc.flag != "" {
			extra = append(extra, tc.flag)
		}
		p := f.start(`{"seed":42,"width":128,"height":128}`, extra...)
		threads := threadsOf(t, p.cmd.Process.Pid)
		if len(threads) < 2 {
			t.Fatalf("%q: %d threads, want the runtime's monitor and more", tc.flag, len(threads))
		}
		for _, th := range threads {
			if th.TimerSlack != tc.want || th.Name != "roomserver" {
				t.Errorf("%q: thread %d (of %d) is %q and wakes with %v of slack, want roomserver and %v",
					tc.flag, th.TID, len(threads), th.Name, th.TimerSlack, tc.want)
			}
		}
	}
}

// threadsOf reads the threads of process pid.
func threadsOf(t *testing.T, pid int) []testenv.Thread {
	t.Helper()
	threads, err := testenv.Threads(pid)
	if err != nil {
		t.Fatalf("threads of %d: %v", pid, err)
	}
	return threads
}
