package main

import (
	"context"
	"encoding/json"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/roomkeeper/roomkeeper/internal/roomserver"
	"github.com/roomkeeper/roomkeeper/internal/token"
)

// TestBotsPlayAgainstARealServer runs keygen, then bots (which mint their
// tickets from the key directory) against an in-process room server.
func TestBotsPlayAgainstARealServer(t *testing.T) {
	dir := t.TempDir()
	ctx := context.Background()
	if err := run([]string{"keygen", "--dir", dir}); err != nil {
		t.Fatal(err)
	}
	keys, err := token.LoadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
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
