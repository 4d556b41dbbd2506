package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http/httptest"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/roomkeeper/roomkeeper/internal/roomserver"
	"github.com/roomkeeper/roomkeeper/internal/token"
)

// TestBotsPlayAgainstARealServer runs keygen, then bots (which mint their
// tickets from the key directory) against an in-process room server.
func TestBotsPlayAgainstARealServer(t *testing.T) {
	dir, keys := keygen(t)
	ctx := context.Background()
	cfg := roomserver.DefaultConfig()
	cfg.Room, cfg.Map, cfg.Instance = "demo", "town", "demo-town"
	cfg.MapConfig = json.RawMessage(`{"seed":1,"width":256,"height":256}`)
	srv, err := roomserver.New(cfg, roomserver.Deps{Keys: keys, Replay: token.NewMemoryReplayGuard(time.Now)})
	if err != nil {
		t.Fatal(err)
	}
	runCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	go srv.Run(runCtx)
	hs := httptest.NewServer(srv.Handler())
	defer hs.Close()
	endpoint := "ws" + strings.TrimPrefix(hs.URL, "http") + "/ws"

	if err := run([]string{"bots", "--endpoint", endpoint, "--key-dir", dir, "--room", "demo", "--instance", "demo-town",
		"--count", "3", "--duration", "2s"}); err != nil {
		t.Fatalf("bots: %v", err)
	}
	if err := run([]string{"join", "--endpoint", endpoint, "--key-dir", dir, "--room", "demo", "--instance", "demo-town",
		"--duration", "1500ms"}); err != nil {
		t.Fatalf("join: %v", err)
	}
}

func TestMintSignsAVerifiableTicket(t *testing.T) {
	dir := t.TempDir()
	if err := run([]string{"keygen", "--dir", dir}); err != nil {
		t.Fatal(err)
	}
	f := ticketFlags{keyDir: dir, room: "demo", instance: "demo-town", user: "u"}
	raw, err := f.mint(10 * time.Second)
	if err != nil {
		t.Fatal(err)
	}
	keys, err := token.LoadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	claims, err := token.NewVerifier(keys, time.Now).Verify(raw, token.Expect{Room: "demo", Map: "demo-town"})
	if err != nil || claims.Subject != "u" || claims.Character == "" || claims.Type != token.TypeJoin {
		t.Fatalf("verify: %+v %v", claims, err)
	}
}

// TestBotsCrossPortals runs bots with --portal-rate on a town whose portal
// leads to a crypt (and back), two in-process room servers.
func TestBotsCrossPortals(t *testing.T) {
	dir, keys := keygen(t)
	directory := roomserver.StaticDirectory{}
	start := func(mapName, config string) string {
		cfg := roomserver.DefaultConfig()
		cfg.Room, cfg.Map, cfg.Instance = "demo", mapName, "demo-"+mapName
		cfg.MapConfig = json.RawMessage(config)
		srv, err := roomserver.New(cfg, roomserver.Deps{Keys: keys, Replay: token.NewMemoryReplayGuard(time.Now), Directory: directory})
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		t.Cleanup(cancel)
		go srv.Run(ctx)
		hs := httptest.NewServer(srv.Handler())
		t.Cleanup(hs.Close)
		endpoint := "ws" + strings.TrimPrefix(hs.URL, "http") + "/ws"
		directory[mapName] = roomserver.Destination{Map: mapName, Instance: cfg.Instance, Endpoint: endpoint}
		return endpoint
	}
	town := start("town", `{"seed":1,"width":256,"height":256,"portals":[{"to":"crypt","x":180,"y":128}]}`)
	start("crypt", `{"seed":2,"width":256,"height":256,"portals":[{"to":"town","x":128,"y":170}]}`)

	out := captureStdout(t, func() error {
		return run([]string{"bots", "--endpoint", town, "--key-dir", dir, "--room", "demo", "--instance", "demo-town",
			"--count", "3", "--duration", "8s", "--portal-rate", "600"})
	})
	var tries, transferred int
	reportLine(t, out, "portals: tries %d  transferred %d", &tries, &transferred)
	if transferred < 3 {
		t.Fatalf("bots crossed %d times in %d tries, want each bot at least once:\n%s", transferred, tries, out)
	}
}

// captureStdout runs fn with os.Stdout going to a pipe and returns what it printed.
func captureStdout(t *testing.T, fn func() error) string {
	t.Helper()
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	saved := os.Stdout
	os.Stdout = w
	read := make(chan string)
	go func() {
		data, _ := io.ReadAll(r)
		read <- string(data)
	}()
	err = fn()
	os.Stdout = saved
	_ = w.Close()
	out := <-read
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	return out
}

// keygen runs `roomctl keygen` into a temporary directory and loads the keys.
func keygen(t *testing.T) (string, *token.DirKeys) {
	t.Helper()
	dir := t.TempDir()
	if err := run([]string{"keygen", "--dir", dir}); err != nil {
		t.Fatal(err)
	}
	keys, err := token.LoadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	return dir, keys
}

// reportLine scans the line of out that starts like format (up to its
// first space) into args; a missing or malformed line fails the test.
func reportLine(t *testing.T, out, format string, args ...any) {
	t.Helper()
	prefix, _, _ := strings.Cut(format, " ")
	for line := range strings.Lines(out) {
		if strings.HasPrefix(line, prefix) {
			if _, err := fmt.Sscanf(line, format, args...); err != nil {
				t.Fatalf("parsing %q: %v", line, err)
			}
			return
		}
	}
	t.Fatalf("no %q line in:\n%s", prefix, out)
}
