package controllers

import (
	"testing"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	gamev1 "github.com/roomkeeper/roomkeeper/api/v1"
)

// legacyPod is the pod an operator before the namespace-wide RBAC built:
// the same, running as the room's own ServiceAccount.
func legacyPod(t *testing.T, mi *gamev1.MapInstance, room *gamev1.GameRoom) *corev1.Pod {
	t.Helper()
	pod, err := BuildPod(mi, room, PodSettings{JoinAPIURL: testJoinAPIURL})
	if err != nil {
		t.Fatal(err)
	}
	pod.Spec.ServiceAccountName = legacyServiceAccount(mi.Spec.RoomName)
	delete(pod.Labels, labelPod) // not hashed, and an earlier operator did not set it
	delete(pod.Annotations, gamev1.AnnotationInputHash)
	if len(pod.Annotations) == 0 {
		pod.Annotations = nil
	}
	hash, err := inputHash(pod)
	if err != nil {
		t.Fatal(err)
	}
	if pod.Annotations == nil {
		pod.Annotations = map[string]string{}
	}
	pod.Annotations[gamev1.AnnotationInputHash] = hash
	return pod
}

// TestLegacyPodsAreNotOutdated: an operator upgrade keeps the map pods that
// run as their room's former ServiceAccount; a pod built from other inputs
// is still replaced.
func TestLegacyPodsAreNotOutdated(t *testing.T) {
	room := newGameRoom("demo", withMap("town"))
	mi := newMapInstance(room, "town")
	desired, err := BuildPod(mi, room, PodSettings{JoinAPIURL: testJoinAPIURL})
	if err != nil {
		t.Fatal(err)
	}
	if podOutdated(desired, desired) {
		t.Error("the desired pod is outdated")
	}
	if podOutdated(legacyPod(t, mi, room), desired) {
		t.Error("a pod that runs as the room's former ServiceAccount is outdated")
	}
	changed := room.DeepCopy()
	changed.Spec.Image = "roomkeeper/roomserver:v2"
	if !podOutdated(legacyPod(t, mi, changed), desired) {
		t.Error("a pod of an older image is not outdated")
	}
}

// TestLegacyRoomRBACIsRemoved: the per-room ServiceAccount, Role and
// RoleBinding of earlier operator versions are deleted once no pod of the
// room runs as them; the namespace's stay.
func TestLegacyRoomRBACIsRemoved(t *testing.T) {
	ctx, ns := envtestNamespace(t)
	g := wait(t)
	room := createRoom(ctx, t, ns, newGameRoom("demo", withMap("town")))
	g.Eventually(func() error { return k8s.Get(ctx, key(ns, "demo-town"), &corev1.Pod{}) }).Should(Succeed())

	legacy := legacyServiceAccount("demo")
	sa, role, binding := RoomServerRBAC(ns)
	for _, obj := range []client.Object{sa, role, binding} {
		obj.SetName(legacy)
		obj.SetResourceVersion("")
		obj.SetLabels(roomLabels("demo"))
		obj.SetOwnerReferences([]metav1.OwnerReference{*metav1.NewControllerRef(room, gamev1.GroupVersion.WithKind("GameRoom"))})
	}
	binding.RoleRef.Name = legacy
	for _, obj := range []client.Object{sa, role, binding} {
		g.Expect(k8s.Create(ctx, obj)).To(Succeed())
	}
	nudge(ctx, g, ns, "demo", &gamev1.GameRoom{})
	for _, obj := range []client.Object{&corev1.ServiceAccount{}, &rbacv1.Role{}, &rbacv1.RoleBinding{}} {
		g.Eventually(func() bool { return apierrors.IsNotFound(k8s.Get(ctx, key(ns, legacy), obj)) }).Should(BeTrue(),
			"the room's former %T is gone", obj)
		g.Expect(k8s.Get(ctx, key(ns, RoomServerServiceAccount), obj)).To(Succeed(), "the namespace's stays")
	}
}

// TestAnOlderRoleIsTrimmed: a namespace whose map-pod Role an older
// operator made with more rules than map pods use gets today's rules when
// a room is reconciled there.
func TestAnOlderRoleIsTrimmed(t *testing.T) {
	ctx, ns := envtestNamespace(t)
	g := wait(t)
	_, role, _ := RoomServerRBAC(ns)
	wide := role.DeepCopy()
	wide.Rules = append(wide.Rules, rbacv1.PolicyRule{APIGroups: []string{gamev1.GroupVersion.Group},
		Resources: []string{"gamerooms", "mapinstances"}, Verbs: []string{"get", "list", "watch"}})
	g.Expect(k8s.Create(ctx, wide)).To(Succeed())
	createRoom(ctx, t, ns, newGameRoom("demo", withMap("town")))
	g.Eventually(func(g Gomega) {
		live := &rbacv1.Role{}
		g.Expect(k8s.Get(ctx, key(ns, RoomServerServiceAccount), live)).To(Succeed())
		g.Expect(live.Rules).To(Equal(role.Rules))
	}).Should(Succeed())
}
