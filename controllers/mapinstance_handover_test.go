package controllers

import (
	"context"
	"fmt"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	gamev1 "github.com/roomkeeper/roomkeeper/api/v1"
	"github.com/roomkeeper/roomkeeper/internal/heartbeat"
)

// eventNotes lists the events on MapInstance name as "reason: note".
func eventNotes(ctx context.Context, g Gomega, ns, name string) []string {
	var list eventsv1.EventList
	g.Expect(k8s.List(ctx, &list, client.InNamespace(ns))).To(Succeed())
	var notes []string
	for _, e := range list.Items {
		if e.Regarding.Kind == "MapInstance" && e.Regarding.Name == name {
			notes = append(notes, e.Reason+": "+e.Note)
		}
	}
	return notes
}

// holdPod adds (or removes) a finalizer that keeps a deleted pod around.
func holdPod(ctx context.Context, g Gomega, ns, name string, hold bool) {
	g.Eventually(func() error {
		pod := &corev1.Pod{}
		if err := k8s.Get(ctx, key(ns, name), pod); err != nil {
			return err
		}
		pod.Finalizers = nil
		if hold {
			pod.Finalizers = []string{"test.roomkeeper.dev/hold"}
		}
		return k8s.Update(ctx, pod)
	}).Should(Succeed())
}

// changeImage sets the room's image, as a rollout would.
func changeImage(ctx context.Context, g Gomega, ns, image string) {
	editRoom(ctx, g, ns, "demo", func(room *gamev1.GameRoom) {
		room.Spec.Image = image
	})
}

// successorPod waits for the handover's new pod and returns it.
func successorPod(ctx context.Context, g Gomega, ns string) *corev1.Pod {
	pod := &corev1.Pod{}
	g.Eventually(func(g Gomega) {
		mi := mapInstance(ctx, g, ns)
		g.Expect(mi.Status.Handover).NotTo(BeNil())
		g.Expect(k8s.Get(ctx, key(ns, mi.Status.Handover.To), pod)).To(Succeed())
	}).Should(Succeed())
	return pod
}

// setPodStatus plays the kubelet for pod.
func setPodStatus(ctx context.Context, g Gomega, ns, name string, mutate func(*corev1.PodStatus)) {
	g.Eventually(func() error {
		pod := &corev1.Pod{}
		if err := k8s.Get(ctx, key(ns, name), pod); err != nil {
			return err
		}
		mutate(&pod.Status)
		return k8s.Status().Update(ctx, pod)
	}).Should(Succeed())
}

func runningReady(ip string) func(*corev1.PodStatus) {
	return func(s *corev1.PodStatus) {
		started := metav1.NewTime(testClock.Now())
		s.Phase, s.StartTime, s.PodIP = corev1.PodRunning, &started, ip
		s.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}
	}
}

