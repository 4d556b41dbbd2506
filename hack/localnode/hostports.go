package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"strconv"
	"sync"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
)

// Host ports, as the CNI portmap plugin gives them to a kubelet's pods: the
// agent listens on the node's address and relays each TCP connection to the
// pod's address. There is no NAT on a developer's machine, so the relay is a
// userspace copy.
const (
	dialTimeout   = 5 * time.Second        // to reach the pod's port
	acceptBackoff = 100 * time.Millisecond // after an Accept error such as EMFILE, so the loop does not spin
)

// hostPort is one forwarded port.
type hostPort struct {
	port   int32  // the hostPort, for messages
	listen string // node address:hostPort
	target string // pod address:containerPort
}

// hostPorts lists the container's host ports (checkRunnable has kept TCP
// only). A port's own hostIP wins over the node's address, as in portmap.
func hostPorts(c corev1.Container, nodeIP, podIP string) []hostPort {
	var ports []hostPort
	for _, p := range c.Ports {
		if p.HostPort == 0 {
			continue
		}
		ip := nodeIP
		if p.HostIP != "" {
			ip = p.HostIP
		}
		ports = append(ports, hostPort{
			port:   p.HostPort,
			listen: net.JoinHostPort(ip, strconv.Itoa(int(p.HostPort))),
			target: net.JoinHostPort(podIP, strconv.Itoa(int(p.ContainerPort))),
		})
	}
	return ports
}

// forwarder relays a pod's host ports until close.
type forwarder struct {
	log       logr.Logger
	listeners []net.Listener
	ctx       context.Context // ends at close: pending dials and open relays stop
	cancel    context.CancelFunc
	wg        sync.WaitGroup // accept loops and relays
}

// forwardPorts listens on every port and relays what arrives. When one port
// cannot be had (another pod or program holds it), none is kept.
func forwardPorts(ports []hostPort, log logr.Logger) (*forwarder, error) {
	ctx, cancel := context.WithCancel(context.Background())
	f := &forwarder{log: log, ctx: ctx, cancel: cancel}
	for _, p := range ports {
		l, err := net.Listen("tcp", p.listen)
		if err != nil {
			f.close()
			return nil, fmt.Errorf("hostPort %d: %w", p.port, err)
		}
		f.listeners = append(f.listeners, l)
	}
	for i, l := range f.listeners {
		target := ports[i].target
		f.wg.Go(func() { f.accept(l, target) })
	}
	return f, nil
}

// close stops listening, ends open relays and waits for them. A nil
// forwarder (a pod without host ports) is fine.
func (f *forwarder) close() {
	if f == nil {
		return
	}
	f.cancel()
	for _, l := range f.listeners {
		_ = l.Close()
	}
	f.wg.Wait()
}

// accept relays every connection to l until l is closed.
func (f *forwarder) accept(l net.Listener, target string) {
	for {
		conn, err := l.Accept()
		if errors.Is(err, net.ErrClosed) {
			return
		}
		if err != nil {
			f.log.Error(err, "Accepting on a host port failed", "address", l.Addr().String())
			time.Sleep(acceptBackoff)
			continue
		}
		f.wg.Go(func() { f.relay(conn, target) })
	}
}

// relay connects client to target and copies between them. A refused dial
// closes the client, as a connection to a port nobody listens on would.
func (f *forwarder) relay(client net.Conn, target string) {
	defer client.Close()
	d := net.Dialer{Timeout: dialTimeout}
	backend, err := d.DialContext(f.ctx, "tcp", target)
	if err != nil {
		return
	}
	defer backend.Close()
	stop := context.AfterFunc(f.ctx, func() { _ = client.Close() })
	defer stop()
	pipe(client, backend)
}

// pipe copies both ways until either side ends, then closes both, so the
// peer of a side that went away sees the end too (a WebSocket client learns
// that its server is gone).
func pipe(a, b net.Conn) {
	done := make(chan struct{}, 2)
	go func() { _, _ = io.Copy(a, b); done <- struct{}{} }()
	go func() { _, _ = io.Copy(b, a); done <- struct{}{} }()
	<-done
	_ = a.Close()
	_ = b.Close()
	<-done
}
