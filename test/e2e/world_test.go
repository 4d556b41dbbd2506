package e2e

import (
	"context"
	"errors"
	"fmt"
	"os/exec"
	"path/filepath"
	"slices"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"

	gamev1 "github.com/roomkeeper/roomkeeper/api/v1"
	"github.com/roomkeeper/roomkeeper/internal/testenv"
)

// TestARaidSurvivesItsPod: a party of four fighting bots walks from the
// town into its own instance of the crypt, clears rooms on its way to the
// lich and hurts it below its first threshold, then leaves. kubectl
// delete pod, an image rollout and a kill -9 of the room server each
// replace the party instance's pod, and each time the instance comes back
// with its world as the last checkpoint had it: the same rooms cleared
// (their doors open), the key room's quest gate still passed, the lich in
// the same phase with the same hit points, the tick never set back.
func TestARaidSurvivesItsPod(t *testing.T) {
	ctx, cancel := context.WithTimeout(cluster(t), 8*time.Minute)
	defer cancel()
	root, err := testenv.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	town := gamev1.GameMap{Name: "town", Config: gamev1.MapConfig{Seed: 5, Width: 256, Height: 256,
		Portals: []gamev1.Portal{{To: "crypt", X: 200, Y: 128}}}}
	crypt := gamev1.GameMap{Name: "crypt", Instanced: true, Config: gamev1.MapConfig{Seed: 7, Width: 256, Height: 256, Biome: "dungeon",
		Content: "crypt", NPCDensity: 0.1, Portals: []gamev1.Portal{{To: "town", X: 128, Y: 16}}}}
	room := databaseRoom("raid", town, crypt)
	if err := k8s.Create(ctx, room); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = k8s.Delete(context.Background(), room) })
	eventually(t, ctx, "the raid's town Ready", func() error { return mapReady(ctx, "raid-town") })

	party := fmt.Sprint("raiders-", time.Now().UnixNano())
	bots := exec.CommandContext(ctx, filepath.Join(root, "bin", "roomctl"), "bots", "--join-api", joinAPI.BaseURL,
		"--room", "raid", "--enter", "crypt", "--party", party, "--auth-key-prefix", "raider-"+party,
		"--count", "4", "--behavior", "fight", "--until-boss-phase", "1", "--duration", "4m")
	if out, err := bots.CombinedOutput(); err != nil {
		t.Fatalf("roomctl bots: %v\n%s", err, out)
	}
	name := partyInstance(t, ctx, "raid", "crypt")
	left := time.Now()
	raided := worldSince(t, ctx, name, left)
	if raided.RoomsCleared < 2 || raided.BossPhase < 2 || !slices.Contains(raided.QuestPhases, gamev1.QuestPhaseKeyRoomCleared) {
		t.Fatalf("after the raid the crypt's world is %+v: want 2 rooms cleared or more, the key room among them (a quest gate), and the lich in phase 2", raided)
	}
	t.Logf("after the raid: %d rooms cleared, the lich in phase %d at %d hp, tick %d, quest phases %v",
		raided.RoomsCleared, raided.BossPhase, raided.BossHP, raided.Tick, raided.QuestPhases)

	for _, replace := range []struct {
		what string
		do   func() error
	}{
		{"kubectl delete pod", func() error { return k8s.Delete(ctx, servingPod(t, ctx, name)) }},
		{"a rollout", func() error { return setImage(ctx, room, "roomkeeper/roomserver:raid-v2") }},
		{"kill -9", func() error {
			pid, err := roomServerPID(name)
			if err != nil {
				return err
			}
			return syscall.Kill(pid, syscall.SIGKILL)
		}},
	} {
		old := servingPod(t, ctx, name)
		if err := replace.do(); err != nil {
			t.Fatalf("%s: %v", replace.what, err)
		}
		eventually(t, ctx, replace.what+": the map Ready on a new pod, the old one gone", func() error {
			if pod := servingPod(t, ctx, name); pod == nil || pod.UID == old.UID {
				return errors.New("the old pod serves on")
			}
			if err := k8s.Get(ctx, client.ObjectKeyFromObject(old), &corev1.Pod{}); err == nil {
				return errors.New("the old pod is still there")
			}
			return mapReady(ctx, name)
		})
		back := worldHeardSince(t, ctx, name, time.Now()) // what the map reports from now on is the new pod's
		if back.RoomsCleared != raided.RoomsCleared || back.BossPhase != raided.BossPhase || back.BossHP != raided.BossHP || back.Tick < raided.Tick ||
			!slices.Equal(back.QuestPhases, raided.QuestPhases) {
			t.Fatalf("after %s the crypt's world is %+v, before it %+v", replace.what, back, raided)
		}
	}
}

