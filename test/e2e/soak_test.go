package e2e

import (
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/roomkeeper/roomkeeper/internal/testenv"
)

// TestSoakWithChaos runs a short `roomload soak --chaos` on the local
// cluster: two rooms, six players fighting, picking up, dropping and
// walking through portals for a minute and a half while a room server is
// killed, a map pod deleted, Postgres restarted, the manager restarted and
// one room's cellar flooded with guests' parties (the budgets hold, another
// room's keyed party still enters). Every invariant must hold, and every
// fault must be recovered from. Meanwhile the database is pruned as the
// manager's retention does, round after round (pruning_test.go): it waits
// for no lock of 50 ms or more, and makes nobody wait that long. After it,
// every character's kept checkpoints replay clean against its critical
// events (the replay check of `roomctl audit replay`).
func TestSoakWithChaos(t *testing.T) {
	ctx := cluster(t)
	root, err := testenv.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.CommandContext(ctx, filepath.Join(root, "bin", "roomload"), "soak",
		"--kubeconfig", filepath.Join(devDir, "kubeconfig"), "--join-api", joinAPI.BaseURL,
		"--postgres-dir", filepath.Join(devDir, "pg"), "--prefix", "soak-e2e",
		"--rooms", "2", "--bots", "6", "--duration", "90s", "--rate", "6",
		"--chaos", "--chaos-min", "5s", "--chaos-max", "8s", "--seed", "7")
	cmd.Dir = root
	stopPruning := pruneDuringSoak(t, ctx)
	out, err := cmd.CombinedOutput()
	pruned, longest := stopPruning()
	t.Logf("roomload soak:\n%s", out)
	t.Logf("pruned %d old critical events during the soak; longest lock wait involving the pruner: %s", pruned, longest)
	if pruned == 0 || longest >= 50*time.Millisecond {
		t.Errorf("pruning during the soak: %d rows, longest wait involving it %s; want rows pruned and no wait of 50 ms", pruned, longest)
	}
	if err != nil {
		t.Fatalf("the soak failed: %v", err)
	}
	for _, kind := range []string{"kill-room-server", "delete-pod", "restart-postgres", "restart-manager", "party-flood"} {
		if !recovered(string(out), kind) {
			t.Errorf("no %s fault with a recovery time in the summary", kind)
		}
	}
	if !strings.Contains(string(out), "invariants: all held") {
		t.Error("the summary does not say the invariants held")
	}
	checked, diverged := replayEveryCharacter(t, ctx)
	t.Logf("the replay check: %d checkpoint pairs of the soak's characters", checked)
	if checked == 0 || len(diverged) > 0 {
		t.Errorf("the replay check after the soak: %d pairs checked, divergences %+v", checked, diverged)
	}
}

// recovered reports whether the soak's summary has a line of a fault of
// kind with its recovery time.
func recovered(summary, kind string) bool {
	for _, line := range strings.Split(summary, "\n") {
		if strings.Contains(line, "fault "+kind+" ") && strings.Contains(line, "recovered in ") {
			return true
		}
	}
	return false
}
