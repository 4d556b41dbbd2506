package controllers

import (
	"context"
	"errors"
	"testing"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/events"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	gamev1 "github.com/roomkeeper/roomkeeper/api/v1"
)

// Problems a person must fix (blocked.go): each shows as a condition with
// its reason and a Warning event, the reconcile ends with a terminal
// error, and the object recovers once the person has acted.

// readyCondition polls the Ready condition of obj (a GameRoom or
// MapInstance), nil while there is none.
func readyCondition(ctx context.Context, ns, name string, obj client.Object) func() *metav1.Condition {
	return func() *metav1.Condition {
		if k8s.Get(ctx, key(ns, name), obj) != nil {
			return nil
		}
		switch o := obj.(type) {
		case *gamev1.GameRoom:
			return meta.FindStatusCondition(o.Status.Conditions, gamev1.ConditionReady)
		case *gamev1.MapInstance:
			return meta.FindStatusCondition(o.Status.Conditions, gamev1.ConditionReady)
		}
		panic("no conditions on " + name)
	}
}

// blockedBy matches a condition False for reason with a message containing text.
func blockedBy(reason, text string) OmegaMatcher {
	return And(Not(BeNil()), HaveField("Status", metav1.ConditionFalse), HaveField("Reason", reason), HaveField("Message", ContainSubstring(text)))
}

// warningEvent waits for a Warning event with reason on kind/name.
func warningEvent(ctx context.Context, g Gomega, ns, kind, name, reason, text string) {
	g.Eventually(func() []eventsv1.Event { // the recorder writes events asynchronously
		var list eventsv1.EventList
		_ = k8s.List(ctx, &list, client.InNamespace(ns))
		return list.Items
	}).Should(ContainElement(And(HaveField("Type", corev1.EventTypeWarning), HaveField("Reason", reason),
		HaveField("Regarding.Kind", kind), HaveField("Regarding.Name", name), HaveField("Note", ContainSubstring(text)))),
		"a Warning %s event on %s %s", reason, kind, name)
}

// reconcilesTerminally runs a reconciler of the test's own (the manager's
// runs too) on ns/name and expects a terminal error: controller-runtime
// does not retry it.
func reconcilesTerminally(ctx context.Context, g Gomega, r reconcile.Reconciler, ns, name string) {
	g.Eventually(func() error { // a status write racing the manager's conflicts, and is retried
		_, err := r.Reconcile(ctx, ctrl.Request{NamespacedName: key(ns, name)})
		return err
	}).Should(Satisfy(func(err error) bool { return errors.Is(err, reconcile.TerminalError(nil)) }), "a terminal error")
}

func testRoomReconciler() *GameRoomReconciler {
	return &GameRoomReconciler{Client: k8s, APIReader: k8s, Recorder: &events.FakeRecorder{}, Clock: testClock}
}

func testMapReconciler() *MapInstanceReconciler {
	return &MapInstanceReconciler{Client: k8s, APIReader: k8s, Recorder: &events.FakeRecorder{}, Clock: testClock}
}

// nudge changes obj's annotations, which wakes its controller.
func nudge(ctx context.Context, g Gomega, ns, name string, obj client.Object) {
	touch(ctx, g, ns, name, obj)
}

// controlledBy polls whether ns/name (read into obj) is controlled by
// owner, read afresh each time.
func controlledBy(ctx context.Context, ns, name string, obj, owner client.Object) func() bool {
	return func() bool {
		return k8s.Get(ctx, client.ObjectKeyFromObject(owner), owner) == nil && k8s.Get(ctx, key(ns, name), obj) == nil &&
			metav1.IsControlledBy(obj, owner)
	}
}

