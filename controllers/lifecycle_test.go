package controllers

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	gamev1 "github.com/roomkeeper/roomkeeper/api/v1"
	"github.com/roomkeeper/roomkeeper/internal/token"
)

// crashPod plays the kubelet reporting that the room server exited.
func crashPod(ctx context.Context, g Gomega, ns string, uid types.UID) {
	g.Eventually(func() error {
		pod := &corev1.Pod{}
		if err := k8s.Get(ctx, key(ns, "demo-town"), pod); err != nil {
			return err
		}
		g.Expect(pod.UID).To(Equal(uid), "crash the pod we were shown")
		pod.Status.Phase = corev1.PodFailed
		pod.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: roomServerContainer,
			State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 2, Reason: "Error"}}}}
		return k8s.Status().Update(ctx, pod)
	}).Should(Succeed())
}

// currentPodUID waits for a pod other than previous and returns its UID.
func currentPodUID(ctx context.Context, g Gomega, ns string, previous types.UID) types.UID {
	var uid types.UID
	g.Eventually(func() bool {
		pod := &corev1.Pod{}
		if k8s.Get(ctx, key(ns, "demo-town"), pod) != nil || pod.DeletionTimestamp != nil {
			return false
		}
		uid = pod.UID
		return uid != previous
	}).Should(BeTrue(), "a new pod")
	return uid
}

// startPod plays the kubelet starting the map's pod now (by the test
// clock) at ip and its probe passing, and waits for the map to be Ready.
func startPod(ctx context.Context, g Gomega, ns, ip string) {
	runPod(ctx, g, ns, "demo-town", ip)
	g.Eventually(func() gamev1.MapInstancePhase { return mapInstance(ctx, g, ns).Status.Phase }).Should(Equal(gamev1.MapReady))
}

// runPod plays the kubelet starting pod name now (by the test clock) at
// ip, its probe passing.
func runPod(ctx context.Context, g Gomega, ns, name, ip string) {
	g.Eventually(func() error {
		pod := &corev1.Pod{}
		if err := k8s.Get(ctx, key(ns, name), pod); err != nil {
			return err
		}
		started := metav1.NewTime(testClock.Now())
		pod.Status.Phase, pod.Status.StartTime, pod.Status.PodIP = corev1.PodRunning, &started, ip
		pod.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}
		return k8s.Status().Update(ctx, pod)
	}).Should(Succeed())
}

// slowBackoff makes backoffs long enough that real time spent in the test
// never ends one: only the test clock's jumps do.
func slowBackoff(r *gamev1.GameRoom) {
	r.Spec.RestartPolicy.InitialBackoff = &metav1.Duration{Duration: 10 * time.Second}
	r.Spec.RestartPolicy.Window = &metav1.Duration{Duration: 2 * time.Minute}
}

func mapInstance(ctx context.Context, g Gomega, ns string) *gamev1.MapInstance {
	mi := &gamev1.MapInstance{}
	g.Expect(k8s.Get(ctx, key(ns, "demo-town"), mi)).To(Succeed())
	return mi
}

func noPod(ctx context.Context, ns string) bool {
	return apierrors.IsNotFound(k8s.Get(ctx, key(ns, "demo-town"), &corev1.Pod{}))
}

