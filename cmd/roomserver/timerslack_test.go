package main

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
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

// threadSlacks reads the timer slack of each thread of process pid (a
// thread's is at /proc/TID, which lists only processes but serves threads).
func threadSlacks(t *testing.T, pid int) []time.Duration {
	t.Helper()
	tasks, err := os.ReadDir(filepath.Join("/proc", strconv.Itoa(pid), "task"))
	if err != nil || len(tasks) == 0 {
		t.Fatalf("threads of %d: %v (%d found)", pid, err, len(tasks))
	}
	var slacks []time.Duration
	for _, task := range tasks {
		file := filepath.Join("/proc", task.Name(), "timerslack_ns")
		data, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		ns, err := strconv.ParseInt(strings.TrimSpace(string(data)), 10, 64)
		if err != nil {
			t.Fatalf("%s: %v", file, err)
		}
		slacks = append(slacks, time.Duration(ns))
	}
	return slacks
}
