package controllers

import (
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	gamev1 "github.com/roomkeeper/roomkeeper/api/v1"
)

// Fixture builders shared by the unit and envtest tests. The defaults are the
// ones the CRD schema would apply, so built objects look like stored ones.

type roomOption func(*gamev1.GameRoom)

func newGameRoom(name string, opts ...roomOption) *gamev1.GameRoom {
	room := &gamev1.GameRoom{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default", UID: "room-uid", Generation: 1},
		Spec: gamev1.GameRoomSpec{
			Image:        "roomkeeper/roomserver:dev",
			RoomSettings: defaultSettings(),
		},
	}
	for _, opt := range opts {
		opt(room)
	}
	if room.Spec.DefaultMap == "" && len(room.Spec.Maps) > 0 {
		room.Spec.DefaultMap = room.Spec.Maps[0].Name
	}
	return room
}

func defaultSettings() gamev1.RoomSettings {
	return gamev1.RoomSettings{
		TickRate:           30,
		SnapshotRate:       10,
		MaxPlayersPerMap:   100,
		CheckpointInterval: &metav1.Duration{Duration: 5 * time.Second},
		RestartPolicy: gamev1.RestartPolicy{
			MaxRestarts:    3,
			Window:         &metav1.Duration{Duration: time.Minute},
			Quarantine:     &metav1.Duration{Duration: time.Minute},
			InitialBackoff: &metav1.Duration{Duration: time.Second},
			MaxBackoff:     &metav1.Duration{Duration: 30 * time.Second},
		},
		Tokens: gamev1.TokenPolicy{
			TTL:              &metav1.Duration{Duration: 10 * time.Second},
			RotationInterval: &metav1.Duration{Duration: 24 * time.Hour},
		},
	}
}

func withMap(name string) roomOption {
	return func(r *gamev1.GameRoom) {
		r.Spec.Maps = append(r.Spec.Maps, gamev1.GameMap{Name: name,
			Config: gamev1.MapConfig{Seed: 42, Width: 256, Height: 256, Biome: gamev1.BiomeMeadow}})
	}
}

func withInstancedMap(name string) roomOption {
	return func(r *gamev1.GameRoom) {
		withMap(name)(r)
		r.Spec.Maps[len(r.Spec.Maps)-1].Instanced = true
	}
}

func withIdleTimeout(d time.Duration) roomOption {
	return func(r *gamev1.GameRoom) { r.Spec.IdleTimeout = &metav1.Duration{Duration: d} }
}

func withImage(image string) roomOption {
	return func(r *gamev1.GameRoom) { r.Spec.Image = image }
}

func withDatabase(secret, key string) roomOption {
	return func(r *gamev1.GameRoom) {
		r.Spec.Database = &gamev1.DatabaseRef{SecretRef: gamev1.SecretKeyRef{Name: secret, Key: key}}
	}
}

// newMapInstance is the MapInstance the room controller builds for map.
func newMapInstance(room *gamev1.GameRoom, mapName string, opts ...func(*gamev1.MapInstance)) *gamev1.MapInstance {
	for _, m := range room.Spec.Maps {
		if m.Name == mapName {
			mi := buildShard(room, m, 1)
			mi.UID = "mi-uid"
			mi.Generation = 1
			for _, opt := range opts {
				opt(mi)
			}
			return mi
		}
	}
	panic("no map " + mapName)
}

func withMapPhase(phase gamev1.MapInstancePhase, ready bool) func(*gamev1.MapInstance) {
	return func(mi *gamev1.MapInstance) {
		mi.Status.Phase = phase
		setCondition(&mi.Status.Conditions, gamev1.ConditionReady, boolStatus(ready), "Test", "", 1, metav1.Now())
	}
}

func withPlayers(n int32) func(*gamev1.MapInstance) {
	return func(mi *gamev1.MapInstance) { mi.Status.Players = n }
}

func withEmptySince(t *metav1.Time) func(*gamev1.MapInstance) {
	return func(mi *gamev1.MapInstance) { mi.Status.EmptySince = t }
}

type podOption func(*corev1.Pod)

func newPod(opts ...podOption) *corev1.Pod {
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "demo-town", Namespace: "default"}}
	for _, opt := range opts {
		opt(pod)
	}
	return pod
}

func podPhase(phase corev1.PodPhase) podOption {
	return func(p *corev1.Pod) { p.Status.Phase = phase }
}

func podIP(ip string) podOption {
	return func(p *corev1.Pod) { p.Status.PodIP = ip }
}

func podReadyCondition(ready bool) podOption {
	return func(p *corev1.Pod) {
		status := corev1.ConditionFalse
		if ready {
			status = corev1.ConditionTrue
		}
		p.Status.Conditions = append(p.Status.Conditions, corev1.PodCondition{Type: corev1.PodReady, Status: status})
	}
}

func podExited(code int32) podOption {
	return func(p *corev1.Pod) {
		p.Status.Phase = corev1.PodFailed
		p.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: roomServerContainer,
			State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: code, Reason: "Error"}}}}
	}
}

func podDeleting() podOption {
	return func(p *corev1.Pod) {
		now := metav1.Now()
		p.DeletionTimestamp = &now
	}
}
