package main

import (
	"context"
	"encoding/json"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/roomkeeper/roomkeeper/internal/content"
	"github.com/roomkeeper/roomkeeper/internal/protocol"
	"github.com/roomkeeper/roomkeeper/internal/roomserver"
	"github.com/roomkeeper/roomkeeper/internal/token"
	"github.com/roomkeeper/roomkeeper/pkg/client"
)

// cryptServer runs a room server of the map "crypt" with mapConfig, for
// the test's life, and returns the key directory and its endpoint.
func cryptServer(t *testing.T, mapConfig string) (dir, endpoint string) {
	t.Helper()
	dir, keys := keygen(t)
	cfg := roomserver.DefaultConfig()
	cfg.Room, cfg.Map, cfg.Instance = "demo", "crypt", "demo-crypt"
	cfg.MapConfig = json.RawMessage(mapConfig)
	srv, err := roomserver.New(cfg, roomserver.Deps{Keys: keys, Replay: token.NewMemoryReplayGuard(time.Now)})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	go srv.Run(ctx)
	hs := httptest.NewServer(srv.Handler())
	t.Cleanup(hs.Close)
	return dir, "ws" + strings.TrimPrefix(hs.URL, "http") + "/ws"
}

// Fighting bots in a crypt full of hostile NPCs attack them, hits land,
// and they cast the pack's firebolt at them.
func TestFightingBotsLandHits(t *testing.T) {
	dir, endpoint := cryptServer(t, `{"seed":7,"width":256,"height":256,"biome":"dungeon","npcDensity":0.4}`)

	out := captureStdout(t, func() error {
		return run([]string{"bots", "--endpoint", endpoint, "--key-dir", dir, "--room", "demo", "--instance", "demo-crypt",
			"--count", "3", "--duration", "6s", "--behavior", "fight"})
	})
	var attacks, landed int
	reportLine(t, out, "fights: attacks %d  landed %d", &attacks, &landed)
	if landed == 0 {
		t.Fatalf("fighting bots landed %d of %d attacks, want some:\n%s", landed, attacks, out)
	}
	_, cast, _ := strings.Cut(out, "abilities cast ")
	if casts, err := strconv.Atoi(strings.Fields(cast + " x")[0]); err != nil || casts == 0 {
		t.Errorf("fighting bots cast %q abilities, want some (the crypt's firebolt):\n%s", cast, out)
	}
	if err := run([]string{"bots", "--endpoint", endpoint, "--key-dir", dir, "--room", "demo", "--instance", "demo-crypt",
		"--behavior", "dance"}); err == nil || !strings.Contains(err.Error(), "--behavior") {
		t.Errorf("an unknown behavior: %v", err)
	}
}

// Fighting bots clear the sample crypt: they find their way through its
// corridors, open its doors, take the key, open the boss room and kill
// the lich; every bot sees every guarded room cleared, and they stop.
func TestFightingBotsClearTheSampleCrypt(t *testing.T) {
	dir, endpoint := cryptServer(t, `{"seed":7,"width":256,"height":256,"biome":"dungeon","content":"crypt","npcDensity":0.1,`+
		`"portals":[{"to":"town","x":128,"y":16}]}`)

	out := captureStdout(t, func() error {
		return run([]string{"bots", "--endpoint", endpoint, "--key-dir", dir, "--room", "demo", "--instance", "demo-crypt",
			"--count", "4", "--duration", "150s", "--behavior", "fight", "--until-cleared"})
	})
	var cleared, guarded int
	reportLine(t, out, "dungeon: every bot saw %d of %d guarded rooms cleared", &cleared, &guarded)
	if guarded == 0 || cleared != guarded {
		t.Fatalf("the bots saw %d of %d guarded rooms cleared:\n%s", cleared, guarded, out)
	}
	t.Log(out)
}

// TestAHurtBotUsesAPotion: a fighting bot at 40 hit points or fewer uses a
// carried item of a usable kind, at most one every useEvery, never a worn
// one, and not while dead.
func TestAHurtBotUsesAPotion(t *testing.T) {
	crypt, _ := content.Named("crypt")
	usable, _ := arsenal(crypt.Definitions())
	f := &fighter{usable: usable}
	now := time.Now()
	state := func(hp uint8, items ...protocol.ItemView) client.State {
		return client.State{Self: protocol.EntityState{HP: hp}, Inventory: &protocol.Inventory{Items: items}}
	}
	potion, bone := protocol.ItemView{ID: "p1", Kind: "potion"}, protocol.ItemView{ID: "b1", Kind: "bone"}
	if id, ok := f.potion(state(30, bone, potion), now); !ok || id != "p1" {
		t.Errorf("hurt with a potion: %q %v, want p1", id, ok)
	}
	for what, s := range map[string]client.State{
		"healthy":     state(80, potion),
		"dead":        state(0, potion),
		"no potion":   state(20, bone),
		"no bag seen": {Self: protocol.EntityState{HP: 20}},
	} {
		if id, ok := f.potion(s, now); ok {
			t.Errorf("%s: uses %q", what, id)
		}
	}
	f.lastUse = now
	if _, ok := f.potion(state(20, potion), now.Add(useEvery/2)); ok {
		t.Error("a second potion within useEvery")
	}
}
