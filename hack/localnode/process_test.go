package main

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestAPodProcessRunsIdle: a pod's process, and every process it starts,
// runs under SCHED_IDLE (--pods-idle), and the node's own threads do not.
func TestAPodProcessRunsIdle(t *testing.T) {
	dir := t.TempDir()
	p, err := startProcess("/bin/sh", []string{"-c", "sleep 30 & wait"}, nil, dir, filepath.Join(dir, "log"), true)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.signal(9); <-p.exited })
	pid := strconv.Itoa(p.cmd.Process.Pid)
	deadline := time.Now().Add(10 * time.Second)
	for { // chrt(1) first, then the binary in its place
		comm, _ := os.ReadFile(filepath.Join("/proc", pid, "comm"))
		if strings.TrimSpace(string(comm)) == "sh" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the pod's process is %q after 10s, not the binary", comm)
		}
		time.Sleep(10 * time.Millisecond)
	}
	if got := policyOf(t, filepath.Join("/proc", pid, "stat")); got != schedIdle {
		t.Errorf("the pod's process runs under policy %d, want SCHED_IDLE (%d)", got, schedIdle)
	}
	for {
		children, _ := os.ReadFile(filepath.Join("/proc", pid, "task", pid, "children"))
		if child := strings.TrimSpace(string(children)); child != "" {
			if got := policyOf(t, filepath.Join("/proc", child, "stat")); got != schedIdle {
				t.Errorf("what the pod's process started runs under policy %d, want SCHED_IDLE (%d)", got, schedIdle)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the pod's process started no child within 10s")
		}
		time.Sleep(10 * time.Millisecond)
	}
	if idle := idleThreads(t); idle != 0 {
		t.Errorf("%d of the node's own threads run under SCHED_IDLE", idle)
	}
}

// schedIdle is SCHED_IDLE's number in /proc/PID/stat's policy field.
const schedIdle = 5

// idleThreads counts this process's threads under SCHED_IDLE.
func idleThreads(t *testing.T) int {
	tasks, err := filepath.Glob("/proc/self/task/*/stat")
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, stat := range tasks {
		if policyOf(t, stat) == schedIdle {
			n++
		}
	}
	return n
}

// policyOf reads the scheduling policy from a /proc stat file (its 41st
// field).
func policyOf(t *testing.T, stat string) int {
	b, err := os.ReadFile(stat)
	if err != nil {
		t.Fatal(err)
	}
	// The command name, field 2, is in parentheses and may hold spaces.
	fields := strings.Fields(string(b[strings.LastIndexByte(string(b), ')')+1:]))
	policy, err := strconv.Atoi(fields[38]) // field 41 is the 39th after the name
	if err != nil {
		t.Fatalf("%s: %v", stat, err)
	}
	return policy
}
