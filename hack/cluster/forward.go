package main

import (
	"fmt"
	"io"
	"net"
	"os"
	"runtime"
	"sync"
	"time"

	"golang.org/x/sys/unix"
)

// A forwarder carries connections from the host's loopback into the
// cluster's control-plane namespace, where nothing of the host's network
// reaches: the API server for .cluster/kubeconfig, and whatever else a
// test or a person on the host needs (the gateway). It runs detached,
// started by up, stopped by down.

// forward accepts on listen and carries each connection to target inside
// the network namespace of pid, until the listener fails.
func forward(listen string, pid int, target string) error {
	dial, err := dialerIn(pid)
	if err != nil {
		return err
	}
	l, err := net.Listen("tcp", listen)
	if err != nil {
		return err
	}
	for {
		in, err := l.Accept()
		if err != nil {
			return err
		}
		go func() {
			defer in.Close()
			out, err := dial(target)
			if err != nil {
				fmt.Fprintln(os.Stderr, "forward:", err)
				return
			}
			defer out.Close()
			splice(in, out)
		}()
	}
}

// splice copies both ways until either side ends.
func splice(a, b net.Conn) {
	var wg sync.WaitGroup
	for _, pair := range [][2]net.Conn{{a, b}, {b, a}} {
		wg.Go(func() {
			_, _ = io.Copy(pair[0], pair[1])
			if tcp, ok := pair[0].(*net.TCPConn); ok {
				_ = tcp.CloseWrite()
			}
		})
	}
	wg.Wait()
}

// dialerIn returns a dial function whose sockets are made inside pid's
// network namespace: one goroutine, locked to its OS thread, enters the
// namespace and makes every connection (a socket belongs to the namespace
// of the thread that made it, wherever it is used afterwards). The thread
// never leaves: it ends with the process.
func dialerIn(pid int) (func(string) (net.Conn, error), error) {
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
