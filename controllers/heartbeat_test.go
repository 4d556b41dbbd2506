package controllers

import (
	"testing"
	"time"

	. "github.com/onsi/gomega"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	gamev1 "github.com/roomkeeper/roomkeeper/api/v1"
	"github.com/roomkeeper/roomkeeper/internal/heartbeat"
)

// TestHeartbeatsAndTheOperatorShareTheStatus applies heartbeats the way a
// room server does (server-side apply, its own field manager) and checks
// the operator keeps its hands off those fields: no write loop, both
// managers in managedFields, and fresh heartbeats keep the pod alive.
func TestHeartbeatsAndTheOperatorShareTheStatus(t *testing.T) {
	ctx, ns := envtestNamespace(t)
	g := wait(t)
	createRoom(ctx, t, ns, newGameRoom("demo", withMap("town")))
	uid := currentPodUID(ctx, g, ns, "")
	startPod(ctx, g, ns, "127.0.0.3")

	reporter, err := heartbeat.New(restConfig, ns, "demo-town", testClock.Now)
	g.Expect(err).NotTo(HaveOccurred())
	checkpointAt := testClock.Now()
	g.Expect(reporter.Apply(ctx, heartbeat.Report{Players: 3, Tick: 100, CheckpointRevision: 5, CheckpointTime: checkpointAt})).To(Succeed())

	room := &gamev1.GameRoom{}
	g.Eventually(func() int32 { _ = k8s.Get(ctx, key(ns, "demo"), room); return room.Status.Players }).Should(BeEquivalentTo(3))
	mi := mapInstance(ctx, g, ns)
	g.Expect(mi.Status.Tick).To(BeEquivalentTo(100))
	g.Expect(mi.Status.LastCheckpoint).NotTo(BeNil())
	g.Expect(mi.Status.LastCheckpoint.Revision).To(BeEquivalentTo(5))
	g.Expect(mi.Status.LastHeartbeat).NotTo(BeNil())
	managers := map[string]bool{}
	for _, f := range mi.ManagedFields {
		managers[f.Manager] = true
	}
	g.Expect(managers).To(HaveKey(gamev1.FieldManagerRoomServer))
	g.Expect(managers).To(HaveKey(gamev1.FieldManagerOperator))

	// The next heartbeat is one write, and the operator answers with none.
	miWatch := watchObject(ctx, t, ns, &gamev1.MapInstanceList{}, mi)
	testClock.Advance(10 * time.Second)
	g.Expect(reporter.Apply(ctx, heartbeat.Report{Players: 4, Tick: 400})).To(Succeed())
	g.Eventually(func() int32 { _ = k8s.Get(ctx, key(ns, "demo"), room); return room.Status.Players }).Should(BeEquivalentTo(4))
	testClock.Advance(10 * time.Second) // 20 s since the pod started, 10 s since the heartbeat
	g.Consistently(func() *gamev1.Failure { return mapInstance(ctx, g, ns).Status.LastFailure }).Should(BeNil(),
		"a pod that keeps reporting is not failed")
	g.Expect(drain(miWatch)).To(Equal(1), "only the heartbeat wrote the MapInstance")
	pod := &corev1.Pod{}
	g.Expect(k8s.Get(ctx, key(ns, "demo-town"), pod)).To(Succeed())
	g.Expect(pod.UID).To(Equal(uid))
}