// TestImageChangeHandsOverToANewPod: a Ready map whose image changes gets
// its new pod beside the old one; only once the new one is Ready does the
// status move to it (endpoint and handover target in one write) and the
// old pod go. No failure is counted.
func TestImageChangeHandsOverToANewPod(t *testing.T) {
	ctx, ns := envtestNamespace(t)
	g := wait(t)
	createRoom(ctx, t, ns, newGameRoom("demo", withMap("town")))
	old := currentPodUID(ctx, g, ns, "")
	startPod(ctx, g, ns, "127.0.0.9")

	changeImage(ctx, g, ns, "roomkeeper/roomserver:v2")
	next := successorPod(ctx, g, ns)
	g.Expect(next.Spec.Containers[0].Image).To(Equal("roomkeeper/roomserver:v2"))
	g.Expect(next.Name).NotTo(Equal("demo-town"))
	g.Consistently(func(g Gomega) {
		mi := mapInstance(ctx, g, ns)
		g.Expect(mi.Status.PodName).To(Equal("demo-town"), "the old pod serves until the new one is Ready")
		g.Expect(mi.Status.Endpoint).To(Equal("ws://127.0.0.9:7350/ws"))
		g.Expect(mi.Status.Handover.Endpoint).To(BeEmpty())
		pod := &corev1.Pod{}
		g.Expect(k8s.Get(ctx, key(ns, "demo-town"), pod)).To(Succeed())
		g.Expect(pod.UID).To(Equal(old))
		g.Expect(pod.DeletionTimestamp).To(BeNil())
	}).Should(Succeed())

	reporter, err := heartbeat.New(restConfig, ns, "demo-town", testClock.Now)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(handoverTarget(ctx, reporter, "demo-town")).To(BeEmpty(), "no target before the new pod is Ready")

	// A finalizer plays the kubelet's graceful stop: the old pod lingers
	// while it hands its players over.
	holdPod(ctx, g, ns, "demo-town", true)
	setPodStatus(ctx, g, ns, next.Name, runningReady("127.0.0.10"))
	g.Eventually(func() (string, error) {
		return handoverTarget(ctx, reporter, "demo-town")
	}).Should(Equal("ws://127.0.0.10:7350/ws"), "the old pod's heartbeat answer names where to hand over")
	g.Expect(handoverTarget(ctx, reporter, next.Name)).To(BeEmpty(), "the new pod hands nothing over")
	holdPod(ctx, g, ns, "demo-town", false)
	g.Eventually(func(g Gomega) {
		g.Expect(apierrors.IsNotFound(k8s.Get(ctx, key(ns, "demo-town"), &corev1.Pod{}))).To(BeTrue(), "the old pod stopped")
		mi := mapInstance(ctx, g, ns)
		g.Expect(mi.Status.PodName).To(Equal(next.Name))
		g.Expect(mi.Status.Endpoint).To(Equal("ws://127.0.0.10:7350/ws"))
		g.Expect(mi.Status.Phase).To(Equal(gamev1.MapReady))
		g.Expect(mi.Status.Handover).To(BeNil(), "cleared once the old pod is gone")
		g.Expect(mi.Status.RestartCount).To(BeZero(), "a handover is no failure")
	}).Should(Succeed())
	g.Eventually(func() []string { return eventNotes(ctx, g, ns, "demo-town") }).Should(And(
		ContainElement(HavePrefix(EventHandover+": Pod demo-town is outdated")),
		ContainElement(HavePrefix(EventHandover+": Pod "+next.Name+" is Ready"))))
}

// runningMap makes a room of one map, town, whose pod runs at ip.
func runningMap(t *testing.T, ip string) (context.Context, string, Gomega) {
	ctx, ns := envtestNamespace(t)
	g := wait(t)
	createRoom(ctx, t, ns, newGameRoom("demo", withMap("town")))
	currentPodUID(ctx, g, ns, "")
	startPod(ctx, g, ns, ip)
	return ctx, ns, g
}

// handoverTarget is where pod would hand its players over now.
func handoverTarget(ctx context.Context, reporter *heartbeat.Reporter, pod string) (string, error) {
	h, err := reporter.Handover(ctx, heartbeat.Report{Players: 1}, pod)
	return h.Endpoint, err
}

