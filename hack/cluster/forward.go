package main

import (
	"fmt"
	"io"
	"net"
	"os"
	"sync"

	"github.com/roomkeeper/roomkeeper/internal/netns"
)

// A forwarder carries connections from the host's loopback into the
// cluster's control-plane namespace, where nothing of the host's network
// reaches: the API server for .cluster/kubeconfig, and whatever else a
// test or a person on the host needs (the gateway). It runs detached,
// started by up, stopped by down.

// forward accepts on listen and carries each connection to target inside
// the network namespace of pid, until the listener fails.
func forward(listen string, pid int, target string) error {
	dial, err := netns.Dialer(pid)
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