func TestCrashLoopBacksOffThenQuarantinesThenReleases(t *testing.T) {
	ctx, ns := envtestNamespace(t)
	g := wait(t)
	createRoom(ctx, t, ns, newGameRoom("demo", withMap("town"), slowBackoff))
	uid := currentPodUID(ctx, g, ns, "")

	// Backoffs of 10, 20 and 30 s (capped): the test clock jumps over them.
	for n, wantBackoff := range []time.Duration{10 * time.Second, 20 * time.Second, 30 * time.Second} {
		crashPod(ctx, g, ns, uid)
		var mi *gamev1.MapInstance
		g.Eventually(func(g Gomega) {
			mi = mapInstance(ctx, g, ns)
			g.Expect(mi.Status.RestartCount).To(BeEquivalentTo(n + 1))
			g.Expect(mi.Status.Phase).To(Equal(gamev1.MapBackoff))
		}).Should(Succeed())
		g.Expect(mi.Status.LastFailure.Reason).To(Equal(FailurePodFailed))
		g.Expect(*mi.Status.LastFailure.ExitCode).To(BeEquivalentTo(2))
		g.Expect(mi.Status.NextRestartAt.Sub(mi.Status.LastFailure.Time.Time)).To(Equal(wantBackoff))
		g.Expect(noPod(ctx, ns)).To(BeTrue(), "no pod during the backoff")
		testClock.Advance(wantBackoff)
		uid = currentPodUID(ctx, g, ns, uid)
	}

	crashPod(ctx, g, ns, uid) // the fourth failure inside the window
	g.Eventually(func(g Gomega) {
		mi := mapInstance(ctx, g, ns)
		g.Expect(mi.Status.Phase).To(Equal(gamev1.MapQuarantined))
		c := meta.FindStatusCondition(mi.Status.Conditions, gamev1.ConditionQuarantined)
		g.Expect(c).NotTo(BeNil())
		g.Expect(c.Status).To(Equal(metav1.ConditionTrue))
		g.Expect(c.Reason).To(Equal(gamev1.ReasonCrashLoop))
		g.Expect(mi.Status.QuarantinedUntil).NotTo(BeNil())
	}).Should(Succeed())
	room := &gamev1.GameRoom{}
	g.Eventually(func() gamev1.GameRoomPhase { _ = k8s.Get(ctx, key(ns, "demo"), room); return room.Status.Phase }).
		Should(Equal(gamev1.GameRoomDegraded))
	g.Eventually(func() float64 { v, _ := inventorySample(t, "roomkeeper_quarantined_maps", nil); return v }).Should(BeNumerically(">=", 1))
	testClock.Advance(30 * time.Second)
	g.Consistently(func() bool { return noPod(ctx, ns) }).Should(BeTrue(), "no pod while quarantined")

	testClock.Advance(31 * time.Second) // the quarantine (60 s) is over
	currentPodUID(ctx, g, ns, uid)
	g.Eventually(func(g Gomega) {
		mi := mapInstance(ctx, g, ns)
		g.Expect(meta.IsStatusConditionFalse(mi.Status.Conditions, gamev1.ConditionQuarantined)).To(BeTrue())
		g.Expect(mi.Status.RecentRestarts).To(BeEmpty(), "the window starts afresh")
		g.Expect(mi.Status.RestartCount).To(BeEquivalentTo(4))
	}).Should(Succeed())
}

func TestOperatorRestartResumesBackoffAndQuarantine(t *testing.T) {
	ctx, ns := envtestNamespace(t)
	g := wait(t)
	room := newGameRoom("demo", withMap("town"), slowBackoff)
	room.Spec.RestartPolicy.MaxRestarts = 1
	createRoom(ctx, t, ns, room)
	uid := currentPodUID(ctx, g, ns, "")

	crashPod(ctx, g, ns, uid)
	g.Eventually(func() gamev1.MapInstancePhase { return mapInstance(ctx, g, ns).Status.Phase }).Should(Equal(gamev1.MapBackoff))
	restartManager(t) // mid-backoff
	g.Consistently(func() bool { return noPod(ctx, ns) }).Should(BeTrue(), "the new operator keeps the backoff")
	testClock.Advance(10 * time.Second)
	uid = currentPodUID(ctx, g, ns, uid)

	crashPod(ctx, g, ns, uid) // second failure inside the window with maxRestarts 1: quarantine
	g.Eventually(func() gamev1.MapInstancePhase { return mapInstance(ctx, g, ns).Status.Phase }).Should(Equal(gamev1.MapQuarantined))
	restartManager(t) // mid-quarantine
	g.Consistently(func() bool { return noPod(ctx, ns) }).Should(BeTrue(), "the new operator keeps the quarantine")
	testClock.Advance(61 * time.Second)
	currentPodUID(ctx, g, ns, uid)
}

// TestPodDeletedBySomeoneElseIsAFailure, for a map that opts out of
// handovers (with one, a running pod's deletion is handed over instead:
// mapinstance_handover_test.go).
func TestPodDeletedBySomeoneElseIsAFailure(t *testing.T) {
	ctx, ns := envtestNamespace(t)
	g := wait(t)
	createRoom(ctx, t, ns, newGameRoom("demo", withMap("town"), func(r *gamev1.GameRoom) {
		r.Spec.PodReplacement = gamev1.ReplaceByRecreate
	}))
	// The first pod, still pending: no status names it yet (nothing to
	// report), and its deletion is a failure all the same.
	first := currentPodUID(ctx, g, ns, "")
	g.Expect(mapInstance(ctx, g, ns).Status.PodName).To(BeEmpty())
	g.Expect(k8s.Delete(ctx, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "demo-town"}})).To(Succeed())
	g.Eventually(func(g Gomega) {
		mi := mapInstance(ctx, g, ns)
		g.Expect(mi.Status.RestartCount).To(BeEquivalentTo(1))
		g.Expect(mi.Status.LastFailure).NotTo(BeNil())
		g.Expect(mi.Status.LastFailure.Reason).To(Equal(FailurePodDeleted))
	}).Should(Succeed())

	// A running pod, named in the status.
	uid := currentPodUID(ctx, g, ns, first)
	startPod(ctx, g, ns, "127.0.0.9")
	g.Expect(mapInstance(ctx, g, ns).Status.PodName).To(Equal("demo-town"))
	g.Expect(k8s.Delete(ctx, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "demo-town", UID: uid}})).To(Succeed())
	g.Eventually(func(g Gomega) {
		mi := mapInstance(ctx, g, ns)
		g.Expect(mi.Status.RestartCount).To(BeEquivalentTo(2))
		g.Expect(mi.Status.LastFailure.Reason).To(Equal(FailurePodDeleted))
	}).Should(Succeed())
}