// TestAHeartbeatShowsTheWorldAndItsFailures: the world a pod reports is
// status.world, and WorldCheckpointed says whether its checkpoints are
// written: False with the pod's words while they fail, True once one is.
func TestAHeartbeatShowsTheWorldAndItsFailures(t *testing.T) {
	ctx, ns := envtestNamespace(t)
	g := wait(t)
	createRoom(ctx, t, ns, newGameRoom("demo", withMap("town")))
	startPod(ctx, g, ns, "127.0.0.3")
	reporter, err := heartbeat.New(restConfig, ns, "demo-town", testClock.Now)
	g.Expect(err).NotTo(HaveOccurred())

	world := &heartbeat.World{Revision: 7, Tick: 9000, Time: testClock.Now(), RoomsCleared: 2, BossPhase: 2, BossHP: 140,
		QuestPhases: []string{"keyRoomCleared"}}
	g.Expect(reporter.Apply(ctx, heartbeat.Report{Players: 1, World: world})).To(Succeed())
	g.Eventually(func() string { return conditionReason(mapInstance(ctx, g, ns), gamev1.ConditionWorldCheckpointed) }).
		Should(Equal(gamev1.ReasonWorldCheckpointed))
	got := mapInstance(ctx, g, ns).Status.World
	g.Expect(got).NotTo(BeNil())
	g.Expect([]int64{got.Revision, got.Tick, int64(got.RoomsCleared), int64(got.BossPhase), int64(got.BossHP)}).
		To(Equal([]int64{7, 9000, 2, 2, 140}))
	g.Expect(got.QuestPhases).To(Equal([]gamev1.QuestPhase{gamev1.QuestPhaseKeyRoomCleared}))

	world.Error = "store: save the world of demo-town: persistence unavailable"
	g.Expect(reporter.Apply(ctx, heartbeat.Report{Players: 1, World: world})).To(Succeed())
	g.Eventually(func() string { return conditionReason(mapInstance(ctx, g, ns), gamev1.ConditionWorldCheckpointed) }).
		Should(Equal(gamev1.ReasonWorldCheckpointFailing))
	c := meta.FindStatusCondition(mapInstance(ctx, g, ns).Status.Conditions, gamev1.ConditionWorldCheckpointed)
	g.Expect(c.Status).To(Equal(metav1.ConditionFalse))
	g.Expect(c.Message).To(ContainSubstring("persistence unavailable"))

	// What a heartbeat no longer says is gone from the status: the error
	// once a checkpoint is written, the quest phases and the boss once
	// the world has none, what the pod waited for once it waits no more.
	g.Expect(reporter.Apply(ctx, heartbeat.Report{Players: 1, WaitingFor: "Migrating the database: connection refused"})).To(Succeed())
	g.Expect(mapInstance(ctx, g, ns).Status.WaitingFor).NotTo(BeEmpty())
	g.Expect(reporter.Apply(ctx, heartbeat.Report{Players: 1, World: &heartbeat.World{Revision: 8, Tick: 9300, RoomsCleared: 2}})).To(Succeed())
	got = mapInstance(ctx, g, ns).Status.World
	g.Expect(*got).To(Equal(gamev1.WorldCheckpoint{Revision: 8, Tick: 9300, RoomsCleared: 2}))
	g.Expect(mapInstance(ctx, g, ns).Status.WaitingFor).To(BeEmpty())
	g.Eventually(func() string { return conditionReason(mapInstance(ctx, g, ns), gamev1.ConditionWorldCheckpointed) }).
		Should(Equal(gamev1.ReasonWorldCheckpointed))
}

// conditionReason is the reason of mi's condition of type t, "" when unset.
func conditionReason(mi *gamev1.MapInstance, t string) string {
	if c := meta.FindStatusCondition(mi.Status.Conditions, t); c != nil {
		return c.Reason
	}
	return ""
}

// TestAPodsLeaseKeepsItAlive: a pod makes its Lease at its first renewal
// (owned by the pod, the operator's label, the room's timeout); renewals
// keep a pod whose status heartbeats stopped alive (the room server
// renews it between two of them), a pod silent both ways is failed, and
// the Lease of that pod, still there (no garbage collector in envtest),
// keeps the next pod of the same name alive not a moment.
func TestAPodsLeaseKeepsItAlive(t *testing.T) {
	ctx, ns := envtestNamespace(t)
	g := wait(t)
	createRoom(ctx, t, ns, newGameRoom("demo", withMap("town")))
	uid := currentPodUID(ctx, g, ns, "")
	startPod(ctx, g, ns, "127.0.0.3")
	pod := heartbeat.Pod{Name: "demo-town", UID: uid}

	reporter, err := heartbeat.New(restConfig, ns, "demo-town", testClock.Now)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(reporter.Apply(ctx, heartbeat.Report{Players: 1, ActivePlayers: 1})).To(Succeed())
	// A renewal stamped 14 s on: once the operator has it, the status
	// heartbeat may be 20 s old.
	ahead, err := heartbeat.New(restConfig, ns, "demo-town", func() time.Time { return testClock.Now().Add(14 * time.Second) })
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(ahead.Renew(ctx, pod, gamev1.DefaultHeartbeatTimeout)).To(Succeed())
	lease := &coordinationv1.Lease{}
	g.Expect(k8s.Get(ctx, key(ns, "demo-town"), lease)).To(Succeed())
	g.Expect(lease.OwnerReferences).To(ConsistOf(HaveField("UID", uid)))
	g.Expect(lease.Labels).To(HaveKeyWithValue(labelManagedBy, managedBy))
	g.Expect(lease.Spec.HolderIdentity).To(HaveValue(Equal("demo-town")))
	g.Expect(lease.Spec.LeaseDurationSeconds).To(HaveValue(BeEquivalentTo(15)))
	noFailure := func() *gamev1.Failure { return mapInstance(ctx, g, ns).Status.LastFailure }
	g.Consistently(noFailure, time.Second).Should(BeNil())

	testClock.Advance(20 * time.Second)
	g.Consistently(noFailure, 2*time.Second).Should(BeNil(), "a pod whose Lease is renewed is alive")
	testClock.Advance(10 * time.Second) // 16 s since the renewal
	failedTimes := func(n int32) {
		g.Eventually(func(g Gomega) {
			mi := mapInstance(ctx, g, ns)
			g.Expect(mi.Status.RestartCount).To(Equal(n))
			g.Expect(mi.Status.LastFailure.Reason).To(Equal(FailureHeartbeatTimeout))
		}).Should(Succeed())
	}
	failedTimes(1)

	testClock.Advance(time.Minute) // past the backoff
	currentPodUID(ctx, g, ns, uid)
	startPod(ctx, g, ns, "127.0.0.3")
	testClock.Advance(gamev1.DefaultHeartbeatTimeout + time.Second)
	failedTimes(2)
}
