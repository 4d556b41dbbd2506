package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/client"

	gamev1 "github.com/roomkeeper/roomkeeper/api/v1"
	"github.com/roomkeeper/roomkeeper/internal/mapgen"
	"github.com/roomkeeper/roomkeeper/internal/testenv"
)

// browserRun bounds web/e2e/play.mjs, which bounds itself at a little over
// two minutes.
const browserRun = 4 * time.Minute

// browserSummary is what web/e2e/play.mjs writes into summary.json.
type browserSummary struct {
	OK        bool   `json:"ok"`
	Error     string `json:"error"`
	PlayerID  uint32 `json:"playerId"`
	WorldHash string `json:"worldHash"`
	MapHash   string `json:"mapHash"`
	Maps      []struct {
		Map       string `json:"map"`
		Instance  string `json:"instance"`
		WorldHash string `json:"worldHash"`
		MapHash   string `json:"mapHash"`
	} `json:"maps"`
	Steps []struct {
		Name string `json:"name"`
		OK   bool   `json:"ok"`
	} `json:"steps"`
}

// TestBrowserPlays plays the demo page the manager serves at /play/ in
// Chromium (web/e2e/play.mjs): a guest and a player with a key typed into
// the page join the sample room and see each other; one picks up loot (its HUD offers it in the slots the
// room's content definitions name) and drops it, walks through the portal
// into its crypt and resumes after a dropped connection. Then the world hashes the page computed
// with mapgen.wasm are checked against the generator run here on the
// GameRoom's own map configs.
func TestBrowserPlays(t *testing.T) {
	_ = cluster(t) // fails the test when the cluster did not start
	ctx, cancel := context.WithTimeout(context.Background(), browserRun+3*time.Minute)
	defer cancel()
	root, err := testenv.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	node, chromium := browserTools(t, root)
	eventually(t, ctx, "the sample room's town Ready", func() error { return mapReady(ctx, "demo-town") })
	page := joinAPI.BaseURL + "/play/"
	pageServed(t, ctx, page)
	// The crypt the player walks into is a new MapInstance of the sample
	// room; later tests expect the room as the sample made it.
	t.Cleanup(func() { removeInstancedMaps(t, "demo") })

	artifacts := filepath.Join(root, "bin", "artifacts", "browser")
	if err := os.RemoveAll(artifacts); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(artifacts, 0o755); err != nil {
		t.Fatal(err)
	}
	runCtx, stop := context.WithTimeout(ctx, browserRun)
	defer stop()
	cmd := exec.CommandContext(runCtx, node, filepath.Join("web", "e2e", "play.mjs"))
	cmd.Dir = root
	playerKey := fmt.Sprintf("browser-%d", time.Now().UnixNano())
	cmd.Env = append(os.Environ(), "ROOMKEEPER_PAGE="+page, "ROOMKEEPER_ARTIFACTS="+artifacts,
		"ROOMKEEPER_CHROMIUM="+chromium, "ROOMKEEPER_ROOM=demo", "ROOMKEEPER_NAMESPACE=default",
		"ROOMKEEPER_PLAYER_KEY="+playerKey)
	// Its own process group, so a timeout ends Chromium with node.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = 10 * time.Second
	out := &lineLogger{t: t}
	cmd.Stdout, cmd.Stderr = out, out
	runErr := cmd.Run()
	out.flush()
	summary, readErr := readSummary(filepath.Join(artifacts, "summary.json"))
	switch {
	case runCtx.Err() != nil:
		t.Fatalf("the browser run did not finish within %s; screenshots in %s", browserRun, artifacts)
	case runErr != nil && readErr == nil && summary.Error != "":
		t.Fatalf("the browser run failed: %s\n(screenshots and summary.json in %s)", summary.Error, artifacts)
	case runErr != nil:
		t.Fatalf("the browser run failed: %v (see its output above; artifacts in %s)", runErr, artifacts)
	case readErr != nil:
		t.Fatalf("the browser run passed but left no readable summary: %v", readErr)
	case !summary.OK:
		t.Fatalf("the browser run exited 0 but its summary says it failed: %s", summary.Error)
	}
	crossCheckWorlds(t, ctx, summary)
	// The second player joined with the key typed into the page: the
	// server made it a player with a character, not a guest.
	characters, err := joinAPI.Characters(ctx, "default", "demo", playerKey)
	if err != nil || len(characters) != 1 {
		t.Errorf("the player who joined with a key from the page has characters %+v (%v), want one", characters, err)
	}
}

