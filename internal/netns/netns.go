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

// Dialer returns a dial function whose sockets are made inside pid's
// network namespace: one goroutine, locked to its OS thread, enters the
// namespace and makes every connection (a socket belongs to the namespace
// of the thread that made it, wherever it is used afterwards). The thread
// never leaves: it ends with the process.
func Dialer(pid int) (func(string) (net.Conn, error), error) {
	type result struct {
		conn net.Conn
		err  error
	}
	type request struct {
		addr  string
		reply chan result
	}
	requests := make(chan request)
	ready := make(chan error, 1)
	go func() {
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
			req.reply <- result{conn, err}
		}
	}()
	if err := <-ready; err != nil {
		return nil, fmt.Errorf("entering the network namespace of %d: %w", pid, err)
	}
	return func(addr string) (net.Conn, error) {
		reply := make(chan result, 1)
		requests <- request{addr, reply}
		r := <-reply
		return r.conn, r.err
	}, nil
}
