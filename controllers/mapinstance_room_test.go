package controllers

import (
	"testing"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	gamev1 "github.com/roomkeeper/roomkeeper/api/v1"
)

// TestTheCopiedSettingsOfEarlierMapInstancesAreDropped: MapInstances made
// by earlier operators carried a copy of their room's image, map config
// and settings. The schema no longer has them, so the API server drops
// them, and the map runs what its room says.
func TestTheCopiedSettingsOfEarlierMapInstancesAreDropped(t *testing.T) {
	ctx, ns := envtestNamespace(t)
	g := wait(t)
	createRoom(ctx, t, ns, newGameRoom("demo", withMap("town"), withMap("forest")))
	old := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": gamev1.GroupVersion.String(), "kind": "MapInstance",
		"metadata": map[string]any{"name": "old-forest", "namespace": ns},
		"spec": map[string]any{"roomName": "demo", "mapName": "forest", "image": "roomkeeper/roomserver:old",
			"keySecretName": "demo-token-keys", "config": map[string]any{"seed": int64(9), "width": int64(64), "height": int64(64)},
			"tickRate": int64(60), "snapshotRate": int64(20), "maxPlayersPerMap": int64(100)},
	}}
	g.Expect(k8s.Create(ctx, old)).To(Succeed())
	g.Expect(k8s.Get(ctx, key(ns, "old-forest"), old)).To(Succeed())
	g.Expect(old.Object["spec"]).To(Equal(map[string]any{"roomName": "demo", "mapName": "forest"}), "the copy is dropped")

	pod := &corev1.Pod{}
	g.Eventually(func() error { return k8s.Get(ctx, key(ns, "old-forest"), pod) }).Should(Succeed())
	g.Expect(pod.Spec.Containers[0].Image).To(Equal("roomkeeper/roomserver:dev"), "the room's image, not the copy's")
}

// TestAMapInstanceOfAMapTheRoomDoesNotHaveWaits: a MapInstance made by
// hand for a map its room lacks gets no pod and says why; adding the map
// to the room starts it.
func TestAMapInstanceOfAMapTheRoomDoesNotHaveWaits(t *testing.T) {
	ctx, ns := envtestNamespace(t)
	g := wait(t)
	createRoom(ctx, t, ns, newGameRoom("demo", withMap("town")))
	mi := &gamev1.MapInstance{Spec: gamev1.MapInstanceSpec{RoomName: "demo", MapName: "forest"}}
	mi.Name, mi.Namespace = "mine-forest", ns
	g.Expect(k8s.Create(ctx, mi)).To(Succeed())
	g.Eventually(readyCondition(ctx, ns, "mine-forest", mi)).Should(blockedBy(gamev1.ReasonRoomNotFound, "GameRoom demo has no map forest"))
	warningEvent(ctx, g, ns, "MapInstance", "mine-forest", gamev1.ReasonRoomNotFound, "no map forest")

	editRoom(ctx, g, ns, "demo", withMap("forest"))
	g.Eventually(controlledBy(ctx, ns, "mine-forest", &corev1.Pod{}, mi)).Should(BeTrue(), "its pod, once the room has the map")
}
