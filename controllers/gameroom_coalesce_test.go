package controllers

import (
	"context"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	gamev1 "github.com/roomkeeper/roomkeeper/api/v1"
	"github.com/roomkeeper/roomkeeper/internal/heartbeat"
)

// delays records how long after each AddAfter the queue was asked to
// hand out an item.
type delays struct {
	workqueue.TypedRateLimitingInterface[reconcile.Request]
	asked []time.Duration
}

func (d *delays) AddAfter(_ reconcile.Request, after time.Duration) { d.asked = append(d.asked, after) }

// TestOnlyAHeartbeatsCountsWaitToWakeTheRoom: a MapInstance update that
// only its pod's heartbeat made (counts, tick, checkpoint, world) wakes
// its GameRoom after the counts' delay; a map's first or last player,
// and every change of the operator's, after roomCoalesce.
func TestOnlyAHeartbeatsCountsWaitToWakeTheRoom(t *testing.T) {
	room := newGameRoom("demo", withMap("town"))
	room.UID = "room-uid"
	base := newMapInstance(room, "town", withMapPhase(gamev1.MapReady, true), withPlayers(2))
	base.Status.ActivePlayers = ptr.To[int32](2)
	cases := map[string]struct {
		change func(*gamev1.MapInstance)
		want   time.Duration
	}{
		"players 2 to 3": {func(mi *gamev1.MapInstance) { mi.Status.Players, mi.Status.ActivePlayers = 3, ptr.To[int32](3) }, roomCountsCoalesce},
		"tick, checkpoint, world and heartbeat time": {func(mi *gamev1.MapInstance) {
			mi.Status.Tick = 900
			mi.Status.LastCheckpoint = &gamev1.Checkpoint{Revision: 4}
			mi.Status.World = &gamev1.WorldCheckpoint{Revision: 4}
			mi.Status.LastHeartbeat = ptr.To(testNow)
		}, roomCountsCoalesce},
		"waiting for the database": {func(mi *gamev1.MapInstance) { mi.Status.WaitingFor = "database" }, roomCountsCoalesce},
		"the last player out":      {func(mi *gamev1.MapInstance) { mi.Status.Players, mi.Status.ActivePlayers = 0, ptr.To[int32](0) }, roomCoalesce},
		"the last player idle":     {func(mi *gamev1.MapInstance) { mi.Status.ActivePlayers = ptr.To[int32](0) }, roomCoalesce},
		"phase":                    {func(mi *gamev1.MapInstance) { mi.Status.Phase = gamev1.MapBackoff }, roomCoalesce},
		"Ready condition": {func(mi *gamev1.MapInstance) {
			setCondition(&mi.Status.Conditions, gamev1.ConditionReady, metav1.ConditionFalse, "Test", "", 1, metav1.Now())
		}, roomCoalesce},
		"endpoint":   {func(mi *gamev1.MapInstance) { mi.Status.Endpoint = "ws://127.0.0.9:7000/ws" }, roomCoalesce},
		"spec":       {func(mi *gamev1.MapInstance) { mi.Generation++ }, roomCoalesce},
		"label":      {func(mi *gamev1.MapInstance) { mi.Labels = map[string]string{gamev1.LabelShard: "2"} }, roomCoalesce},
		"annotation": {func(mi *gamev1.MapInstance) { mi.Annotations = map[string]string{"x": "y"} }, roomCoalesce},
		"deletion":   {func(mi *gamev1.MapInstance) { mi.DeletionTimestamp = ptr.To(testNow) }, roomCoalesce},
	}
	unsharded := func(context.Context, *gamev1.MapInstance) bool { return false }
	wake := ownerAfter(roomCoalesce, roomCountsCoalesce, unsharded)
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			updated := base.DeepCopy()
			tc.change(updated)
			q := &delays{}
			wake.Update(context.Background(), event.UpdateEvent{ObjectOld: base, ObjectNew: updated}, q)
			if len(q.asked) != 1 || q.asked[0] != tc.want {
				t.Errorf("the room was asked for after %v, want [%v]", q.asked, tc.want)
			}
		})
	}
}

