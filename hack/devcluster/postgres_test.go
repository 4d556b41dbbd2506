package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/roomkeeper/roomkeeper/internal/wait"
)

// TestARestartedPostgresRunsWhereTheOldOneRan: hack/postgres.sh restart
// starts the new server on the old one's CPUs and in its CPU cgroup, not
// where the caller runs: the soak's chaos restarts the dev database from
// the players' CPU, and the server then ran beside them, off the core
// the benchmark measures (docs/benchmarks.md, "Twelfth session").
func TestARestartedPostgresRunsWhereTheOldOneRan(t *testing.T) {
	var allowed unix.CPUSet
	if err := unix.SchedGetaffinity(0, &allowed); err != nil {
		t.Fatal(err)
	}
	cpus := cpusOf(allowed)
	if len(cpus) < 2 {
		t.Fatalf("needs two CPUs to tell the server's from the caller's, has %v", cpus)
	}
	server, caller := cpus[0], cpus[1]
	cgroup := testCPUCgroup(t)
	script, _ := filepath.Abs("../postgres.sh")
	dir := reachableTempDir(t)
	start := exec.Command("/bin/sh", "-c", `echo $$ > "$0" && exec taskset -c "$1" "$2" start "$3"`,
		filepath.Join(cgroup, "cgroup.procs"), strconv.Itoa(server), script, dir)
	runOrFail(t, start)
	t.Cleanup(func() { _ = exec.Command(script, "stop", dir).Run() })

	runOrFail(t, exec.Command("taskset", "-c", strconv.Itoa(caller), script, "restart", dir))
	pid := postmasterPID(t, dir)
	var got unix.CPUSet
	if err := unix.SchedGetaffinity(pid, &got); err != nil {
		t.Fatal(err)
	}
	if c := cpusOf(got); len(c) != 1 || c[0] != server {
		t.Errorf("the restarted server runs on CPUs %v, want the old one's [%d]", c, server)
	}
	procs, err := os.ReadFile(filepath.Join(cgroup, "cgroup.procs"))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(append([]byte("\n"), procs...), []byte("\n"+strconv.Itoa(pid)+"\n")) {
		t.Errorf("the restarted server (pid %d) is not in the old one's CPU cgroup %s", pid, cgroup)
	}
}

func cpusOf(set unix.CPUSet) []int {
	var cpus []int
	for cpu := range 1024 {
		if set.IsSet(cpu) {
			cpus = append(cpus, cpu)
		}
	}
	return cpus
}

// testCPUCgroup makes a CPU cgroup (cgroup v2's unified hierarchy or
// v1's cpu controller) for the test, removed at its end once empty.
func testCPUCgroup(t *testing.T) string {
	t.Helper()
	name := fmt.Sprintf("roomkeeper-pgtest-%d", os.Getpid())
	dir := filepath.Join("/sys/fs/cgroup/cpu", name)
	if _, err := os.Stat("/sys/fs/cgroup/cgroup.controllers"); err == nil {
		dir = filepath.Join("/sys/fs/cgroup", name)
	}
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatalf("a CPU cgroup for the test (it runs as root on Linux): %v", err)
	}
	t.Cleanup(func() { // after the server's stop, registered later
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := wait.Until(ctx, func() error { return os.Remove(dir) }); err != nil {
			t.Errorf("removing the test's CPU cgroup: %v", err)
		}
	})
	return dir
}

// reachableTempDir is a temporary directory the postgres user may enter.
func reachableTempDir(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	for d := dir; d != os.TempDir(); d = filepath.Dir(d) {
		if err := os.Chmod(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

func postmasterPID(t *testing.T, dir string) int {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, "data", "postmaster.pid"))
	if err != nil {
		t.Fatal(err)
	}
	pid, err := strconv.Atoi(strings.SplitN(string(b), "\n", 2)[0])
	if err != nil {
		t.Fatalf("postmaster.pid: %v", err)
	}
	return pid
}

func runOrFail(t *testing.T, cmd *exec.Cmd) {
	t.Helper()
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("%s: %v\n%s", strings.Join(cmd.Args, " "), err, out)
	}
}
