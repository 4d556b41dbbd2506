package e2e

import (
	"context"
	"fmt"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/client"

	gamev1 "github.com/roomkeeper/roomkeeper/api/v1"
	"github.com/roomkeeper/roomkeeper/internal/testenv"
)

// TestBotsClearTheSampleCrypt: four fighting bots of one party join the
// sample room through the join API, walk through the town's portal into
// the party's instance of the crypt and clear it: they
// find their way through its corridors and doors, take the key, open the
// locked boss room and kill the lich, and every bot sees every guarded
// room cleared (so every enemy is dead: a dungeon's enemies spawn in its
// rooms while there is room, and the crypt's do not come back).
func TestBotsClearTheSampleCrypt(t *testing.T) {
	ctx, cancel := context.WithTimeout(cluster(t), 5*time.Minute)
	defer cancel()
	root, err := testenv.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	eventually(t, ctx, "the sample room's town Ready", func() error { return mapReady(ctx, "demo-town") })
	party := fmt.Sprint("raid-", time.Now().UnixNano())
	cmd := exec.CommandContext(ctx, filepath.Join(root, "bin", "roomctl"), "bots", "--join-api", joinAPI.BaseURL,
		"--room", "demo", "--enter", "crypt", "--party", party, "--auth-key-prefix", "raider-"+party,
		"--count", "4", "--behavior", "fight", "--until-cleared", "--duration", "4m")
	t.Cleanup(func() { removeInstances(t, "demo", "crypt") })
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("roomctl bots: %v\n%s", err, out)
	}
	var cleared, guarded int
	for line := range strings.Lines(string(out)) {
		if strings.HasPrefix(line, "dungeon:") {
			if _, err := fmt.Sscanf(line, "dungeon: every bot saw %d of %d guarded rooms cleared", &cleared, &guarded); err != nil {
				t.Fatalf("parsing %q: %v", line, err)
			}
		}
	}
	if guarded == 0 || cleared != guarded {
		t.Fatalf("every bot saw %d of %d guarded rooms cleared:\n%s", cleared, guarded, out)
	}
	t.Logf("%s", out)
}

// removeInstances deletes the room's party instances of map, as their
// idle timeout would later, and waits until the room counts only its
// other maps again, so the tests after this one find the sample as
// make dev leaves it.
func removeInstances(t *testing.T, room, mapName string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	var list gamev1.MapInstanceList
	if err := k8s.List(ctx, &list, client.InNamespace("default")); err != nil {
		t.Error(err)
		return
	}
	for i := range list.Items {
		mi := &list.Items[i]
		if mi.Spec.RoomName == room && mi.Spec.MapName == mapName && mi.Spec.Instanced {
			if err := k8s.Delete(ctx, mi); client.IgnoreNotFound(err) != nil {
				t.Error(err)
			}
		}
	}
	eventually(t, ctx, "the room back to its own maps", func() error {
		gr := &gamev1.GameRoom{}
		if err := k8s.Get(ctx, client.ObjectKey{Namespace: "default", Name: room}, gr); err != nil {
			return err
		}
		if gr.Status.MapsReady != "1/1" {
			return fmt.Errorf("maps ready %s", gr.Status.MapsReady)
		}
		return nil
	})
}
