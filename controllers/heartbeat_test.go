package controllers

import (
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"

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
