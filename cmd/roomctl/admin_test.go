package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/roomkeeper/roomkeeper/internal/protocol"
)

// adminStub answers the admin API's routes with canned bodies and records
// what it was asked (the real API is tested in internal/adminapi and
// test/e2e's TestAnOperatorAnswersASupportTicket).
func adminStub(t *testing.T, divergences int) (url string, asked *[]string) {
	t.Helper()
	var paths []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		paths = append(paths, r.Header.Get("Authorization")+" "+r.Method+" "+r.URL.RequestURI()+" "+string(body))
		switch {
		case r.Method != http.MethodGet:
			failed := map[string]string{}
			if divergences > 0 {
				failed["demo-crypt-1"] = "not reachable"
			}
			_ = json.NewEncoder(w).Encode(moderationAnswer{Affected: 1, Maps: []string{"demo-town"}, Failed: failed})
		case strings.HasSuffix(r.URL.Path, "/history"):
			_ = json.NewEncoder(w).Encode(protocol.CharacterHistory{Character: "ann", Entries: []protocol.HistoryEntry{
				{At: time.Date(2026, 11, 29, 10, 0, 0, 0, time.UTC), What: "event", Map: "demo-town", Detail: "loot.pickup sword-1"}}})
		case strings.HasSuffix(r.URL.Path, "/replay"):
			_ = json.NewEncoder(w).Encode(protocol.ReplayReport{Character: "ann", Checked: 3,
				Divergences: make([]protocol.Divergence, divergences)})
		}
	}))
	t.Cleanup(srv.Close)
	return srv.URL, &paths
}

func captureAdminOut(t *testing.T) *bytes.Buffer {
	t.Helper()
	var buf bytes.Buffer
	old := stdout
	stdout = &buf
	t.Cleanup(func() { stdout = old })
	return &buf
}

// TestHistoryAndReplayCallTheAdminAPI: the id may come before or after the
// flags; the token goes as a bearer; a divergence fails the command.
func TestHistoryAndReplayCallTheAdminAPI(t *testing.T) {
	url, asked := adminStub(t, 0)
	out := captureAdminOut(t)
	ctx := context.Background()
	for _, args := range [][]string{
		{"history", "character", "ann", "--admin-api", url, "--room", "demo", "--token", "T", "--since", "72h"},
		{"history", "character", "--admin-api", url, "--room", "demo", "--token", "T", "ann"},
	} {
		if err := run(args); err != nil {
			t.Fatalf("%v: %v", args, err)
		}
	}
	if !strings.Contains(out.String(), "loot.pickup sword-1") {
		t.Errorf("history printed:\n%s", out)
	}
	if (*asked)[0] != "Bearer T GET /admin/v1/namespaces/default/gamerooms/demo/characters/ann/history?since=72h0m0s " {
		t.Errorf("asked %q", (*asked)[0])
	}
	if err := runAudit(ctx, []string{"replay", "--character", "ann", "--admin-api", url, "--room", "demo", "--token", "T"}); err != nil {
		t.Errorf("a clean replay: %v", err)
	}
	bad, _ := adminStub(t, 2)
	if err := runAudit(ctx, []string{"replay", "--character", "ann", "--admin-api", bad, "--room", "demo", "--token", "T"}); err == nil {
		t.Error("a replay with divergences succeeded")
	}
	t.Setenv(adminTokenEnv, "")
	if err := run([]string{"history", "character", "ann", "--admin-api", url, "--room", "demo"}); err == nil || !strings.Contains(err.Error(), "no token") {
		t.Errorf("without a token: %v", err)
	}
}

// TestAdminCommandsCallTheirRoutes: each admin command's method, route
// and body; a map that missed the command fails it.
func TestAdminCommandsCallTheirRoutes(t *testing.T) {
	url, asked := adminStub(t, 0)
	captureAdminOut(t)
	flags := []string{"--admin-api", url, "--room", "demo", "--token", "T"}
	for _, args := range [][]string{
		{"admin", "kick", "--character", "ann", "--reason", "afk"},
		{"admin", "ban", "--user", "u1", "--duration", "72h"},
		{"admin", "unban", "--user", "u1"},
		{"admin", "message", "--text", "hi", "--map", "demo-town"},
	} {
		if err := run(append(args, flags...)); err != nil {
			t.Fatalf("%v: %v", args, err)
		}
	}
	want := []string{
		`Bearer T POST /admin/v1/namespaces/default/gamerooms/demo/kick {"character":"ann","reason":"afk"}`,
		`Bearer T POST /admin/v1/namespaces/default/gamerooms/demo/bans {"duration":"72h0m0s","user":"u1"}`,
		`Bearer T DELETE /admin/v1/namespaces/default/gamerooms/demo/bans/u1 `,
		`Bearer T POST /admin/v1/namespaces/default/gamerooms/demo/message {"map":"demo-town","text":"hi"}`,
	}
	if strings.Join(*asked, "\n") != strings.Join(want, "\n") {
		t.Errorf("asked:\n%s\nwant:\n%s", strings.Join(*asked, "\n"), strings.Join(want, "\n"))
	}
	missed, _ := adminStub(t, 1)
	if err := run(append([]string{"admin", "save"}, "--admin-api", missed, "--room", "demo", "--token", "T")); err == nil {
		t.Error("a save a map missed succeeded")
	}
}