// partyInstance is the name of the room's one party instance of map.
func partyInstance(t *testing.T, ctx context.Context, room, mapName string) string {
	t.Helper()
	var list gamev1.MapInstanceList
	if err := k8s.List(ctx, &list, client.InNamespace("default")); err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, mi := range list.Items {
		if mi.Spec.RoomName == room && mi.Spec.MapName == mapName && mi.Spec.Instanced {
			names = append(names, mi.Name)
		}
	}
	if len(names) != 1 {
		t.Fatalf("room %s has party instances %v of %s: want one", room, names, mapName)
	}
	return names[0]
}

// worldSince waits for the map to report a world checkpoint written after
// since, and returns it.
func worldSince(t *testing.T, ctx context.Context, name string, since time.Time) gamev1.WorldCheckpoint {
	t.Helper()
	return worldAfter(t, ctx, name, "checkpoint written", since, func(st gamev1.MapInstanceStatus) *metav1.Time { return st.World.CheckpointTime })
}

// worldHeardSince waits for the map to report its world in a heartbeat
// after since, and returns it.
func worldHeardSince(t *testing.T, ctx context.Context, name string, since time.Time) gamev1.WorldCheckpoint {
	t.Helper()
	return worldAfter(t, ctx, name, "heartbeat with it", since, func(st gamev1.MapInstanceStatus) *metav1.Time { return st.LastHeartbeat })
}

// worldAfter waits until the map's status has a world whose time (as
// timeOf reads it) is after since, and returns that world.
func worldAfter(t *testing.T, ctx context.Context, name, what string, since time.Time,
	timeOf func(gamev1.MapInstanceStatus) *metav1.Time) gamev1.WorldCheckpoint {
	t.Helper()
	var w gamev1.WorldCheckpoint
	eventually(t, ctx, name+"'s world: a "+what, func() error {
		mi := &gamev1.MapInstance{}
		if err := k8s.Get(ctx, client.ObjectKey{Namespace: "default", Name: name}, mi); err != nil {
			return err
		}
		if mi.Status.World == nil || timeOf(mi.Status) == nil || !timeOf(mi.Status).After(since) {
			return fmt.Errorf("world %+v, no %s since %s", mi.Status.World, what, since.Format(time.RFC3339))
		}
		w = *mi.Status.World
		return nil
	})
	return w
}

// servingPod is the map's pod, as its status names it; nil for none.
func servingPod(t *testing.T, ctx context.Context, name string) *corev1.Pod {
	t.Helper()
	mi := &gamev1.MapInstance{}
	if err := k8s.Get(ctx, client.ObjectKey{Namespace: "default", Name: name}, mi); err != nil {
		t.Fatal(err)
	}
	pod := &corev1.Pod{}
	if mi.Status.PodName == "" || k8s.Get(ctx, client.ObjectKey{Namespace: "default", Name: mi.Status.PodName}, pod) != nil {
		return nil
	}
	return pod
}

// setImage changes the room's image, a rollout. The operator writes the
// room's status meanwhile, so a stale read is read again.
func setImage(ctx context.Context, room *gamev1.GameRoom, image string) error {
	return retry.RetryOnConflict(retry.DefaultRetry, func() error {
		live := &gamev1.GameRoom{}
		if err := k8s.Get(ctx, client.ObjectKeyFromObject(room), live); err != nil {
			return err
		}
		live.Spec.Image = image
		return k8s.Update(ctx, live)
	})
}
