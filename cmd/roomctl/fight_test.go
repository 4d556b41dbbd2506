package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/roomkeeper/roomkeeper/internal/roomserver"
	"github.com/roomkeeper/roomkeeper/internal/token"
)

// Fighting bots in a crypt full of hostile NPCs attack them, and hits land.
func TestFightingBotsLandHits(t *testing.T) {
	dir, keys := keygen(t)
	cfg := roomserver.DefaultConfig()
	cfg.Room, cfg.Map, cfg.Instance = "demo", "crypt", "demo-crypt"
	cfg.MapConfig = json.RawMessage(`{"seed":7,"width":256,"height":256,"biome":"dungeon","npcDensity":0.4}`)
	srv, err := roomserver.New(cfg, roomserver.Deps{Keys: keys, Replay: token.NewMemoryReplayGuard(time.Now)})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go srv.Run(ctx)
	hs := httptest.NewServer(srv.Handler())
	defer hs.Close()
	endpoint := "ws" + strings.TrimPrefix(hs.URL, "http") + "/ws"

	out := captureStdout(t, func() error {
		return run([]string{"bots", "--endpoint", endpoint, "--key-dir", dir, "--room", "demo", "--instance", "demo-crypt",
			"--count", "3", "--duration", "6s", "--behavior", "fight"})
	})
	var attacks, landed int
	for line := range strings.Lines(out) {
		if strings.HasPrefix(line, "fights:") {
			if _, err := fmt.Sscanf(line, "fights: attacks %d  landed %d", &attacks, &landed); err != nil {
				t.Fatalf("parsing %q: %v", line, err)
			}
		}
	}
	if landed == 0 {
		t.Fatalf("fighting bots landed %d of %d attacks, want some:\n%s", landed, attacks, out)
	}
	if err := run([]string{"bots", "--endpoint", endpoint, "--key-dir", dir, "--room", "demo", "--instance", "demo-crypt",
		"--behavior", "dance"}); err == nil || !strings.Contains(err.Error(), "--behavior") {
		t.Errorf("an unknown behavior: %v", err)
	}
}