// TestADeletedPodHandsOver: a running pod deleted by someone else (kubectl
// delete pod, a drain), which lingers for its grace period, gets a pod
// beside it to hand its players over to, as an outdated one does; its
// deletion is no failure.
func TestADeletedPodHandsOver(t *testing.T) {
	ctx, ns, g := runningMap(t, "127.0.0.9")
	reporter, err := heartbeat.New(restConfig, ns, "demo-town", testClock.Now)
	g.Expect(err).NotTo(HaveOccurred())
	h, err := reporter.Handover(ctx, heartbeat.Report{Players: 1}, "demo-town")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(h).To(Equal(heartbeat.Handover{Possible: true}), "the running pod may hand over, and none is under way")

	holdPod(ctx, g, ns, "demo-town", true) // the kubelet's grace period
	g.Expect(k8s.Delete(ctx, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "demo-town"}})).To(Succeed())
	next := successorPod(ctx, g, ns)
	g.Expect(next.Name).NotTo(Equal("demo-town"))
	mi := mapInstance(ctx, g, ns)
	g.Expect(mi.Status.Phase).To(Equal(gamev1.MapReady), "the deleted pod serves until the new one is Ready")
	g.Expect(mi.Status.Endpoint).To(Equal("ws://127.0.0.9:7350/ws"))
	g.Expect(reporter.Handover(ctx, heartbeat.Report{Players: 1}, "demo-town")).To(Equal(heartbeat.Handover{Started: true, Possible: true}))
	// The old pod, told to stop, waits for the new one to be Ready.
	target := make(chan string, 1)
	go func() {
		h, err := reporter.AwaitHandover(ctx, func() heartbeat.Report { return heartbeat.Report{Players: 1} },
			"demo-town", time.Second, 50*time.Millisecond)
		target <- h.Endpoint + " " + h.MapEndpoint + fmt.Sprint(err)
	}()
	g.Consistently(target).ShouldNot(Receive(), "waiting while the new pod starts")
	setPodStatus(ctx, g, ns, next.Name, runningReady("127.0.0.10"))
	// A Direct map has no endpoint of its own, apart from its pods'.
	g.Eventually(target).Should(Receive(Equal("ws://127.0.0.10:7350/ws <nil>")))
	holdPod(ctx, g, ns, "demo-town", false)
	g.Eventually(func(g Gomega) {
		mi := mapInstance(ctx, g, ns)
		g.Expect(mi.Status.PodName).To(Equal(next.Name))
		g.Expect(mi.Status.Phase).To(Equal(gamev1.MapReady))
		g.Expect(mi.Status.Handover).To(BeNil())
		g.Expect(mi.Status.RestartCount).To(BeZero(), "a deletion handed over is no failure")
	}).Should(Succeed())
	g.Eventually(func() []string { return eventNotes(ctx, g, ns, "demo-town") }).Should(
		ContainElement(HavePrefix(EventHandover + ": Pod demo-town is being deleted: starting " + next.Name)))

	// The pod that took over is the map's pod: evicted in turn (as a node
	// drain does), it hands over to a third one.
	holdPod(ctx, g, ns, next.Name, true)
	g.Expect(k8s.SubResource("eviction").Create(ctx, next, &policyv1.Eviction{})).To(Succeed())
	third := successorPod(ctx, g, ns)
	g.Expect(third.Name).NotTo(BeElementOf("demo-town", next.Name))
	holdPod(ctx, g, ns, next.Name, false)
}

// TestADrainedSuccessorIsReplacedAtOnce: a drain evicts the pod that was
// to take a deleted pod's players over (with the manager that made it, in
// CI). The handover is abandoned and started again at once with a pod of
// another name, while the evicted one still stops: waiting for its name
// to be free could outlast the deleted pod's wait for its successor.
func TestADrainedSuccessorIsReplacedAtOnce(t *testing.T) {
	ctx, ns, g := runningMap(t, "127.0.0.9")
	holdPod(ctx, g, ns, "demo-town", true)
	g.Expect(k8s.Delete(ctx, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "demo-town"}})).To(Succeed())
	next := successorPod(ctx, g, ns)
	holdPod(ctx, g, ns, next.Name, true) // the kubelet's grace period for the evicted successor
	g.Expect(k8s.SubResource("eviction").Create(ctx, next, &policyv1.Eviction{})).To(Succeed())
	g.Eventually(func() []string { return eventNotes(ctx, g, ns, "demo-town") }).Should(
		ContainElement(HavePrefix(EventHandover + ": Handover to " + next.Name + " abandoned")))

	again := &corev1.Pod{}
	g.Eventually(func(g Gomega) {
		mi := mapInstance(ctx, g, ns)
		g.Expect(mi.Status.Handover).NotTo(BeNil())
		g.Expect(mi.Status.Handover.To).NotTo(Equal(next.Name), "a pod of another name, not the evicted one")
		g.Expect(k8s.Get(ctx, key(ns, mi.Status.Handover.To), again)).To(Succeed())
	}).Should(Succeed())
	evicted := &corev1.Pod{}
	g.Expect(k8s.Get(ctx, key(ns, next.Name), evicted)).To(Succeed(), "the evicted successor still stops meanwhile")
	g.Expect(evicted.DeletionTimestamp).NotTo(BeNil())

	setPodStatus(ctx, g, ns, again.Name, runningReady("127.0.0.10"))
	holdPod(ctx, g, ns, next.Name, false)
	holdPod(ctx, g, ns, "demo-town", false)
	g.Eventually(func(g Gomega) {
		mi := mapInstance(ctx, g, ns)
		g.Expect(mi.Status.PodName).To(Equal(again.Name))
		g.Expect(mi.Status.Handover).To(BeNil())
		g.Expect(mi.Status.RestartCount).To(BeZero(), "the deletion was handed over: no failure")
	}).Should(Succeed())
}

