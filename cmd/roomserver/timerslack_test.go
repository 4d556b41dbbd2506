package main

import (
	"os"
	"testing"
	"time"

	"github.com/roomkeeper/roomkeeper/internal/testenv"
)

// TestEveryThreadWakesWithTheTimerSlack: the server gives every one of its
// threads, the Go runtime's monitor among them, the --timer-slack it was
// started with, and stays the process that was started (the pod's PID);
// with --timer-slack=0 its threads keep the slack they were born with.
func TestEveryThreadWakesWithTheTimerSlack(t *testing.T) {
	f := newFixture(t)
	inherited := threadSlacks(t, os.Getpid())[0]
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
		slacks := threadSlacks(t, p.cmd.Process.Pid)
		if len(slacks) < 2 {
			t.Fatalf("%q: %d threads, want the runtime's monitor and more", tc.flag, len(slacks))
		}
		for i, s := range slacks {
			if s != tc.want {
				t.Errorf("%q: thread %d of %d wakes with %v of slack, want %v", tc.flag, i, len(slacks), s, tc.want)
			}
		}
	}
}

// threadSlacks reads the timer slack of each thread of process pid.
func threadSlacks(t *testing.T, pid int) []time.Duration {
	t.Helper()
	slacks, err := testenv.ThreadTimerSlacks(pid)
	if err != nil {
		t.Fatalf("threads of %d: %v", pid, err)
	}
	return slacks
}