// TestTheCountsOfAMapWithShardsWakeTheRoomAtOnce: the room adds a shard
// by its players, so their counts do not wait; a room the cache does not
// hold counts as one with shards.
func TestTheCountsOfAMapWithShardsWakeTheRoomAtOnce(t *testing.T) {
	sharded := newGameRoom("sharded", withMap("town"), withMap("forest"), withShards(0, 1, 3))
	sharded.Namespace, sharded.UID = "ns", "room-uid"
	gone := newGameRoom("gone", withMap("town"))
	gone.Namespace, gone.UID = "ns", "gone-uid"
	wake := ownerAfter(roomCoalesce, roomCountsCoalesce, shardedMap(cacheHolding(t, sharded)))
	for _, tc := range []struct {
		mi   *gamev1.MapInstance
		want time.Duration
	}{
		{newMapInstance(sharded, "town", withPlayers(2)), roomCoalesce},
		{newMapInstance(sharded, "forest", withPlayers(2)), roomCountsCoalesce},
		{newMapInstance(gone, "town", withPlayers(2)), roomCoalesce},
	} {
		updated := tc.mi.DeepCopy()
		updated.Status.Players = 3
		q := &delays{}
		wake.Update(context.Background(), event.UpdateEvent{ObjectOld: tc.mi, ObjectNew: updated}, q)
		if len(q.asked) != 1 || q.asked[0] != tc.want {
			t.Errorf("%s: the room was asked for after %v, want [%v]", tc.mi.Name, q.asked, tc.want)
		}
	}
}

// TestAMapsPlayerCountsMakeOneRoomWrite: player counts that move with
// each heartbeat, players crossing in and out, are reported in the room's
// status together, in one write, the newest count.
func TestAMapsPlayerCountsMakeOneRoomWrite(t *testing.T) {
	ctx, ns := envtestNamespace(t)
	g := wait(t)
	// No cap on timed requeues: with the suite's, every room reconciles
	// every 200 ms whatever its maps do.
	restartManagerWith(t, func(o *Options) { o.MaxRequeue = 0 })
	createRoom(ctx, t, ns, newGameRoom("counts", withMap("town")))
	markPodReady(ctx, g, ns, "counts-town", "127.0.0.30", true)
	reporter, err := heartbeat.New(restConfig, ns, "counts-town", testClock.Now)
	g.Expect(err).NotTo(HaveOccurred())
	room := &gamev1.GameRoom{}
	players := func() int32 { _ = k8s.Get(ctx, key(ns, "counts"), room); return room.Status.Players }
	g.Expect(reporter.Apply(ctx, heartbeat.Report{Players: 1, ActivePlayers: 1})).To(Succeed())
	g.Eventually(players).Should(BeEquivalentTo(1))
	reconciled(ctx, g, ns, "counts", &gamev1.GameRoom{})

	before := calls.writesIn(ns)
	start := time.Now()
	for n := 2; n <= 6; n++ {
		g.Expect(reporter.Apply(ctx, heartbeat.Report{Players: n, ActivePlayers: n})).To(Succeed())
		time.Sleep(250 * time.Millisecond) // heartbeats spaced past roomCoalesce, each one a room write before
	}
	g.Eventually(players).Should(BeEquivalentTo(6))
	writes := minus(calls.writesIn(ns), before)["update GameRoom/status"]
	if elapsed := time.Since(start); elapsed < testRoomCountsDelay {
		g.Expect(writes).To(Equal(1), "five count changes in %v", elapsed)
	} else { // a slow API server spread the heartbeats over more than one delay
		g.Expect(writes).To(BeNumerically("<=", 2), "five count changes in %v", elapsed)
	}
}
