package main

import (
	"context"
	"errors"
	"io"
	"net"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// relayTimeout bounds every read and accept in the forwarder tests.
const relayTimeout = 10 * time.Second

// backend is a TCP server whose accepted connections the test drives.
type backend struct {
	addr  string
	conns chan net.Conn
}

func startBackend(t *testing.T) *backend {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = l.Close() })
	b := &backend{addr: l.Addr().String(), conns: make(chan net.Conn, 4)}
	go func() {
		for {
			conn, err := l.Accept()
			if err != nil {
				return
			}
			t.Cleanup(func() { _ = conn.Close() })
			b.conns <- conn
		}
	}()
	return b
}

// next is the backend's side of the latest connection.
func (b *backend) next(t *testing.T) net.Conn {
	t.Helper()
	select {
	case conn := <-b.conns:
		_ = conn.SetDeadline(time.Now().Add(relayTimeout))
		return conn
	case <-time.After(relayTimeout):
		t.Fatal("the forwarder did not connect to the backend")
		return nil
	}
}

// startForwarder forwards a free loopback port to target and returns its
// address.
func startForwarder(t *testing.T, target string) (*forwarder, string) {
	t.Helper()
	f, err := forwardPorts([]hostPort{{port: 1, listen: "127.0.0.1:0", target: target}}, logr.Discard())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(f.close)
	return f, f.listeners[0].Addr().String()
}

func dial(t *testing.T, addr string) net.Conn {
	t.Helper()
	conn, err := net.DialTimeout("tcp", addr, relayTimeout)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = conn.Close() })
	_ = conn.SetDeadline(time.Now().Add(relayTimeout))
	return conn
}

// exchange writes msg on from and reads it on to.
func exchange(t *testing.T, from, to net.Conn, msg string) {
	t.Helper()
	if _, err := from.Write([]byte(msg)); err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, len(msg))
	if _, err := io.ReadFull(to, buf); err != nil || string(buf) != msg {
		t.Fatalf("read %q, %v; want %q", buf, err, msg)
	}
}

// expectEOF fails unless conn's peer has closed it.
func expectEOF(t *testing.T, conn net.Conn, side string) {
	t.Helper()
	n, err := conn.Read(make([]byte, 1))
	if n != 0 || !errors.Is(err, io.EOF) && !errors.Is(err, syscall.ECONNRESET) {
		t.Fatalf("%s read %d bytes, %v; want the connection closed", side, n, err)
	}
}

func TestForwarderCopiesBothWaysAndClosesBothSides(t *testing.T) {
	b := startBackend(t)
	_, addr := startForwarder(t, b.addr)

	client := dial(t, addr)
	server := b.next(t)
	exchange(t, client, server, "client hello")
	exchange(t, server, client, "server hello")
	_ = server.Close()
	expectEOF(t, client, "the client, after the server closed,")

	client = dial(t, addr)
	server = b.next(t)
	exchange(t, client, server, "again")
	_ = client.Close()
	expectEOF(t, server, "the server, after the client closed,")
}

func TestForwarderCloseEndsRelaysAndListening(t *testing.T) {
	b := startBackend(t)
	f, addr := startForwarder(t, b.addr)
	client := dial(t, addr)
	server := b.next(t)
	exchange(t, client, server, "hi")
	f.close()
	expectEOF(t, client, "the client, after close,")
	expectEOF(t, server, "the server, after close,")
	if _, err := net.DialTimeout("tcp", addr, relayTimeout); !errors.Is(err, syscall.ECONNREFUSED) {
		t.Errorf("dialing a closed forwarder: %v, want connection refused", err)
	}
}

func TestForwardPortsNamesTheTakenPort(t *testing.T) {
	taken, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer taken.Close()
	ports := []hostPort{
		{port: 1, listen: "127.0.0.1:0", target: "127.0.0.1:1"},
		{port: 30002, listen: taken.Addr().String(), target: "127.0.0.1:1"},
	}
	f, err := forwardPorts(ports, logr.Discard())
	if err == nil {
		f.close()
		t.Fatal("forwardPorts took a port that is in use")
	}
	if !strings.Contains(err.Error(), "hostPort 30002") || !errors.Is(err, syscall.EADDRINUSE) {
		t.Errorf("error %q, want it to name hostPort 30002 and say the address is in use", err)
	}
}

// expectEcho exchanges bytes with the fakeserver behind addr.
func expectEcho(t *testing.T, addr string) {
	t.Helper()
	conn := dial(t, addr)
	exchange(t, conn, conn, "hello through the host port")
	_ = conn.Close()
}

// waitPortClosed polls until nothing listens on addr.
func waitPortClosed(t *testing.T, addr string) {
	t.Helper()
	eventually(t, addr+" to be closed", func() (bool, string) {
		conn, err := net.DialTimeout("tcp", addr, relayTimeout)
		if err == nil {
			_ = conn.Close()
			return false, "still accepting connections"
		}
		return errors.Is(err, syscall.ECONNREFUSED), err.Error()
	})
}

func TestHostPortForwardsToPod(t *testing.T) {
	t.Parallel()
	const node, nodeIP, hostPort = "node-hostport", "127.0.21.1", 17351
	startAgentAt(t, node, "127.0.20.", nodeIP)
	ns := newNamespace(t)
	addr := net.JoinHostPort(nodeIP, strconv.Itoa(hostPort))

	createPod(t, newPod(ns, "first", node, withHostPort(17350, hostPort)))
	pod := waitPod(t, ns, "first", "first to be Ready", isRunningAndReady)
	if pod.Status.HostIP != nodeIP || pod.Status.PodIP != "127.0.20.2" {
		t.Errorf("hostIP %q, podIP %q; want %s, 127.0.20.2", pod.Status.HostIP, pod.Status.PodIP, nodeIP)
	}
	expectNodeAddress(t, node, nodeIP)
	expectEcho(t, addr)

	createPod(t, newPod(ns, "second", node, withHostPort(17350, hostPort)))
	waitPod(t, ns, "second", "second to wait for the taken host port",
		waitingWith(reasonCreating, "hostPort 17351: listen tcp "+addr))
	deletePod(t, ns, "first")
	waitPodGone(t, ns, "first")
	waitPod(t, ns, "second", "second to run once the port is free", isRunningAndReady)
	expectEcho(t, addr)
	deletePod(t, ns, "second")
	waitPodGone(t, ns, "second")
	waitPortClosed(t, addr)

	reportPath := filepath.Join(t.TempDir(), "report.json")
	createPod(t, newPod(ns, "third", node, withHostPort(17350, hostPort), withReport(reportPath)))
	waitPod(t, ns, "third", "third to be Ready", isRunningAndReady)
	expectEcho(t, addr)
	if err := syscall.Kill(readReport(t, reportPath).PID, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	waitPod(t, ns, "third", "third to end with its process", isTerminal)
	waitPortClosed(t, addr)
}

// expectNodeAddress checks the Node's InternalIP.
func expectNodeAddress(t *testing.T, node, ip string) {
	t.Helper()
	n, err := clientset.CoreV1().Nodes().Get(context.Background(), node, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	want := []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: ip}}
	if !slices.Equal(n.Status.Addresses, want) {
		t.Errorf("node addresses %v, want %v", n.Status.Addresses, want)
	}
}
