package netns

import (
	"bufio"
	"fmt"
	"net"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/roomkeeper/roomkeeper/internal/wait"
)

// TestTheDialerReachesInsideANamespace: a server listening on loopback
// inside a network namespace of its own is reached through the dialer,
// and not from the host's loopback, which is another network.
func TestTheDialerReachesInsideANamespace(t *testing.T) {
	const addr = "127.0.0.1:18765"
	server := exec.Command("unshare", "--net", "sh", "-c",
		"ip link set lo up && exec python3 -m http.server 18765 --bind 127.0.0.1")
	if err := server.Start(); err != nil {
		t.Fatalf("a server in a namespace of its own (unshare, ip, python3): %v", err)
	}
	t.Cleanup(func() { _ = server.Process.Kill(); _ = server.Wait() })
	wait.Eventually(t, 10*time.Second, "unshare's new network namespace", func() error {
		theirs, _ := os.Readlink(fmt.Sprintf("/proc/%d/ns/net", server.Process.Pid))
		if ours, _ := os.Readlink("/proc/self/ns/net"); theirs == ours {
			return fmt.Errorf("still in ours (%s)", ours)
		}
		return nil
	})
	dial, err := Dialer(server.Process.Pid)
	if err != nil {
		t.Fatal(err)
	}
	var status string
	wait.Eventually(t, 30*time.Second, "the server inside, through the dialer", func() error {
		conn, err := dial(addr)
		if err != nil {
			return err
		}
		defer conn.Close()
		if _, err := fmt.Fprint(conn, "GET / HTTP/1.0\r\n\r\n"); err != nil {
			return err
		}
		status, err = bufio.NewReader(conn).ReadString('\n')
		return err
	})
	if !strings.Contains(status, "200") {
		t.Errorf("through the dialer: %q, want 200", status)
	}
	if conn, err := net.DialTimeout("tcp", addr, time.Second); err == nil {
		conn.Close()
		t.Error("the host's loopback reached the server inside the namespace")
	}
}
