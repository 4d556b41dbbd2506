// Package netns reaches into a network namespace from outside it: make
// cluster's pods and control plane live in namespaces of their own, and
// the host's tools and tests talk to them through a dialer whose sockets
// are made inside.
package netns

import (
	"fmt"
	"net"
	"runtime"
	"time"

	"golang.org/x/sys/unix"
)

// dialThreads is how many threads dial inside the namespace at once: a
// test's fifty players crossing to a new pod together should not queue
// behind each other's handshakes, as no real network makes them.
const dialThreads = 16

// Dialer returns a dial function whose sockets are made inside pid's
// network namespace: dialThreads goroutines, each locked to its OS
// thread, enter the namespace and make the connections (a socket belongs
// to the namespace of the thread that made it, wherever it is used
// afterwards). The threads never leave: they end with the process.
func Dialer(pid int) (func(string) (net.Conn, error), error) {
	requests := make(chan dialRequest)
	ready := make(chan error, dialThreads)
	for range dialThreads {
		go dialInside(pid, requests, ready)
	}
	for range dialThreads {
		if err := <-ready; err != nil {
			close(requests) // the threads that entered end, and with them their threads
			return nil, fmt.Errorf("entering the network namespace of %d: %w", pid, err)
		}
	}
	return func(addr string) (net.Conn, error) {
		reply := make(chan dialResult, 1)
		requests <- dialRequest{addr, reply}
		r := <-reply
		return r.conn, r.err
	}, nil
}

type dialRequest struct {
	addr  string
	reply chan dialResult
}

type dialResult struct {
	conn net.Conn
	err  error
}

// dialInside enters pid's network namespace on its own OS thread, says so
// on ready, and dials the requests until the process ends.
func dialInside(pid int, requests <-chan dialRequest, ready chan<- error) {
	runtime.LockOSThread() // never unlocked: the thread is the namespace's now
	fd, err := unix.Open(fmt.Sprintf("/proc/%d/ns/net", pid), unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err == nil {
		err = unix.Setns(fd, unix.CLONE_NEWNET)
		_ = unix.Close(fd)
	}
	ready <- err
	if err != nil {
		return
	}
	for req := range requests {
		conn, err := net.DialTimeout("tcp", req.addr, 5*time.Second)
		req.reply <- dialResult{conn, err}
	}
}