// browserTools finds node and Chromium, and the web client's node modules:
// a missing one fails the test (a skipped browser test would pass unseen).
func browserTools(t *testing.T, root string) (node, chromium string) {
	t.Helper()
	const install = "run make test, which installs them"
	node, err := exec.LookPath("node")
	if err != nil {
		t.Fatalf("node is not installed (%v): %s", err, install)
	}
	for _, dir := range []string{"playwright-core", "ws"} {
		if _, err := os.Stat(filepath.Join(root, "web", "node_modules", dir)); err != nil {
			t.Fatalf("web/node_modules/%s is missing: %s", dir, install)
		}
	}
	chromium = os.Getenv("ROOMKEEPER_CHROMIUM")
	if chromium == "" {
		chromium = "/usr/bin/chromium"
	}
	if _, err := os.Stat(chromium); err != nil {
		t.Fatalf("Chromium is not at %s (set ROOMKEEPER_CHROMIUM to use another): %s", chromium, install)
	}
	return node, chromium
}

// pageServed fails fast when the manager serves no page (a manager built
// without the web client answers 503), instead of letting the browser
// wait for a button that never comes.
func pageServed(t *testing.T, ctx context.Context, page string) {
	t.Helper()
	status, body := testenv.Get(t, ctx, nil, page)
	if status != http.StatusOK || !strings.Contains(body, "app.js") {
		t.Fatalf("GET %s: %d %q: the manager does not serve the demo page (make build builds it in)", page, status, body[:min(len(body), 300)])
	}
}

func readSummary(path string) (browserSummary, error) {
	var s browserSummary
	raw, err := os.ReadFile(path)
	if err != nil {
		return s, err
	}
	return s, json.Unmarshal(raw, &s)
}

// crossCheckWorlds checks every world the page built against the
// generator run on the GameRoom's config of that map, written as JSON the
// way the operator hands it to the room server.
func crossCheckWorlds(t *testing.T, ctx context.Context, summary browserSummary) {
	t.Helper()
	room := &gamev1.GameRoom{}
	if err := k8s.Get(ctx, client.ObjectKey{Namespace: "default", Name: "demo"}, room); err != nil {
		t.Fatal(err)
	}
	if len(summary.Maps) < 2 || summary.Maps[0].Map != "town" || summary.Maps[1].Map != "crypt" {
		t.Fatalf("the page played on %+v, want the town, then the crypt", summary.Maps)
	}
	if summary.WorldHash != summary.Maps[0].WorldHash {
		t.Errorf("summary: worldHash %s, the town's %s", summary.WorldHash, summary.Maps[0].WorldHash)
	}
	for _, played := range summary.Maps {
		want, err := worldHash(room, played.Map)
		if err != nil {
			t.Fatal(err)
		}
		if played.WorldHash != want || played.MapHash != want {
			t.Errorf("map %s: the page built world %s and the room server said %s; the GameRoom's config generates %s",
				played.Map, played.WorldHash, played.MapHash, want)
		}
	}
}

// worldHash generates the room's map from its spec.
func worldHash(room *gamev1.GameRoom, mapName string) (string, error) {
	for _, m := range room.Spec.Maps {
		if m.Name != mapName {
			continue
		}
		raw, err := json.Marshal(m.Config)
		if err != nil {
			return "", err
		}
		cfg, err := mapgen.ParseConfig(raw)
		if err != nil {
			return "", fmt.Errorf("map %s: %w", mapName, err)
		}
		w, err := mapgen.Generate(cfg)
		if err != nil {
			return "", fmt.Errorf("map %s: %w", mapName, err)
		}
		return w.Hash, nil
	}
	return "", fmt.Errorf("room %s has no map %s", room.Name, mapName)
}

// removeInstancedMaps deletes the room's instanced MapInstances (the
// party copies players walked into) and waits until they are gone.
func removeInstancedMaps(t *testing.T, roomName string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	eventually(t, ctx, "the browser test's crypt instances removed", func() error {
		list := &gamev1.MapInstanceList{}
		if err := k8s.List(ctx, list, client.InNamespace("default"), client.MatchingLabels{gamev1.LabelRoom: roomName}); err != nil {
			return err
		}
		var left []string
		for i := range list.Items {
			mi := &list.Items[i]
			if !mi.Spec.Instanced {
				continue
			}
			left = append(left, mi.Name)
			if mi.DeletionTimestamp == nil {
				if err := k8s.Delete(ctx, mi); client.IgnoreNotFound(err) != nil {
					return err
				}
			}
		}
		if len(left) > 0 {
			return fmt.Errorf("still there: %s", strings.Join(left, ", "))
		}
		return nil
	})
}

// lineLogger writes a child process's output into the test log line by
// line, as it comes.
type lineLogger struct {
	t       *testing.T
	partial []byte
}

func (l *lineLogger) Write(p []byte) (int, error) {
	l.partial = append(l.partial, p...)
	for {
		i := bytes.IndexByte(l.partial, '\n')
		if i < 0 {
			return len(p), nil
		}
		l.t.Log(string(l.partial[:i]))
		l.partial = l.partial[i+1:]
	}
}

func (l *lineLogger) flush() {
	if len(l.partial) > 0 {
		l.t.Log(string(l.partial))
		l.partial = nil
	}
}
