package main

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/roomkeeper/roomkeeper/internal/wait"
)

// TestAPodProcessRunsNiced: a pod's process, and every thread it starts,
// runs at the node's --pod-nice, and the node's own threads keep theirs.
func TestAPodProcessRunsNiced(t *testing.T) {
	dir := t.TempDir()
	p, err := startProcess("/bin/sh", []string{"-c", "sleep 30 & wait"}, nil, dir, filepath.Join(dir, "log"), 7, podCgroup{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.signal(9); <-p.exited })
	pid := strconv.Itoa(p.cmd.Process.Pid)
	wait.Eventually(t, 10*time.Second, "the pod's process to become the binary (nice(1) first, then the binary in its place)", func() error {
		comm, _ := os.ReadFile(filepath.Join("/proc", pid, "comm"))
		if got := strings.TrimSpace(string(comm)); got != "sh" {
			return fmt.Errorf("it is %q", got)
		}
		return nil
	})
	if got := niceOf(t, filepath.Join("/proc", pid, "stat")); got != 7 {
		t.Errorf("the pod's process runs at nice %d, want 7", got)
	}
	var child string
	wait.Eventually(t, 10*time.Second, "the pod's process to start a child", func() error {
		children, _ := os.ReadFile(filepath.Join("/proc", pid, "task", pid, "children"))
		if child = strings.TrimSpace(string(children)); child == "" {
			return errors.New("no child yet")
		}
		return nil
	})
	if got := niceOf(t, filepath.Join("/proc", child, "stat")); got != 7 {
		t.Errorf("what the pod's process started runs at nice %d, want 7", got)
	}
	if niced := nicedThreads(t); niced != 0 {
		t.Errorf("%d of the node's own threads run niced", niced)
	}
}

// nicedThreads counts this process's threads whose nice value is not 0.
func nicedThreads(t *testing.T) int {
	tasks, err := filepath.Glob("/proc/self/task/*/stat")
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, stat := range tasks {
		if niceOf(t, stat) != 0 {
			n++
		}
	}
	return n
}

// niceOf reads the nice value from a /proc stat file (its 19th field).
func niceOf(t *testing.T, stat string) int {
	b, err := os.ReadFile(stat)
	if err != nil {
		t.Fatal(err)
	}
	// The command name, field 2, is in parentheses and may hold spaces.
	fields := strings.Fields(string(b[strings.LastIndexByte(string(b), ')')+1:]))
	nice, err := strconv.Atoi(fields[16]) // field 19 is the 17th after the name
	if err != nil {
		t.Fatalf("%s: %v", stat, err)
	}
	return nice
}

// TestAPodProcessRunsInThePodsCgroup: with --pod-cgroup a pod's process,
// and what it starts, run in the pods' CPU cgroup, which weighs as one
// process of the node's priority; the node stays in its own.
func TestAPodProcessRunsInThePodsCgroup(t *testing.T) {
	name := fmt.Sprintf("roomkeeper-localnode-test-%d", os.Getpid())
	cgroup, err := newPodCgroup(name)
	if err != nil {
		t.Fatalf("the pods' cgroup (the node runs as root on Linux, with the cpu controller): %v", err)
	}
	t.Cleanup(func() {
		if err := cgroup.remove(); err != nil {
			t.Errorf("removing the pods' cgroup: %v", err)
		}
	})
	dir := t.TempDir()
	p, err := startProcess("/bin/sh", []string{"-c", "sleep 30 & wait"}, nil, dir, filepath.Join(dir, "log"), 0, cgroup)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.signal(9); <-p.exited })
	pid := strconv.Itoa(p.cmd.Process.Pid)
	var child string
	wait.Eventually(t, 10*time.Second, "the pod's process to start its child", func() error {
		children, _ := os.ReadFile(filepath.Join("/proc", pid, "task", pid, "children"))
		if child = strings.TrimSpace(string(children)); child == "" {
			return errors.New("no child yet")
		}
		return nil
	}) // the binary runs once it has started its child
	if got := cpuCgroupOf(t, pid); got != "/"+name {
		t.Errorf("the pod's process is in CPU cgroup %q, want /%s", got, name)
	}
	if got := cpuCgroupOf(t, child); got != "/"+name {
		t.Errorf("what the pod's process started is in CPU cgroup %q, want /%s", got, name)
	}
	if got := cpuCgroupOf(t, "self"); got == "/"+name {
		t.Error("the node itself runs in the pods' cgroup")
	}
	weight, _ := os.ReadFile(filepath.Join(cgroup.dir, "cpu.shares"))
	if v2, _ := os.ReadFile(filepath.Join(cgroup.dir, "cpu.weight")); len(v2) > 0 {
		weight = v2
	}
	if w := strings.TrimSpace(string(weight)); w != "1024" && w != "100" {
		t.Errorf("the pods' cgroup weighs %q, want one nice-0 process's (cpu.shares 1024, cpu.weight 100)", w)
	}
}

// cpuCgroupOf is the CPU cgroup of process pid ("self" for this one):
// cgroup v1's cpu controller line, or v2's unified one.
func cpuCgroupOf(t *testing.T, pid string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("/proc", pid, "cgroup"))
	if err != nil {
		t.Fatal(err)
	}
	unified := ""
	for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		parts := strings.SplitN(line, ":", 3)
		if len(parts) != 3 {
			continue
		}
		for _, controller := range strings.Split(parts[1], ",") {
			if controller == "cpu" {
				return parts[2]
			}
		}
		if parts[0] == "0" && parts[1] == "" {
			unified = parts[2]
		}
	}
	return unified
}