func TestMissedHeartbeatsAreAFailure(t *testing.T) {
	ctx, ns := envtestNamespace(t)
	g := wait(t)
	createRoom(ctx, t, ns, newGameRoom("demo", withMap("town")))
	uid := currentPodUID(ctx, g, ns, "")
	startPod(ctx, g, ns, "127.0.0.9")

	testClock.Advance(gamev1.DefaultHeartbeatTimeout + time.Second) // the pod never reported
	g.Eventually(func(g Gomega) {
		mi := mapInstance(ctx, g, ns)
		g.Expect(mi.Status.LastFailure).NotTo(BeNil())
		g.Expect(mi.Status.LastFailure.Reason).To(Equal(FailureHeartbeatTimeout))
	}).Should(Succeed())
	g.Eventually(func() bool {
		pod := &corev1.Pod{}
		return k8s.Get(ctx, key(ns, "demo-town"), pod) != nil || pod.UID != uid
	}).Should(BeTrue(), "the silent pod is removed")
}

// TestTheRoomSetsItsHeartbeatTimeout: restartPolicy.heartbeatTimeout
// replaces the 15s default: a pod silent for 16s of a 40s timeout is
// left alone, and one silent past 40s is a failure that says 40s.
func TestTheRoomSetsItsHeartbeatTimeout(t *testing.T) {
	ctx, ns := envtestNamespace(t)
	g := wait(t)
	room := newGameRoom("demo", withMap("town"))
	room.Spec.RestartPolicy.HeartbeatTimeout = &metav1.Duration{Duration: 40 * time.Second}
	createRoom(ctx, t, ns, room)
	currentPodUID(ctx, g, ns, "")
	startPod(ctx, g, ns, "127.0.0.9")

	testClock.Advance(gamev1.DefaultHeartbeatTimeout + time.Second)
	testClock.Advance(25 * time.Second) // 41s without a heartbeat
	g.Eventually(func(g Gomega) {
		mi := mapInstance(ctx, g, ns)
		g.Expect(mi.Status.LastFailure).NotTo(BeNil())
		g.Expect(mi.Status.LastFailure.Reason).To(Equal(FailureHeartbeatTimeout))
		g.Expect(mi.Status.LastFailure.Message).To(HaveSuffix("for 40s"), "the room's timeout, not the default")
	}).Should(Succeed())
}

func TestKeysRotateAndKeepThePreviousKey(t *testing.T) {
	ctx, ns := envtestNamespace(t)
	g := wait(t)
	createRoom(ctx, t, ns, newGameRoom("demo", withMap("town")))
	keysOf := func() token.KeySet {
		secret := &corev1.Secret{}
		g.Expect(k8s.Get(ctx, key(ns, "demo-token-keys"), secret)).To(Succeed())
		ks, err := token.KeySetFromData(secret.Data)
		g.Expect(err).NotTo(HaveOccurred())
		return ks
	}
	var first token.KeySet
	g.Eventually(func() error {
		secret := &corev1.Secret{}
		return k8s.Get(ctx, key(ns, "demo-token-keys"), secret)
	}).Should(Succeed())
	first = keysOf()

	testClock.Advance(24*time.Hour + time.Second)
	g.Eventually(func() string { return keysOf().Current.ID }).ShouldNot(Equal(first.Current.ID))
	second := keysOf()
	g.Expect(second.Previous).NotTo(BeNil())
	g.Expect(second.Previous.ID).To(Equal(first.Current.ID), "the old current key is kept as previous")

	// A ticket signed just before the rotation still verifies after it.
	ticket, _, err := token.NewSigner(token.StaticKeys(first), time.Now).Sign(token.Claims{Type: token.TypeJoin,
		Subject: "u", Character: "c", Room: "demo", Map: "demo-town"}, 10*time.Second)
	g.Expect(err).NotTo(HaveOccurred())
	_, err = token.NewVerifier(token.StaticKeys(second), time.Now).Verify(ticket, token.Expect{Room: "demo", Map: "demo-town"})
	g.Expect(err).NotTo(HaveOccurred())
}

