package controllers

import (
	"context"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	"sigs.k8s.io/controller-runtime/pkg/client"

	gamev1 "github.com/roomkeeper/roomkeeper/api/v1"
)

// withShards gives the room's map i shards lo..hi.
func withShards(i int, lo, hi int32) roomOption {
	return func(r *gamev1.GameRoom) { r.Spec.Maps[i].Shards = &gamev1.ShardRange{Min: lo, Max: hi} }
}

func withMaxPlayers(n int32) roomOption {
	return func(r *gamev1.GameRoom) { r.Spec.MaxPlayersPerMap = n }
}

// shardNames lists the names of the town's MapInstances of room demo in
// ns, not being deleted.
func shardNames(ctx context.Context, g Gomega, ns string) []string {
	var list gamev1.MapInstanceList
	g.Expect(k8s.List(ctx, &list, client.InNamespace(ns), client.MatchingLabels{gamev1.LabelRoom: "demo", gamev1.LabelMap: "town"})).To(Succeed())
	var names []string
	for _, mi := range list.Items {
		if mi.DeletionTimestamp.IsZero() {
			names = append(names, mi.Name)
		}
	}
	return names
}

// TestShardsGrowWhenNearlyFullAndShrinkWhenEmpty: a shared map with
// shards {min 1, max 3} and 5 seats a shard gets a second shard when 4
// seats are taken (a fifth of a shard's seats, at least one, left), a
// third when those fill, and never a fourth; status and the Shards
// column say so. An empty surplus shard goes after the room's
// idleTimeout, unless the shards left would be nearly full; a higher
// min keeps one.
func TestShardsGrowWhenNearlyFullAndShrinkWhenEmpty(t *testing.T) {
	ctx, ns := envtestNamespace(t)
	g := wait(t)
	createRoom(ctx, t, ns, newGameRoom("demo", withMap("town"), withShards(0, 1, 3), withMaxPlayers(5), withIdleTimeout(10*time.Minute)))
	g.Eventually(func(g Gomega) { g.Expect(shardNames(ctx, g, ns)).To(ConsistOf("demo-town")) }).Should(Succeed())
	markPodReady(ctx, g, ns, "demo-town", "127.0.0.61", true)
	setPlayers(ctx, g, ns, "demo-town", 3)
	g.Consistently(func(g Gomega) { g.Expect(shardNames(ctx, g, ns)).To(ConsistOf("demo-town")) }, time.Second).
		Should(Succeed(), "2 of 5 seats free: not nearly full")

	setPlayers(ctx, g, ns, "demo-town", 4)
	g.Eventually(func(g Gomega) { g.Expect(shardNames(ctx, g, ns)).To(ConsistOf("demo-town", "demo-town-s2")) }).Should(Succeed())
	second := &gamev1.MapInstance{}
	g.Expect(k8s.Get(ctx, key(ns, "demo-town-s2"), second)).To(Succeed())
	g.Expect(second.Labels).To(HaveKeyWithValue(gamev1.LabelShard, "2"))
	g.Expect(second.Spec).To(Equal(gamev1.MapInstanceSpec{RoomName: "demo", MapName: "town"}))
	e := roomEvent(ctx, g, ns, EventShardAdded)
	g.Expect(e.Note).To(ContainSubstring("demo-town-s2"))
	g.Expect(e.Related.Name).To(Equal("demo-town-s2"))

	markPodReady(ctx, g, ns, "demo-town-s2", "127.0.0.62", true)
	room := &gamev1.GameRoom{}
	g.Eventually(func(g Gomega) {
		g.Expect(k8s.Get(ctx, key(ns, "demo"), room)).To(Succeed())
		g.Expect(room.Status.ShardedMaps).To(ConsistOf(gamev1.MapShardsStatus{Map: "town", Shards: 2, Ready: 2, Min: 1, Max: 3, Players: 4, Seats: 10}))
		g.Expect(room.Status.Shards).To(Equal("town 2/3"))
		g.Expect(room.Status.Maps).To(ContainElement(gamev1.MapDirectoryEntry{Name: "town", Instance: "demo-town-s2",
			Phase: gamev1.MapReady, Endpoint: "ws://127.0.0.62:7350/ws", Shard: 2}))
	}).Should(Succeed())
	g.Expect(printedTable(ctx, t, ns, "gamerooms")).To(ContainElement([]string{"demo", "True", "2/2", "4", "null", "town 2/3", "Running"}))
	town := map[string]string{"namespace": ns, "gameroom": "demo", "map": "town"}
	for series, want := range map[[2]string]float64{
		{"roomkeeper_map_shards", "running"}: 2, {"roomkeeper_map_shards", "ready"}: 2, {"roomkeeper_map_shards", "max"}: 3,
		{"roomkeeper_map_seats", "taken"}: 4, {"roomkeeper_map_seats", "total"}: 10,
	} {
		labels := map[string]string{"state": series[1]}
		for k, v := range town {
			labels[k] = v
		}
		g.Eventually(func() float64 { v, _ := inventorySample(t, series[0], labels); return v }).Should(Equal(want), "%s{state=%q}", series[0], series[1])
	}

	// Both fill: a third, then no fourth at max.
	setPlayers(ctx, g, ns, "demo-town-s2", 5)
	g.Eventually(func(g Gomega) { g.Expect(shardNames(ctx, g, ns)).To(HaveLen(3)) }).Should(Succeed())
	markPodReady(ctx, g, ns, "demo-town-s3", "127.0.0.63", true)
	setPlayers(ctx, g, ns, "demo-town-s3", 5)
	setPlayers(ctx, g, ns, "demo-town", 5)
	g.Consistently(func(g Gomega) { g.Expect(shardNames(ctx, g, ns)).To(HaveLen(3)) }, time.Second).Should(Succeed(), "max 3 shards")

	// The surplus empties, the first stays full: the third goes after
	// idleTimeout, the second stays, or the map would be full.
	setPlayers(ctx, g, ns, "demo-town-s2", 0)
	setPlayers(ctx, g, ns, "demo-town-s3", 0)
	g.Eventually(func(g Gomega) {
		for _, name := range []string{"demo-town-s2", "demo-town-s3"} {
			mi := &gamev1.MapInstance{}
			g.Expect(k8s.Get(ctx, key(ns, name), mi)).To(Succeed())
			g.Expect(mi.Status.EmptySince).NotTo(BeNil(), "a surplus shard's idle clock runs")
		}
	}).Should(Succeed())
	g.Consistently(func(g Gomega) { g.Expect(shardNames(ctx, g, ns)).To(HaveLen(3)) }, time.Second).Should(Succeed(), "not idle long enough")
	testClock.Advance(11 * time.Minute)
	g.Eventually(func(g Gomega) { g.Expect(shardNames(ctx, g, ns)).To(ConsistOf("demo-town", "demo-town-s2")) }).Should(Succeed())
	g.Consistently(func(g Gomega) { g.Expect(shardNames(ctx, g, ns)).To(HaveLen(2)) }, time.Second).
		Should(Succeed(), "without the second the map would be full")

	// A min of 2 keeps the second shard, however long it is empty; back
	// at 1, it goes.
	editRoom(ctx, g, ns, "demo", withShards(0, 2, 3))
	setPlayers(ctx, g, ns, "demo-town", 1)
	testClock.Advance(11 * time.Minute)
	g.Consistently(func(g Gomega) { g.Expect(shardNames(ctx, g, ns)).To(HaveLen(2)) }, time.Second).Should(Succeed(), "min 2")
	editRoom(ctx, g, ns, "demo", withShards(0, 1, 3))
	g.Eventually(func(g Gomega) { g.Expect(shardNames(ctx, g, ns)).To(ConsistOf("demo-town")) }).Should(Succeed())
	g.Eventually(func(g Gomega) {
		g.Expect(k8s.Get(ctx, key(ns, "demo"), room)).To(Succeed())
		g.Expect(room.Status.ShardedMaps).To(ConsistOf(gamev1.MapShardsStatus{Map: "town", Shards: 1, Ready: 1, Min: 1, Max: 3, Players: 1, Seats: 5}))
		g.Expect(room.Status.Shards).To(Equal("town 1/3"))
	}).Should(Succeed())
}