// TestADeletedPodGoneFirstLeavesItsSuccessor: when the deleted pod's grace
// period ends before the pod taking over is Ready, that pod is kept as the
// map's (the players resume on it), and no failure is counted.
func TestADeletedPodGoneFirstLeavesItsSuccessor(t *testing.T) {
	ctx, ns, g := runningMap(t, "127.0.0.9")
	holdPod(ctx, g, ns, "demo-town", true)
	g.Expect(k8s.Delete(ctx, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "demo-town"}})).To(Succeed())
	next := successorPod(ctx, g, ns)
	holdPod(ctx, g, ns, "demo-town", false)
	g.Eventually(func(g Gomega) {
		mi := mapInstance(ctx, g, ns)
		g.Expect(mi.Status.PodName).To(Equal(next.Name))
		g.Expect(mi.Status.Handover).To(BeNil())
		g.Expect(mi.Status.RestartCount).To(BeZero())
	}).Should(Succeed())
	pod := &corev1.Pod{}
	g.Expect(k8s.Get(ctx, key(ns, next.Name), pod)).To(Succeed())
	g.Expect(pod.UID).To(Equal(next.UID), "the pod that was to take over is kept")
	setPodStatus(ctx, g, ns, next.Name, runningReady("127.0.0.10"))
	g.Eventually(func() gamev1.MapInstancePhase { return mapInstance(ctx, g, ns).Status.Phase }).Should(Equal(gamev1.MapReady))
}

// TestAFailedHandoverRecreatesThePod: when the new pod fails before it is
// Ready, it is removed and the outdated pod is replaced the plain way.
func TestAFailedHandoverRecreatesThePod(t *testing.T) {
	ctx, ns := envtestNamespace(t)
	g := wait(t)
	createRoom(ctx, t, ns, newGameRoom("demo", withMap("town")))
	old := currentPodUID(ctx, g, ns, "")
	startPod(ctx, g, ns, "127.0.0.9")
	changeImage(ctx, g, ns, "roomkeeper/roomserver:broken")
	next := successorPod(ctx, g, ns)
	setPodStatus(ctx, g, ns, next.Name, func(s *corev1.PodStatus) { s.Phase = corev1.PodFailed })
	g.Eventually(func(g Gomega) {
		g.Expect(apierrors.IsNotFound(k8s.Get(ctx, key(ns, next.Name), &corev1.Pod{}))).To(BeTrue(), "the failed new pod is removed")
		pod := &corev1.Pod{}
		g.Expect(k8s.Get(ctx, key(ns, "demo-town"), pod)).To(Succeed())
		g.Expect(pod.UID).NotTo(Equal(old), "the outdated pod is recreated")
		g.Expect(pod.Spec.Containers[0].Image).To(Equal("roomkeeper/roomserver:broken"))
		g.Expect(mapInstance(ctx, g, ns).Status.Handover).To(BeNil())
	}).Should(Succeed())
	g.Eventually(func() []string { return eventNotes(ctx, g, ns, "demo-town") }).Should(
		ContainElement(HavePrefix(EventHandover + ": Handover to " + next.Name + " abandoned")))
}

