package main

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// namespace is a network and mount namespace of the cluster, held open by
// a sleeping process (`unshare --net --mount`) that outlives `up`; every
// daemon of the namespace is started into it with nsenter.
type namespace struct {
	name string
	pid  int
}

// state is the cluster's directory (pids/, logs/, pki/ and each
// component's files) and its cgroup: the cgroup (in every v1 hierarchy)
// the nodes' kubelets put their pods under, one child per node, so that
// two clusters (make cluster's, test/cluster's) keep apart.
type state struct{ dir, cgroup string }

func (s state) path(parts ...string) string {
	return filepath.Join(append([]string{s.dir}, parts...)...)
}

// pidFile is where a process of the cluster records its pid.
func (s state) pidFile(name string) string { return s.path("pids", name+".pid") }

// newNamespace starts the holder of a new namespace.
func (s state) newNamespace(name string) (namespace, error) {
	cmd := exec.Command("unshare", "--net", "--mount", "--propagation", "private", "sleep", "infinity")
	pid, err := s.detach("ns-"+name, cmd)
	if err != nil {
		return namespace{}, fmt.Errorf("namespace %s: %w", name, err)
	}
	ns := namespace{name: name, pid: pid}
	// unshare execs sleep once the namespaces exist: wait for that.
	deadline := time.Now().Add(10 * time.Second)
	for sameNetwork(pid) {
		if time.Now().After(deadline) {
			return ns, fmt.Errorf("namespace %s: unshare made no network namespace (are namespaces allowed here?)", name)
		}
		time.Sleep(20 * time.Millisecond)
	}
	return ns, nil
}

// sameNetwork reports whether pid is still in this process's network
// namespace.
func sameNetwork(pid int) bool {
	theirs, err := os.Readlink(fmt.Sprintf("/proc/%d/ns/net", pid))
	if err != nil {
		return true
	}
	ours, _ := os.Readlink("/proc/self/ns/net")
	return theirs == ours
}

// run runs a command inside ns and waits for it.
func (ns namespace) run(args ...string) error {
	cmd := exec.Command("nsenter", append([]string{"-t", strconv.Itoa(ns.pid), "-n", "-m", "--"}, args...)...)
	out, err := cmd.CombinedOutput()
	if err != nil {
		return fmt.Errorf("in namespace %s: %s: %w: %s", ns.name, strings.Join(args, " "), err, strings.TrimSpace(string(out)))
	}
	return nil
}

// script runs shell lines inside ns, stopping at the first failure.
func (ns namespace) script(lines ...string) error {
	return ns.run("sh", "-ec", strings.Join(lines, "\n"))
}

// start runs a daemon inside ns, detached, its output in logs/<name>.log.
func (s state) start(ns namespace, name string, args ...string) error {
	cmd := exec.Command("nsenter", append([]string{"-t", strconv.Itoa(ns.pid), "-n", "-m", "--"}, args...)...)
	_, err := s.detach(name, cmd)
	return err
}

// detach starts cmd in a session of its own, so it outlives this process,
// and records its pid.
func (s state) detach(name string, cmd *exec.Cmd) (int, error) {
	log, err := os.OpenFile(s.path("logs", name+".log"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return 0, err
	}
	defer log.Close()
	cmd.Stdout, cmd.Stderr = log, log
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := cmd.Start(); err != nil {
		return 0, fmt.Errorf("starting %s: %w", name, err)
	}
	pid := cmd.Process.Pid
	if err := os.WriteFile(s.pidFile(name), []byte(strconv.Itoa(pid)+"\n"), 0o644); err != nil {
		return pid, err
	}
	go func() { _ = cmd.Wait() }() // reaped while up runs; after that, by init
	return pid, nil
}

// pids are the recorded processes of the cluster, by name.
func (s state) pids() map[string]int {
	files, _ := filepath.Glob(s.path("pids", "*.pid"))
	out := map[string]int{}
	for _, f := range files {
		raw, err := os.ReadFile(f)
		if err != nil {
			continue
		}
		if pid, err := strconv.Atoi(strings.TrimSpace(string(raw))); err == nil && pid > 0 {
			out[strings.TrimSuffix(filepath.Base(f), ".pid")] = pid
		}
	}
	return out
}

// alive reports whether pid runs (and is no zombie).
func alive(pid int) bool {
	raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	fields := strings.Fields(string(raw[strings.LastIndexByte(string(raw), ')')+1:]))
	return len(fields) > 0 && fields[0] != "Z"
}

// stopAll ends every recorded process: SIGTERM, then SIGKILL for those
// still there after grace; namespace holders last, so their namespaces
// (and the mounts in them) go once nothing else is inside.
func (s state) stopAll(grace time.Duration) error {
	pids := s.pids()
	var holders, daemons []int
	for name, pid := range pids {
		if strings.HasPrefix(name, "ns-") {
			holders = append(holders, pid)
		} else {
			daemons = append(daemons, pid)
		}
	}
	var errs []error
	for _, group := range [][]int{daemons, holders} {
		errs = append(errs, stop(group, grace))
	}
	for name := range pids {
		_ = os.Remove(s.pidFile(name))
	}
	return errors.Join(errs...)
}

func stop(pids []int, grace time.Duration) error {
	for _, pid := range pids {
		_ = syscall.Kill(pid, syscall.SIGTERM)
	}
	deadline := time.Now().Add(grace)
	for _, pid := range pids {
		for alive(pid) && time.Now().Before(deadline) {
			time.Sleep(50 * time.Millisecond)
		}
		if alive(pid) {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
	}
	for _, pid := range pids {
		for i := 0; alive(pid) && i < 100; i++ {
			time.Sleep(50 * time.Millisecond)
		}
		if alive(pid) {
			return fmt.Errorf("process %d survived SIGKILL", pid)
		}
	}
	return nil
}

// killPid sends SIGKILL to pid.
func killPid(pid int) error { return syscall.Kill(pid, syscall.SIGKILL) }
