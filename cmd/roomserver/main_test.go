package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/roomkeeper/roomkeeper/internal/protocol"
	"github.com/roomkeeper/roomkeeper/internal/token"
	"github.com/roomkeeper/roomkeeper/pkg/client"
)

// TestStandaloneProcess runs the real binary as the operator's pod would
// (flags, MapConfig in the environment, mounted key files), plays on it,
// and stops it with SIGTERM.
func TestStandaloneProcess(t *testing.T) {
	dir := t.TempDir()
	binary := filepath.Join(dir, "roomserver")
	build := exec.Command("go", "build", "-o", binary, ".")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("building roomserver: %v\n%s", err, out)
	}
	key, err := token.NewKey()
	if err != nil {
		t.Fatal(err)
	}
	keys := token.KeySet{Current: key}
	for name, data := range keys.Data() {
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o600); err != nil {
			t.Fatal(err)
		}
	}

	cmd := exec.Command(binary, "--room=demo", "--map=town", "--instance=demo-town", "--key-dir="+dir,
		"--listen=127.0.0.1:0", "--http-listen=127.0.0.1:0", "--tick-rate=30", "--snapshot-rate=10")
	cmd.Env = append(os.Environ(), `ROOMKEEPER_MAP_CONFIG={"seed":42,"width":512,"height":512}`)
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill() })
	game := serving(t, stderr)

	ticket, _, err := token.NewSigner(token.StaticKeys(keys), time.Now).Sign(token.Claims{Type: token.TypeJoin,
		Subject: "u", Character: "c", Room: "demo", Map: "demo-town"}, 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	c, err := client.Dial(ctx, "ws://"+game+"/ws", protocol.Hello{Ticket: ticket}, client.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.WaitFor(ctx, func(s client.State) bool { return s.Sees(c.Welcome().PlayerID) }); err != nil {
		t.Fatal(err)
	}

	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	s, _ := c.WaitFor(ctx, func(s client.State) bool { return s.Closed != nil })
	if len(s.Events) == 0 || s.Events[len(s.Events)-1].Type != protocol.EventServerShutdown {
		t.Errorf("events before close: %+v, want server_shutdown last", s.Events)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	select {
	case err := <-exited:
		if err != nil {
			t.Fatalf("exit after SIGTERM: %v, want 0", err)
		}
	case <-ctx.Done():
		t.Fatal("roomserver did not exit after SIGTERM")
	}
}

// serving reads the JSON log until the "Serving" line and returns the game address.
func serving(t *testing.T, stderr interface{ Read([]byte) (int, error) }) string {
	t.Helper()
	lines := bufio.NewScanner(stderr)
	for lines.Scan() {
		var entry struct{ Msg, Game string }
		if json.Unmarshal(lines.Bytes(), &entry) == nil && entry.Msg == "Serving" {
			go func() { // keep draining so the server never blocks on its log
				for lines.Scan() {
				}
			}()
			return entry.Game
		}
	}
	t.Fatalf("roomserver exited before serving: %v", errors.Join(lines.Err(), errors.New("no Serving line")))
	return ""
}
