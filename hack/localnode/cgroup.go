package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/roomkeeper/roomkeeper/internal/wait"
)

// cgroupDrainTimeout bounds the wait for killed processes to leave the
// pods' cgroup: a SIGKILLed process is still in it until the kernel has
// finished its exit, after its parent may already have been reaped.
const cgroupDrainTimeout = 5 * time.Second

// cgroupRoot is where the kernel's cgroup file systems are mounted.
const cgroupRoot = "/sys/fs/cgroup"

// podCgroup is the CPU cgroup every pod's processes run in
// (--pod-cgroup), as a kubelet runs all pods under its kubepods cgroup.
// On one CPU shared with the control plane, a hundred room servers at
// nice 19 still kept the API server and etcd waiting to run: their many
// threads, each woken many times a second, filled the run queue, and a
// nice-0 thread waited its turn behind them (etcd's writes took 3-5 s,
// the API server's goroutines waited 19 ms on average for their thread;
// docs/benchmarks.md, "Eleventh session"). In one cgroup the pods
// compete with the node's other processes as one entity of a nice-0
// process's weight, and a woken control-plane thread runs at once.
type podCgroup struct {
	dir string // "" when pods run in the node's own cgroup
}

// newPodCgroup makes (or takes) the CPU cgroup name below the root of
// the CPU hierarchy, cgroup v2's unified one or v1's cpu controller, with
// the weight of one nice-0 process. An empty name is no cgroup.
func newPodCgroup(name string) (podCgroup, error) {
	if name == "" {
		return podCgroup{}, nil
	}
	if strings.Contains(name, "..") || filepath.IsAbs(name) {
		return podCgroup{}, fmt.Errorf("--pod-cgroup %q: want a name below the CPU hierarchy's root", name)
	}
	dir, weightFile, weight := filepath.Join(cgroupRoot, "cpu", name), "cpu.shares", "1024"
	if _, err := os.Stat(filepath.Join(cgroupRoot, "cgroup.controllers")); err == nil { // v2, unified
		dir, weightFile, weight = filepath.Join(cgroupRoot, name), "cpu.weight", "100"
		if err := os.WriteFile(filepath.Join(cgroupRoot, "cgroup.subtree_control"), []byte("+cpu"), 0o644); err != nil {
			return podCgroup{}, fmt.Errorf("--pod-cgroup: enabling the cpu controller: %w", err)
		}
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return podCgroup{}, fmt.Errorf("--pod-cgroup: %w", err)
	}
	if err := os.WriteFile(filepath.Join(dir, weightFile), []byte(weight), 0o644); err != nil {
		return podCgroup{}, fmt.Errorf("--pod-cgroup: %w", err)
	}
	return podCgroup{dir: dir}, nil
}

// enter is argv run inside the cgroup: a shell moves itself in, then
// executes argv in its place, so the process and all it starts are born
// there (cgroup v1 cannot start a process inside a cgroup, and moving
// one after it started would leave out what it started meanwhile).
func (c podCgroup) enter(argv []string) []string {
	if c.dir == "" {
		return argv
	}
	return append([]string{"/bin/sh", "-c", `echo $$ > "$0" && exec "$@"`, filepath.Join(c.dir, "cgroup.procs")}, argv...)
}

// remove deletes the cgroup once no process is left in it, waiting up
// to cgroupDrainTimeout for the processes still exiting; one still there
// after that (a pod the node could not stop) keeps it.
func (c podCgroup) remove() error {
	if c.dir == "" {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), cgroupDrainTimeout)
	defer cancel()
	return wait.Until(ctx, func() error {
		if err := os.Remove(c.dir); err != nil && !errors.Is(err, os.ErrNotExist) {
			return err
		}
		return nil
	})
}