// TestRecreateOptsOutOfHandover: podReplacement Recreate stops the old pod
// first, as before handovers existed.
func TestRecreateOptsOutOfHandover(t *testing.T) {
	ctx, ns := envtestNamespace(t)
	g := wait(t)
	createRoom(ctx, t, ns, newGameRoom("demo", withMap("town"), func(r *gamev1.GameRoom) {
		r.Spec.PodReplacement = gamev1.ReplaceByRecreate
	}))
	old := currentPodUID(ctx, g, ns, "")
	startPod(ctx, g, ns, "127.0.0.9")
	changeImage(ctx, g, ns, "roomkeeper/roomserver:v2")
	currentPodUID(ctx, g, ns, old)
	g.Expect(mapInstance(ctx, g, ns).Status.Handover).To(BeNil())
	pods := &corev1.PodList{}
	g.Expect(k8s.List(ctx, pods, client.InNamespace(ns))).To(Succeed())
	g.Expect(pods.Items).To(HaveLen(1), "no pod beside the old one")

	// Told to stop, its pod waits for no handover.
	startPod(ctx, g, ns, "127.0.0.9")
	reporter, err := heartbeat.New(restConfig, ns, "demo-town", testClock.Now)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(reporter.AwaitHandover(ctx, func() heartbeat.Report { return heartbeat.Report{} }, "demo-town", time.Hour, time.Hour)).To(BeZero())
	// Deleted, it is a failure as before handovers existed.
	holdPod(ctx, g, ns, "demo-town", true)
	g.Expect(k8s.Delete(ctx, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "demo-town"}})).To(Succeed())
	g.Eventually(func(g Gomega) {
		mi := mapInstance(ctx, g, ns)
		g.Expect(mi.Status.LastFailure).NotTo(BeNil())
		g.Expect(mi.Status.LastFailure.Reason).To(Equal(FailurePodDeleted))
		g.Expect(mi.Status.Handover).To(BeNil())
	}).Should(Succeed())
	holdPod(ctx, g, ns, "demo-town", false)
}

// TestAManagerRestartedMidRolloutConverges: an operator restarted in the
// middle of a rollout (its successor pod created, then again once the
// successor is Ready and the old pod is handing over) starts with nothing
// in memory and finishes the handover from the status alone: one
// successor, never a third pod, the map on the new pod, no failure.
func TestAManagerRestartedMidRolloutConverges(t *testing.T) {
	ctx, ns, g := runningMap(t, "127.0.0.9")
	// The map's pods report as a room server does: the restarts take long
	// enough under load that a silent successor would count as failed.
	reporter, err := heartbeat.New(restConfig, ns, "demo-town", testClock.Now)
	g.Expect(err).NotTo(HaveOccurred())
	beating, stop := context.WithCancel(ctx)
	defer stop()
	go reporter.Run(beating, heartbeat.DefaultInterval, func() heartbeat.Report { return heartbeat.Report{Players: 1} }, heartbeat.Pod{}, func(heartbeat.Handover) {}, func(error) {})
	changeImage(ctx, g, ns, "roomkeeper/roomserver:v3")
	next := successorPod(ctx, g, ns)
	restartManager(t) // the successor made, not Ready yet

	holdPod(ctx, g, ns, "demo-town", true) // the old pod hands over while it lingers
	setPodStatus(ctx, g, ns, next.Name, runningReady("127.0.0.10"))
	g.Eventually(func(g Gomega) {
		mi := mapInstance(ctx, g, ns)
		g.Expect(mi.Status.Handover).NotTo(BeNil())
		g.Expect(mi.Status.Handover.Endpoint).To(Equal("ws://127.0.0.10:7350/ws"))
	}).Should(Succeed())
	restartManager(t) // the status moved to the successor, the old pod still there
	holdPod(ctx, g, ns, "demo-town", false)

	g.Eventually(func(g Gomega) {
		var pods corev1.PodList
		g.Expect(k8s.List(ctx, &pods, client.InNamespace(ns))).To(Succeed())
		g.Expect(pods.Items).To(HaveLen(1), "only the successor is left")
		g.Expect(pods.Items[0].Name).To(Equal(next.Name))
		mi := mapInstance(ctx, g, ns)
		g.Expect(mi.Status.PodName).To(Equal(next.Name))
		g.Expect(mi.Status.Endpoint).To(Equal("ws://127.0.0.10:7350/ws"))
		g.Expect(mi.Status.Phase).To(Equal(gamev1.MapReady))
		g.Expect(mi.Status.Handover).To(BeNil())
		g.Expect(mi.Status.RestartCount).To(BeZero(), "a restart of the operator is no failure of the map")
	}).Should(Succeed())
	g.Consistently(func(g Gomega) {
		var pods corev1.PodList
		g.Expect(k8s.List(ctx, &pods, client.InNamespace(ns))).To(Succeed())
		g.Expect(pods.Items).To(HaveLen(1), "no pod made after the rollout settled")
	}).Should(Succeed())
}
