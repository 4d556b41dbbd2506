package main

import (
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"syscall"
	"time"
)

// benchSupported: roomload bench reads /proc and pins with taskset.
const benchSupported = true

// pinSelf runs this roomload again, the same arguments, under taskset on
// cpu (the Go runtime sizes itself to the CPUs it starts with, so the
// process is pinned from its start rather than thread by thread). It
// returns only if that cannot be done.
func pinSelf(cpu int, args []string) error {
	taskset, err := exec.LookPath("taskset")
	if err != nil {
		return fmt.Errorf("pinning the bots: %w (taskset is in util-linux; --bot-cpu=-1 runs them unpinned)", err)
	}
	self, err := os.Executable()
	if err != nil {
		return err
	}
	argv := append([]string{"taskset", "-c", strconv.Itoa(cpu), self, "bench"}, args...)
	env := append(os.Environ(), pinnedEnv+"=1")
	return fmt.Errorf("running the bots under taskset: %w", syscall.Exec(taskset, argv, env))
}

// serverProcAttr kills the server should roomload die without cleaning up.
func serverProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}

// selfCPUTime is the CPU time (user and system) this process has used.
func selfCPUTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
