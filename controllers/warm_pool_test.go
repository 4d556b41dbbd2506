package controllers

import (
	"context"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/api/meta"
	"sigs.k8s.io/controller-runtime/pkg/client"

	gamev1 "github.com/roomkeeper/roomkeeper/api/v1"
	"github.com/roomkeeper/roomkeeper/internal/instanced"
)

// warmOf lists the crypt's instances of room demo in ns: the unclaimed
// warm ones and all of them.
func warmOf(ctx context.Context, g Gomega, ns string) (warm, all []gamev1.MapInstance) {
	var list gamev1.MapInstanceList
	g.Expect(k8s.List(ctx, &list, client.InNamespace(ns), client.MatchingLabels{gamev1.LabelRoom: "demo", gamev1.LabelMap: "crypt"})).To(Succeed())
	for _, mi := range list.Items {
		if instanced.IsWarm(&mi) {
			warm = append(warm, mi)
		}
	}
	return warm, list.Items
}

// TestWarmPool: the operator keeps spec.maps[].warm instances of an
// instanced map started; the room's status and condition say how many are
// Ready; a claimed one leaves the pool, starts its idle clock and is
// replaced; a restarted operator finds its pool and starts no more; a
// smaller pool deletes what it no longer keeps.
func TestWarmPool(t *testing.T) {
	ctx, ns := envtestNamespace(t)
	g := wait(t)
	room := newGameRoom("demo", withMap("town"), withInstancedMap("crypt"), func(r *gamev1.GameRoom) { r.Spec.Maps[1].Warm = 2 })
	createRoom(ctx, t, ns, room)

	var warm []gamev1.MapInstance
	g.Eventually(func(g Gomega) {
		warm, _ = warmOf(ctx, g, ns)
		g.Expect(warm).To(HaveLen(2))
		g.Expect(k8s.Get(ctx, key(ns, "demo"), room)).To(Succeed())
		c := meta.FindStatusCondition(room.Status.Conditions, gamev1.ConditionWarmPoolsReady)
		g.Expect(c).NotTo(BeNil())
		g.Expect(c.Reason).To(Equal(gamev1.ReasonPoolExhausted), "no warm instance is Ready yet: parties start cold")
	}).Should(Succeed())
	markPodReady(ctx, g, ns, "demo-town", "127.0.0.49", true)
	for i, mi := range warm {
		g.Expect(mi.Spec.Instanced).To(BeTrue())
		markPodReady(ctx, g, ns, mi.Name, "127.0.0.5"+string(rune('0'+i)), true)
	}
	g.Eventually(func(g Gomega) {
		g.Expect(k8s.Get(ctx, key(ns, "demo"), room)).To(Succeed())
		g.Expect(room.Status.WarmPools).To(ConsistOf(gamev1.WarmPoolStatus{Map: "crypt", Warm: 2, Ready: 2}))
		g.Expect(room.Status.Warm).To(Equal("crypt 2/2"))
		g.Expect(meta.IsStatusConditionTrue(room.Status.Conditions, gamev1.ConditionWarmPoolsReady)).To(BeTrue())
	}).Should(Succeed())
	g.Expect(printedTable(ctx, t, ns, "gamerooms")).To(ContainElement([]string{"demo", "True", "3/3", "0", "crypt 2/2", "null", "Running"}))

	// A party claims one, as the join API does: the operator starts another.
	claimed := &warm[0]
	g.Eventually(func() error {
		if err := k8s.Get(ctx, client.ObjectKeyFromObject(claimed), claimed); err != nil {
			return err
		}
		instanced.Claim(claimed, "party-label", "creator", time.Now())
		return k8s.Update(ctx, claimed)
	}).Should(Succeed())
	g.Eventually(func(g Gomega) {
		warm, all := warmOf(ctx, g, ns)
		g.Expect(warm).To(HaveLen(2))
		g.Expect(all).To(HaveLen(3))
		g.Expect(warm).NotTo(ContainElement(HaveField("ObjectMeta.Name", claimed.Name)))
		g.Expect(k8s.Get(ctx, client.ObjectKeyFromObject(claimed), claimed)).To(Succeed())
		g.Expect(claimed.Status.EmptySince).NotTo(BeNil(), "a claimed instance's idle clock runs")
	}).Should(Succeed())

	restartManager(t)
	g.Consistently(func(g Gomega) {
		warm, all := warmOf(ctx, g, ns)
		g.Expect(warm).To(HaveLen(2))
		g.Expect(all).To(HaveLen(3))
	}).Should(Succeed(), "a restarted operator keeps the pool it finds")

	editRoom(ctx, g, ns, "demo", func(r *gamev1.GameRoom) { r.Spec.Maps[1].Warm = 0 })
	g.Eventually(func(g Gomega) {
		warm, all := warmOf(ctx, g, ns)
		g.Expect(warm).To(BeEmpty())
		g.Expect(all).To(ConsistOf(HaveField("ObjectMeta.Name", claimed.Name)), "the party's instance stays")
		g.Expect(k8s.Get(ctx, key(ns, "demo"), room)).To(Succeed())
		g.Expect(room.Status.WarmPools).To(BeEmpty())
		g.Expect(meta.FindStatusCondition(room.Status.Conditions, gamev1.ConditionWarmPoolsReady)).To(BeNil())
	}).Should(Succeed())
}
