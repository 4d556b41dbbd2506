package testenv

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// Process is a running process as Linux's /proc shows it.
type Process struct {
	PID int
	// Name is the base name of the program it runs (kube-apiserver, etcd).
	Name string
	// CPU is the user and system time it has used so far.
	CPU time.Duration
}

// userHZ is the unit of utime and stime in /proc/<pid>/stat.
const userHZ = 100

// Children lists the processes this process started that still run: the
// control plane of Start, and whatever a test runs beside it.
func Children() []Process {
	dirs, _ := filepath.Glob("/proc/[0-9]*")
	self := os.Getpid()
	var out []Process
	for _, dir := range dirs {
		if p, ppid, ok := readProcess(dir); ok && ppid == self {
			out = append(out, p)
		}
	}
	return out
}

// Self is this process.
func Self() Process {
	p, _, _ := readProcess(fmt.Sprintf("/proc/%d", os.Getpid()))
	return p
}

// readProcess reads the process of a /proc/<pid> directory and its parent's
// pid; ok is false when it has ended meanwhile.
func readProcess(dir string) (p Process, ppid int, ok bool) {
	raw, err := os.ReadFile(filepath.Join(dir, "stat"))
	if err != nil {
		return Process{}, 0, false
	}
	// pid (comm) state ppid ... utime stime ...: comm may hold spaces and
	// parentheses, so the fields are counted from the last ')'.
	stat := string(raw)
	open, end := strings.IndexByte(stat, '('), strings.LastIndexByte(stat, ')')
	if open < 0 || end < open {
		return Process{}, 0, false
	}
	fields := strings.Fields(stat[end+1:])
	if len(fields) < 13 {
		return Process{}, 0, false
	}
	p.PID, _ = strconv.Atoi(filepath.Base(dir))
	ppid, _ = strconv.Atoi(fields[1])
	user, _ := strconv.ParseInt(fields[11], 10, 64)
	system, _ := strconv.ParseInt(fields[12], 10, 64)
	p.CPU = time.Duration(user+system) * time.Second / userHZ
	// comm is cut at 15 bytes; the command line has the whole name.
	p.Name = stat[open+1 : end]
	if cmd, err := os.ReadFile(filepath.Join(dir, "cmdline")); err == nil && len(cmd) > 0 {
		p.Name = filepath.Base(strings.SplitN(string(cmd), "\x00", 2)[0])
	}
	return p, ppid, true
}

// Thread is one thread of a process, as the kernel names it and wakes it.
type Thread struct {
	TID int
	// Name is the thread's comm: a process's first thread's is the
	// process's name, what ps, top and pgrep show.
	Name       string
	TimerSlack time.Duration
}

// Threads reads every thread of process pid, from /proc/TID (/proc lists
// only processes but serves threads).
func Threads(pid int) ([]Thread, error) {
	tasks, err := os.ReadDir(filepath.Join("/proc", strconv.Itoa(pid), "task"))
	if err != nil {
		return nil, err
	}
	threads := make([]Thread, 0, len(tasks))
	for _, task := range tasks {
		th, err := readThread(task.Name())
		if err != nil {
			return nil, fmt.Errorf("thread %s of %d: %w", task.Name(), pid, err)
		}
		threads = append(threads, th)
	}
	return threads, nil
}

func readThread(tid string) (Thread, error) {
	dir := filepath.Join("/proc", tid)
	name, err := os.ReadFile(filepath.Join(dir, "comm"))
	if err != nil {
		return Thread{}, err
	}
	slack, err := os.ReadFile(filepath.Join(dir, "timerslack_ns"))
	if err != nil {
		return Thread{}, err
	}
	ns, err := strconv.ParseInt(strings.TrimSpace(string(slack)), 10, 64)
	if err != nil {
		return Thread{}, err
	}
	id, _ := strconv.Atoi(tid)
	return Thread{TID: id, Name: strings.TrimSuffix(string(name), "\n"), TimerSlack: time.Duration(ns)}, nil
}