// TestForeignRoomObjectsAreNameConflicts: a key Secret left behind by an
// earlier room (labelled as the operator's, owned by nothing) and a
// RoleBinding of someone else's hold names the room needs. Each in turn
// stops the room with Ready=False NameConflict and a Warning event; once
// the Secret is deleted the room goes on by itself, and once the
// RoleBinding (which the manager's cache does not see) is deleted, an
// annotation on the room wakes it.
func TestForeignRoomObjectsAreNameConflicts(t *testing.T) {
	ctx, ns := envtestNamespace(t)
	g := wait(t)
	orphan := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "demo-token-keys", Namespace: ns, Labels: roomLabels("demo")}}
	g.Expect(k8s.Create(ctx, orphan)).To(Succeed())
	foreign := &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: RoomServerServiceAccount, Namespace: ns},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: "someone-elses"},
		Subjects: []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: "default", Namespace: ns}}}
	g.Expect(k8s.Create(ctx, foreign)).To(Succeed())
	createRoom(ctx, t, ns, newGameRoom("demo", withMap("town")))
	room := &gamev1.GameRoom{}

	g.Eventually(readyCondition(ctx, ns, "demo", room)).Should(blockedBy(gamev1.ReasonNameConflict, "Secret demo-token-keys"))
	g.Expect(room.Status.ObservedGeneration).To(Equal(room.Generation))
	warningEvent(ctx, g, ns, "GameRoom", "demo", EventNameConflict, "Secret demo-token-keys")
	reconcilesTerminally(ctx, g, testRoomReconciler(), ns, "demo")

	g.Expect(k8s.Delete(ctx, orphan)).To(Succeed())
	g.Eventually(controlledBy(ctx, ns, "demo-token-keys", &corev1.Secret{}, room)).Should(BeTrue(), "the room's own key Secret")
	g.Eventually(readyCondition(ctx, ns, "demo", room)).Should(blockedBy(gamev1.ReasonNameConflict, "RoleBinding roomkeeper-roomserver"))
	warningEvent(ctx, g, ns, "GameRoom", "demo", EventNameConflict, "RoleBinding roomkeeper-roomserver")
	reconcilesTerminally(ctx, g, testRoomReconciler(), ns, "demo")

	g.Expect(k8s.Delete(ctx, foreign)).To(Succeed())
	nudge(ctx, g, ns, "demo", &gamev1.GameRoom{})
	g.Eventually(func(g Gomega) {
		binding := &rbacv1.RoleBinding{}
		g.Expect(k8s.Get(ctx, key(ns, RoomServerServiceAccount), binding)).To(Succeed())
		g.Expect(binding.Labels).To(HaveKeyWithValue("app.kubernetes.io/managed-by", "roomkeeper"), "the operator's RoleBinding")
	}).Should(Succeed())
	g.Eventually(controlledBy(ctx, ns, "demo-town", &gamev1.MapInstance{}, room)).Should(BeTrue(), "the room's MapInstance")
	g.Eventually(readyCondition(ctx, ns, "demo", room)).Should(HaveField("Reason", gamev1.ReasonMapsNotReady))
}

// TestForeignMapInstanceIsANameConflict: a MapInstance named like one of
// the room's maps but owned by nothing waits for the room it names
// (RoomNotFound), then runs its map and stops the room; deleting it lets
// the room make its own. The old MapInstance's pod is then in the way of
// the new one's (NameConflict on the MapInstance) until it goes, as the
// garbage collector would remove it.
func TestForeignMapInstanceIsANameConflict(t *testing.T) {
	ctx, ns := envtestNamespace(t)
	g := wait(t)
	foreign := newMapInstance(newGameRoom("demo", withMap("town")), "town")
	foreign.Namespace, foreign.UID, foreign.Generation, foreign.OwnerReferences = ns, "", 0, nil
	g.Expect(k8s.Create(ctx, foreign)).To(Succeed())
	g.Eventually(readyCondition(ctx, ns, "demo-town", foreign)).Should(blockedBy(gamev1.ReasonRoomNotFound, "GameRoom demo does not exist"))
	g.Expect(k8s.Get(ctx, key(ns, "demo-town"), &corev1.Pod{})).To(Satisfy(apierrors.IsNotFound), "no pod without the room")
	createRoom(ctx, t, ns, newGameRoom("demo", withMap("town")))
	oldPod := &corev1.Pod{}
	g.Eventually(controlledBy(ctx, ns, "demo-town", oldPod, foreign)).Should(BeTrue(), "the foreign MapInstance's pod, once its room exists")
	room := &gamev1.GameRoom{}

	g.Eventually(readyCondition(ctx, ns, "demo", room)).Should(blockedBy(gamev1.ReasonNameConflict, "MapInstance demo-town"))
	warningEvent(ctx, g, ns, "GameRoom", "demo", EventNameConflict, "MapInstance demo-town")
	reconcilesTerminally(ctx, g, testRoomReconciler(), ns, "demo")

	g.Expect(k8s.Delete(ctx, foreign)).To(Succeed())
	mi := &gamev1.MapInstance{}
	g.Eventually(controlledBy(ctx, ns, "demo-town", mi, room)).Should(BeTrue(), "the room's own MapInstance")
	g.Expect(k8s.Delete(ctx, oldPod)).To(Succeed()) // what the garbage collector does in a cluster
	g.Eventually(controlledBy(ctx, ns, "demo-town", &corev1.Pod{}, mi)).Should(BeTrue(), "the new MapInstance's pod")
	g.Eventually(readyCondition(ctx, ns, "demo-town", mi)).Should(HaveField("Reason", gamev1.ReasonPodPending))
}

