package e2e

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	gamev1 "github.com/roomkeeper/roomkeeper/api/v1"
	"github.com/roomkeeper/roomkeeper/internal/protocol"
	pkgclient "github.com/roomkeeper/roomkeeper/pkg/client"
)

// The scenarios run in this order against config/samples' room "demo";
// the last one deletes it.

func mapReady(ctx context.Context, name string) error {
	mi := &gamev1.MapInstance{}
	if err := k8s.Get(ctx, client.ObjectKey{Namespace: "default", Name: name}, mi); err != nil {
		return err
	}
	if !meta.IsStatusConditionTrue(mi.Status.Conditions, gamev1.ConditionReady) || mi.Status.Endpoint == "" {
		return fmt.Errorf("MapInstance %s is %s", name, mi.Status.Phase)
	}
	return nil
}

func TestSampleRoomBecomesReady(t *testing.T) {
	ctx := cluster(t)
	eventually(t, ctx, "the sample room Ready", func() error {
		room := &gamev1.GameRoom{}
		if err := k8s.Get(ctx, client.ObjectKey{Namespace: "default", Name: "demo"}, room); err != nil {
			return err
		}
		if room.Status.Phase != gamev1.GameRoomRunning || room.Status.MapsReady != "1/1" {
			return fmt.Errorf("room is %s, maps %s", room.Status.Phase, room.Status.MapsReady)
		}
		return nil
	})
	// What `kubectl get gr` prints: the server-side table of the CRD's columns.
	cfg := rest.CopyConfig(restCfg)
	cfg.GroupVersion, cfg.APIPath = &gamev1.GroupVersion, "/apis"
	cfg.NegotiatedSerializer = scheme.Codecs.WithoutConversion()
	rc, err := rest.RESTClientFor(cfg)
	if err != nil {
		t.Fatal(err)
	}
	raw, err := rc.Get().Namespace("default").Resource("gamerooms").Name("demo").
		SetHeader("Accept", "application/json;as=Table;v=v1;g=meta.k8s.io").DoRaw(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var table metav1.Table
	if err := json.Unmarshal(raw, &table); err != nil || len(table.Rows) != 1 {
		t.Fatalf("table: %v %s", err, raw)
	}
	got := map[string]any{}
	for i, c := range table.ColumnDefinitions {
		got[c.Name] = table.Rows[0].Cells[i]
	}
	if got["Ready"] != "True" || got["Maps"] != "1/1" || got["Phase"] != "Running" || got["Players"] == nil {
		t.Errorf("kubectl get gr would show %v", got)
	}
}

// play joins the sample room through the join API and connects.
func play(t *testing.T, ctx context.Context, authKey string) *pkgclient.Client {
	t.Helper()
	var c *pkgclient.Client
	eventually(t, ctx, "joining", func() error {
		res, err := joinAPI.Join(ctx, "default", "demo", pkgclient.JoinRequest{AuthKey: authKey})
		if err != nil {
			return err
		}
		c, err = pkgclient.Dial(ctx, res.Endpoint, protocol.Hello{Ticket: res.Ticket}, pkgclient.Options{})
		return err
	})
	t.Cleanup(func() { _ = c.Close() })
	return c
}

func TestPlayersJoinSeeEachOtherAndAreCounted(t *testing.T) {
	ctx := cluster(t)
	guest, alice := play(t, ctx, ""), play(t, ctx, "alice-e2e-key")
	if _, err := guest.WaitFor(ctx, func(s pkgclient.State) bool { return s.Sees(alice.Welcome().PlayerID) }); err != nil {
		t.Fatalf("the guest never saw alice: %v", err)
	}
	eventually(t, ctx, "players counted from the heartbeats", func() error {
		room := &gamev1.GameRoom{}
		if err := k8s.Get(ctx, client.ObjectKey{Namespace: "default", Name: "demo"}, room); err != nil {
			return err
		}
		if room.Status.Players < 2 {
			return fmt.Errorf("players = %d", room.Status.Players)
		}
		return nil
	})
}

// roomServerPID finds this cluster's room-server process for instance.
func roomServerPID(instance string) (int, error) {
	procs, _ := filepath.Glob("/proc/[0-9]*/cmdline")
	for _, p := range procs {
		raw, err := os.ReadFile(p)
		if err != nil {
			continue
		}
		cmdline := strings.ReplaceAll(string(raw), "\x00", " ")
		if strings.Contains(cmdline, "--instance="+instance) && strings.Contains(cmdline, podPrefix) {
			return strconv.Atoi(filepath.Base(filepath.Dir(p)))
		}
	}
	return 0, errors.New("no room-server process for " + instance)
}

func TestKillNineRestartsTheMapAndPlayersComeBack(t *testing.T) {
	ctx := cluster(t)
	before := play(t, ctx, "bob-e2e-key")
	loot := nearestLoot(t, ctx, before)
	walkTo(t, ctx, before, loot)
	picked, err := before.Do(ctx, protocol.FeatureLoot, protocol.ActionPickup, protocol.LootPickup{Entity: loot.ID})
	if err != nil || !picked.OK {
		t.Fatalf("pickup: %+v %v", picked, err)
	}
	seq, err := before.MoveSteps(1, 0, 8)
	if err != nil {
		t.Fatal(err)
	}
	moved, err := before.WaitFor(ctx, func(s pkgclient.State) bool { return s.AckSeq >= seq })
	if err != nil {
		t.Fatal(err)
	}
	movedAt := time.Now()
	eventually(t, ctx, "a checkpoint after the move", func() error {
		mi := &gamev1.MapInstance{}
		if err := k8s.Get(ctx, client.ObjectKey{Namespace: "default", Name: "demo-town"}, mi); err != nil {
			return err
		}
		// The status keeps whole seconds: a checkpoint stamped in the
		// second of the move may have been taken before its last step.
		if c := mi.Status.LastCheckpoint; c == nil || !c.Time.After(movedAt.Truncate(time.Second)) {
			return errors.New("not yet")
		}
		return nil
	})
	pid, err := roomServerPID("demo-town")
	if err != nil {
		t.Fatal(err)
	}
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	eventually(t, ctx, "the failure recorded", func() error {
		mi := &gamev1.MapInstance{}
		if err := k8s.Get(ctx, client.ObjectKey{Namespace: "default", Name: "demo-town"}, mi); err != nil {
			return err
		}
		if mi.Status.RestartCount < 1 || mi.Status.LastFailure == nil {
			return fmt.Errorf("restartCount %d", mi.Status.RestartCount)
		}
		return nil
	})
	eventually(t, ctx, "a new pod Ready after the backoff", func() error { return mapReady(ctx, "demo-town") })
	after := play(t, ctx, "bob-e2e-key") // the same player, back on the new process
	s, err := after.WaitFor(ctx, func(s pkgclient.State) bool { return s.Sees(after.Welcome().PlayerID) })
	if err != nil {
		t.Fatal(err)
	}
	if s.Self.X != moved.Self.X || s.Self.Y != moved.Self.Y {
		t.Errorf("bob came back at (%v,%v), checkpointed at (%v,%v)", s.Self.X, s.Self.Y, moved.Self.X, moved.Self.Y)
	}
	if inv := after.Welcome().Inventory; len(inv) != len(picked.Inventory) || (len(inv) > 0 && inv[len(inv)-1] != picked.Inventory[len(picked.Inventory)-1]) {
		t.Errorf("inventory after the crash %+v, acknowledged %+v", inv, picked.Inventory)
	}
	if newPID, err := roomServerPID("demo-town"); err != nil || newPID == pid {
		t.Fatalf("room server after the crash: pid %d (was %d) %v", newPID, pid, err)
	}
}

func TestCrashLoopIsQuarantinedAndJoinsFailFast(t *testing.T) {
	ctx := cluster(t)
	crashy := &gamev1.GameRoom{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "crashy"},
		Spec: gamev1.GameRoomSpec{
			Image:      "roomkeeper/not-installed:dev", // the local node fails it at once
			DefaultMap: "town",
			Maps:       []gamev1.GameMap{{Name: "town", Config: gamev1.MapConfig{Seed: 1, Width: 64, Height: 64}}},
			RoomSettings: gamev1.RoomSettings{RestartPolicy: gamev1.RestartPolicy{MaxRestarts: 1,
				InitialBackoff: &metav1.Duration{Duration: 100 * time.Millisecond},
				MaxBackoff:     &metav1.Duration{Duration: 100 * time.Millisecond},
				Quarantine:     &metav1.Duration{Duration: 5 * time.Second}}},
		},
	}
	if err := k8s.Create(ctx, crashy); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = k8s.Delete(context.Background(), crashy) })
	var restartsAtQuarantine int32
	eventually(t, ctx, "crashy quarantined", func() error {
		mi := &gamev1.MapInstance{}
		if err := k8s.Get(ctx, client.ObjectKey{Namespace: "default", Name: "crashy-town"}, mi); err != nil {
			return err
		}
		if !meta.IsStatusConditionTrue(mi.Status.Conditions, gamev1.ConditionQuarantined) || mi.Status.Phase != gamev1.MapQuarantined {
			return fmt.Errorf("phase %s", mi.Status.Phase)
		}
		restartsAtQuarantine = mi.Status.RestartCount
		return nil
	})
	_, err := joinAPI.Join(ctx, "default", "crashy", pkgclient.JoinRequest{})
	var apiErr *pkgclient.APIError
	if !errors.As(err, &apiErr) || apiErr.Code != "map_quarantined" || apiErr.RetryAfter <= 0 {
		t.Fatalf("join to a quarantined map: %v, want map_quarantined with retryAfter", err)
	}
	eventually(t, ctx, "a Quarantined event on crashy-town", func() error { // events are written asynchronously
		events := &corev1.EventList{}
		if err := k8s.List(ctx, events, client.InNamespace("default")); err != nil {
			return err
		}
		for _, e := range events.Items {
			if e.Reason == "Quarantined" && e.InvolvedObject.Name == "crashy-town" {
				return nil
			}
		}
		return errors.New("none yet")
	})
	eventually(t, ctx, "crashy tried again after its quarantine", func() error {
		mi := &gamev1.MapInstance{}
		if err := k8s.Get(ctx, client.ObjectKey{Namespace: "default", Name: "crashy-town"}, mi); err != nil {
			return err
		}
		if mi.Status.RestartCount <= restartsAtQuarantine {
			return fmt.Errorf("still %d restarts", mi.Status.RestartCount)
		}
		return nil
	})
}

