package controllers

import (
	"context"
	"fmt"
	"testing"
	"time"

	. "github.com/onsi/gomega"

	gamev1 "github.com/roomkeeper/roomkeeper/api/v1"
	"github.com/roomkeeper/roomkeeper/internal/heartbeat"
)

func TestADroughtIsMostMapsLate(t *testing.T) {
	reporting := func(phase gamev1.MapInstancePhase, heartbeat time.Duration) gamev1.MapInstance {
		return gamev1.MapInstance{Status: gamev1.MapInstanceStatus{PodName: "p", Phase: phase, LastHeartbeat: at(heartbeat)}}
	}
	late, fresh := reporting(gamev1.MapReady, 0), reporting(gamev1.MapReady, 20*time.Second)
	now := t0.Add(25 * time.Second)
	cases := []struct {
		name string
		maps []gamev1.MapInstance
		want heartbeatDrought
		hold bool
	}{
		{"a lone silent map", []gamev1.MapInstance{late}, heartbeatDrought{late: 1, reporting: 1}, false},
		{"two of two", []gamev1.MapInstance{late, late}, heartbeatDrought{late: 2, reporting: 2}, false},
		{"three of four", []gamev1.MapInstance{late, late, late, fresh}, heartbeatDrought{late: 3, reporting: 4}, true},
		{"three of six", []gamev1.MapInstance{late, late, late, fresh, fresh, fresh}, heartbeatDrought{late: 3, reporting: 6}, false},
		{"a starting pod counts", []gamev1.MapInstance{late, late, reporting(gamev1.MapStarting, 0)}, heartbeatDrought{late: 3, reporting: 3}, true},
		{"maps without a running pod or a heartbeat do not", []gamev1.MapInstance{late, late,
			reporting(gamev1.MapBackoff, 0), reporting(gamev1.MapPending, 0), {Status: gamev1.MapInstanceStatus{PodName: "p", Phase: gamev1.MapReady}},
			{Status: gamev1.MapInstanceStatus{Phase: gamev1.MapReady, LastHeartbeat: at(0)}}}, heartbeatDrought{late: 2, reporting: 2}, false},
	}
	for _, tc := range cases {
		got := measureDrought(tc.maps, gamev1.DefaultHeartbeatTimeout, now)
		if got != tc.want || got.holds() != tc.hold {
			t.Errorf("%s: %+v (holds %v), want %+v (holds %v)", tc.name, got, got.holds(), tc.want, tc.hold)
		}
	}
}

// TestHeartbeatsLateForMostMapsFailThemOneAtATime: when most maps' heartbeats
// stop at once (the API server, not the pods), the operator fails them one
// every droughtFailureInterval, telling why in an event, not all at once;
// once too few are late for a drought, the rest fail at once.
func TestHeartbeatsLateForMostMapsFailThemOneAtATime(t *testing.T) {
	ctx, ns := envtestNamespace(t)
	g := wait(t)
	maps := []string{"a", "b", "c", "d"}
	opts := []roomOption{}
	for _, m := range maps {
		opts = append(opts, withMap(m))
	}
	createRoom(ctx, t, ns, newGameRoom("demo", opts...))
	for i, m := range maps {
		runAndReport(ctx, g, ns, "demo-"+m, fmt.Sprintf("127.0.0.%d", 20+i))
	}
	failed := func() int {
		n := 0
		for _, m := range maps {
			mi := &gamev1.MapInstance{}
			g.Expect(k8s.Get(ctx, key(ns, "demo-"+m), mi)).To(Succeed())
			if mi.Status.LastFailure != nil {
				g.Expect(mi.Status.LastFailure.Reason).To(Equal(FailureHeartbeatTimeout))
				n++
			}
		}
		return n
	}

	testClock.Advance(gamev1.DefaultHeartbeatTimeout + time.Second) // every pod silent at once
	g.Eventually(failed).Should(Equal(1), "the first late map fails at once")
	g.Consistently(failed, 2*time.Second).Should(Equal(1), "the others wait their turn")
	held := eventOn(ctx, g, ns, "MapInstance", "", EventHeartbeatsLate)
	g.Expect(held.Note).To(MatchRegexp(`No heartbeat from pod demo-[a-d] for 15s, as from most maps`))

	// Each turn fails one more, until two are left: too few for a
	// drought, they fail together.
	g.Eventually(func() int {
		testClock.Advance(droughtFailureInterval)
		return failed()
	}).Should(Equal(len(maps)))
}

// runAndReport plays the kubelet starting the pod name now at ip, and its
// room server sending a first heartbeat, then waits for the map to be Ready.
func runAndReport(ctx context.Context, g Gomega, ns, name, ip string) {
	runPod(ctx, g, ns, name, ip)
	reporter, err := heartbeat.New(restConfig, ns, name, testClock.Now)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(reporter.Apply(ctx, heartbeat.Report{Players: 1, Tick: 1})).To(Succeed())
	g.Eventually(func() gamev1.MapInstancePhase {
		mi := &gamev1.MapInstance{}
		g.Expect(k8s.Get(ctx, key(ns, name), mi)).To(Succeed())
		return mi.Status.Phase
	}).Should(Equal(gamev1.MapReady))
}
