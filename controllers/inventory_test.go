package controllers

import (
	"testing"

	. "github.com/onsi/gomega"
	"github.com/prometheus/client_golang/prometheus"

	gamev1 "github.com/roomkeeper/roomkeeper/api/v1"
	"github.com/roomkeeper/roomkeeper/internal/heartbeat"
)

// inventorySample scrapes the inventory collector as Prometheus would and
// returns the value of the series name{labels}, and whether it exists.
func inventorySample(t *testing.T, name string, labels map[string]string) (float64, bool) {
	t.Helper()
	reg := prometheus.NewPedanticRegistry()
	if err := reg.Register(&clusterInventory); err != nil {
		t.Fatal(err)
	}
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range families {
		if mf.GetName() != name {
			continue
		}
	series:
		for _, m := range mf.GetMetric() {
			for _, lp := range m.GetLabel() {
				if want, ok := labels[lp.GetName()]; ok && want != lp.GetValue() {
					continue series
				}
			}
			return m.GetGauge().GetValue(), true
		}
	}
	return 0, false
}

// TestTheInventoryCountsRoomsMapsAndPlayers: the series a dashboard shows
// follow the cluster: every phase exported, a Ready map and a Running room
// counted, and a room's players as its heartbeats report them.
func TestTheInventoryCountsRoomsMapsAndPlayers(t *testing.T) {
	ctx, ns := envtestNamespace(t)
	g := wait(t)
	for _, phase := range mapInstancePhases {
		_, ok := inventorySample(t, "roomkeeper_mapinstances", map[string]string{"phase": string(phase)})
		g.Expect(ok).To(BeTrue(), "roomkeeper_mapinstances{phase=%q} is exported", phase)
	}
	for _, phase := range gameRoomPhases {
		_, ok := inventorySample(t, "roomkeeper_gamerooms", map[string]string{"phase": string(phase)})
		g.Expect(ok).To(BeTrue(), "roomkeeper_gamerooms{phase=%q} is exported", phase)
	}

	createRoom(ctx, t, ns, newGameRoom("demo", withMap("town")))
	currentPodUID(ctx, g, ns, "")
	startPod(ctx, g, ns, "127.0.0.3")
	reporter, err := heartbeat.New(restConfig, ns, "demo-town", testClock.Now)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(reporter.Apply(ctx, heartbeat.Report{Players: 3, Tick: 100})).To(Succeed())

	room := map[string]string{"namespace": ns, "gameroom": "demo"}
	g.Eventually(func() float64 { v, _ := inventorySample(t, "roomkeeper_players", room); return v }).Should(BeEquivalentTo(3))
	g.Eventually(func() float64 {
		v, _ := inventorySample(t, "roomkeeper_mapinstances", map[string]string{"phase": string(gamev1.MapReady)})
		return v
	}).Should(BeNumerically(">=", 1))
	g.Eventually(func() float64 {
		v, _ := inventorySample(t, "roomkeeper_gamerooms", map[string]string{"phase": string(gamev1.GameRoomRunning)})
		return v
	}).Should(BeNumerically(">=", 1))
}