// TestForeignPodIsANameConflict: a pod of someone else's holds the name of
// a map's pod. The MapInstance says so (Ready and PodHealthy False,
// NameConflict), with a Warning event, and the room is Degraded; after the
// pod is deleted, an annotation on the MapInstance wakes it.
func TestForeignPodIsANameConflict(t *testing.T) {
	ctx, ns := envtestNamespace(t)
	g := wait(t)
	foreign := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "demo-town", Namespace: ns},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "web", Image: "nginx"}}}}
	g.Expect(k8s.Create(ctx, foreign)).To(Succeed())
	createRoom(ctx, t, ns, newGameRoom("demo", withMap("town")))
	mi := &gamev1.MapInstance{}

	g.Eventually(readyCondition(ctx, ns, "demo-town", mi)).Should(blockedBy(gamev1.ReasonNameConflict, "Pod demo-town"))
	g.Expect(meta.FindStatusCondition(mi.Status.Conditions, gamev1.ConditionPodHealthy)).To(blockedBy(gamev1.ReasonNameConflict, "no controller"))
	g.Expect(mi.Status.PodName).To(BeEmpty())
	warningEvent(ctx, g, ns, "MapInstance", "demo-town", EventNameConflict, "Pod demo-town")
	reconcilesTerminally(ctx, g, testMapReconciler(), ns, "demo-town")
	room := &gamev1.GameRoom{}
	g.Eventually(func() gamev1.GameRoomPhase { _ = k8s.Get(ctx, key(ns, "demo"), room); return room.Status.Phase }).
		Should(Equal(gamev1.GameRoomDegraded))

	g.Expect(k8s.Delete(ctx, foreign)).To(Succeed())
	nudge(ctx, g, ns, "demo-town", &gamev1.MapInstance{})
	g.Eventually(controlledBy(ctx, ns, "demo-town", &corev1.Pod{}, mi)).Should(BeTrue(), "the map's own pod")
	g.Eventually(readyCondition(ctx, ns, "demo-town", mi)).Should(HaveField("Reason", gamev1.ReasonPodPending))
}

// TestInvalidPodIsReported: requests above limits pass the CRD but the
// API server refuses the pod (422). The MapInstance says InvalidPodSpec
// with the API server's answer and a Warning event, the room is Degraded,
// and fixing the room's spec brings the pod.
func TestInvalidPodIsReported(t *testing.T) {
	ctx, ns := envtestNamespace(t)
	g := wait(t)
	room := newGameRoom("demo", withMap("town"))
	room.Spec.PodTemplate.Resources = corev1.ResourceRequirements{
		Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("2")},
		Limits:   corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1")},
	}
	createRoom(ctx, t, ns, room)
	mi := &gamev1.MapInstance{}

	g.Eventually(readyCondition(ctx, ns, "demo-town", mi)).Should(blockedBy(gamev1.ReasonInvalidPodSpec, "resources.requests"))
	g.Expect(meta.FindStatusCondition(mi.Status.Conditions, gamev1.ConditionPodHealthy)).To(blockedBy(gamev1.ReasonInvalidPodSpec, "cpu limit"))
	warningEvent(ctx, g, ns, "MapInstance", "demo-town", EventInvalidPodSpec, "resources.requests")
	reconcilesTerminally(ctx, g, testMapReconciler(), ns, "demo-town")
	g.Eventually(func(g Gomega) {
		g.Expect(k8s.Get(ctx, key(ns, "demo"), room)).To(Succeed())
		g.Expect(room.Status.Phase).To(Equal(gamev1.GameRoomDegraded))
		g.Expect(meta.FindStatusCondition(room.Status.Conditions, gamev1.ConditionDegraded)).To(HaveField("Message", ContainSubstring("demo-town")))
	}).Should(Succeed())

	editRoom(ctx, g, ns, "demo", func(room *gamev1.GameRoom) {
		room.Spec.PodTemplate.Resources.Requests = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("500m")}
	})
	g.Eventually(controlledBy(ctx, ns, "demo-town", &corev1.Pod{}, mi)).Should(BeTrue(), "the map's pod")
	g.Eventually(readyCondition(ctx, ns, "demo-town", mi)).Should(HaveField("Reason", gamev1.ReasonPodPending))
}