// TestAFailureRacedByAStatusChangeIsNotAnError: a pod's failure found on
// a copy of the MapInstance older than the API server's (a heartbeat
// came meanwhile) loses its write to a conflict. That is no error: an
// error would back the map off longer with each conflict, and on a busy
// API server a kill would be counted minutes late. Nothing is recorded
// and the pod is left alone; the reconcile comes back to record it
// (TestAReconcileThatLostAStatusRaceComesBack).
func TestAFailureRacedByAStatusChangeIsNotAnError(t *testing.T) {
	ctx, ns := envtestNamespace(t)
	g := wait(t)
	createRoom(ctx, t, ns, newGameRoom("demo", withMap("town")))
	currentPodUID(ctx, g, ns, "")
	startPod(ctx, g, ns, "127.0.0.9")
	stale := mapInstance(ctx, g, ns)
	touch(ctx, g, ns, "demo-town", &gamev1.MapInstance{}) // the server's copy moves on

	pod := &corev1.Pod{}
	g.Expect(k8s.Get(ctx, key(ns, "demo-town"), pod)).To(Succeed())
	pod.Status.Phase = corev1.PodFailed // as the reconcile would see it; the server's pod runs on
	mi := stale.DeepCopy()
	_, held, err := testMapReconciler().detectFailure(ctx, stale, mi, &gamev1.RestartPolicy{}, pod, time.Time{}, testClock.Now())
	g.Expect(apierrors.IsConflict(err)).To(BeTrue(), "a lost race, which the reconcile ends without an error: %v", err)
	g.Expect(held).To(BeFalse())
	g.Expect(mi.Status).To(Equal(stale.Status), "nothing left for the reconcile's own status write")
	g.Expect(k8s.Get(ctx, key(ns, "demo-town"), &corev1.Pod{})).To(Succeed(), "the pod is not deleted")
	g.Expect(mapInstance(ctx, g, ns).Status.RestartCount).To(BeZero())
}

// TestAReconcileThatLostAStatusRaceComesBack: a reconcile working from a
// cache that is behind (the status changed meanwhile: status changes do
// not wake the controller) loses its status write to a conflict. It ends
// without an error and asks to come back in a moment, and that reconcile
// reads the map from the API server: a cache that stays behind (a watch
// lagging more than a heartbeat's interval) must not lose every write.
func TestAReconcileThatLostAStatusRaceComesBack(t *testing.T) {
	ctx, ns := envtestNamespace(t)
	g := wait(t)
	createRoom(ctx, t, ns, newGameRoom("demo", withMap("town")))
	currentPodUID(ctx, g, ns, "")
	behind := mapInstance(ctx, g, ns) // before the pod runs: the status is empty
	startPod(ctx, g, ns, "127.0.0.9")

	direct, err := client.NewWithWatch(restConfig, client.Options{Scheme: testScheme})
	g.Expect(err).NotTo(HaveOccurred())
	r := testMapReconciler()
	var cacheReads atomic.Int32
	r.Client = interceptor.NewClient(direct, interceptor.Funcs{
		Get: func(ctx context.Context, c client.WithWatch, k client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
			if mi, ok := obj.(*gamev1.MapInstance); ok && k == key(ns, "demo-town") {
				cacheReads.Add(1)
				behind.DeepCopyInto(mi) // for good
				return nil
			}
			return c.Get(ctx, k, obj, opts...)
		},
	})
	req := ctrl.Request{NamespacedName: key(ns, "demo-town")}

	res, err := r.Reconcile(ctx, req)
	g.Expect(err).NotTo(HaveOccurred(), "a lost race is no error")
	g.Expect(res.RequeueAfter).To(Equal(conflictRetry), "and nothing else would bring the map back")

	_, err = r.Reconcile(ctx, req)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(cacheReads.Load()).To(Equal(int32(1)), "the second reconcile read the API server's copy")
	g.Expect(mapInstance(ctx, g, ns).Status.Phase).To(Equal(gamev1.MapReady))

	_, err = r.Reconcile(ctx, req)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(cacheReads.Load()).To(Equal(int32(2)), "once written, the map is read from the cache again")
}