func TestInvalidManifestsAreRefusedWithTheFieldNamed(t *testing.T) {
	ctx := cluster(t)
	bad := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "game.roomkeeper.dev/v1", "kind": "GameRoom",
		"metadata": map[string]any{"name": "bad", "namespace": "default"},
		"spec": map[string]any{"image": "x", "defaultMap": "nowhere", "tickRate": int64(20), "snapshotRate": int64(30),
			"maps": []any{map[string]any{"name": "town", "config": map[string]any{"width": int64(64), "height": int64(64)}}}},
	}}
	err := k8s.Create(ctx, bad)
	if err == nil || !strings.Contains(err.Error(), "spec.defaultMap") || !strings.Contains(err.Error(), "spec.snapshotRate") {
		t.Fatalf("invalid GameRoom: %v, want it refused naming spec.defaultMap and spec.snapshotRate", err)
	}
}

func TestDeletingTheRoomRemovesEverything(t *testing.T) {
	ctx := cluster(t)
	room := &gamev1.GameRoom{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "demo"}}
	if err := k8s.Delete(ctx, room); err != nil {
		t.Fatal(err)
	}
	gone := func(obj client.Object, name string) func() error {
		return func() error {
			err := k8s.Get(ctx, client.ObjectKey{Namespace: "default", Name: name}, obj)
			if apierrors.IsNotFound(err) {
				return nil
			}
			return fmt.Errorf("%T %s still there (%w)", obj, name, err)
		}
	}
	eventually(t, ctx, "the MapInstance gone", gone(&gamev1.MapInstance{}, "demo-town"))
	eventually(t, ctx, "the pod gone", gone(&corev1.Pod{}, "demo-town"))
	eventually(t, ctx, "the key Secret gone", gone(&corev1.Secret{}, "demo-token-keys"))
	eventually(t, ctx, "the process gone", func() error {
		if pid, err := roomServerPID("demo-town"); err == nil {
			return fmt.Errorf("room server %d still runs", pid)
		}
		return nil
	})
}
