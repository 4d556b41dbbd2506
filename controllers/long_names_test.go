package controllers

import (
	"strings"
	"testing"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation"

	gamev1 "github.com/roomkeeper/roomkeeper/api/v1"
)

// TestPodKey: a pod's key is its name while that fits a label value and
// a Service name, else a shortened name of its own.
func TestPodKey(t *testing.T) {
	if got := podKey("demo-town-0123456789abcdef"); got != "demo-town-0123456789abcdef" {
		t.Errorf("podKey of a short name = %s, want the name", got)
	}
	long := strings.Repeat("r", 36) + "-" + strings.Repeat("m", 20) + "-0123456789abcdef"
	other := strings.TrimSuffix(long, "f") + "e"
	for _, name := range []string{long, other} {
		key := podKey(name)
		if errs := append(validation.IsValidLabelValue(key), validation.IsDNS1035Label(key)...); len(errs) > 0 {
			t.Errorf("podKey(%s) = %s: %v", name, key, errs)
		}
	}
	if podKey(long) == podKey(other) {
		t.Error("two successors of one map share a key")
	}
}

// TestALongNamedMapHandsOver: a room and map at their longest names (36
// and 20 characters) hand their map over like any other: the successor
// pod, named <room>-<map>-<16 hex>, is one the API server takes, and so
// is its own route's Service.
func TestALongNamedMapHandsOver(t *testing.T) {
	ctx, ns := envtestNamespace(t)
	g := wait(t)
	roomName, mapName := "r"+strings.Repeat("o", 35), "m"+strings.Repeat("a", 19)
	room := newGameRoom(roomName, withMap(mapName))
	room.Spec.DefaultMap = mapName
	createRoom(ctx, t, ns, room)
	name := gamev1.MapInstanceName(roomName, mapName)
	markPodReady(ctx, g, ns, name, "127.0.0.71", true)
	editRoom(ctx, g, ns, roomName, func(r *gamev1.GameRoom) { r.Spec.Image = "roomkeeper/roomserver:v2" })

	next := &corev1.Pod{}
	mi := &gamev1.MapInstance{}
	g.Eventually(func(g Gomega) {
		g.Expect(k8s.Get(ctx, key(ns, name), mi)).To(Succeed())
		g.Expect(mi.Status.Handover).NotTo(BeNil())
		g.Expect(k8s.Get(ctx, key(ns, mi.Status.Handover.To), next)).To(Succeed())
	}).Should(Succeed(), "the successor pod exists")
	g.Expect(len(next.Name)).To(BeNumerically(">", validation.DNS1035LabelMaxLength))
	g.Expect(next.Labels[labelPod]).To(Equal(podKey(next.Name)))

	object := exposureMeta(mi)
	object.Name = podKey(next.Name)
	g.Expect(k8s.Create(ctx, serviceFor(object, map[string]string{labelPod: podKey(next.Name)}))).To(Succeed(),
		"the successor's own Service behind a Gateway")
}
