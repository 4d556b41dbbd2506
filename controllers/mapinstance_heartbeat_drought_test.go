package controllers

import (
	"context"
	"fmt"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	gamev1 "github.com/roomkeeper/roomkeeper/api/v1"
	"github.com/roomkeeper/roomkeeper/internal/heartbeat"
)

func TestADroughtIsMostMapsLate(t *testing.T) {
	reporting := func(phase gamev1.MapInstancePhase, heartbeat time.Duration) gamev1.MapInstance {
		return gamev1.MapInstance{Status: gamev1.MapInstanceStatus{PodName: "p", Phase: phase, LastHeartbeat: at(heartbeat)}}
	}
	late, fresh := reporting(gamev1.MapReady, 0), reporting(gamev1.MapReady, 20*time.Second)
	now := t0.Add(25 * time.Second)
	// failedSilent was failed for a late heartbeat at 16 s, its last at 0.
	failedSilent := func(phase gamev1.MapInstancePhase, heartbeat time.Duration) gamev1.MapInstance {
		return gamev1.MapInstance{Status: gamev1.MapInstanceStatus{Phase: phase, LastHeartbeat: at(heartbeat),
			LastFailure: &gamev1.Failure{Reason: FailureHeartbeatTimeout, Time: *at(16 * time.Second)}}}
	}
	restarted := func(m gamev1.MapInstance) gamev1.MapInstance { m.Status.PodName = "p2"; return m }
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
		{"maps failed for a late heartbeat stay late until they report", []gamev1.MapInstance{late,
			failedSilent(gamev1.MapDraining, 0), failedSilent(gamev1.MapBackoff, 0), failedSilent(gamev1.MapPending, 0), fresh, fresh},
			heartbeatDrought{late: 4, reporting: 6}, true},
		{"a restarted one without a heartbeat of its own is late", []gamev1.MapInstance{late, late,
			restarted(failedSilent(gamev1.MapStarting, 0))},
			heartbeatDrought{late: 3, reporting: 3}, true},
		{"one that reported since counts by that heartbeat", []gamev1.MapInstance{late, late,
			restarted(failedSilent(gamev1.MapReady, 20*time.Second))},
			heartbeatDrought{late: 2, reporting: 3}, false},
		{"a failure older than two timeouts is forgotten (a new pod that never starts)", []gamev1.MapInstance{late, late,
			func() gamev1.MapInstance {
				m := failedSilent(gamev1.MapPending, 0)
				m.Status.LastFailure.Time = *at(-10 * time.Second)
				return m
			}()},
			heartbeatDrought{late: 2, reporting: 2}, false},
		{"quarantined or deleted maps are not awaited", []gamev1.MapInstance{late, late,
			failedSilent(gamev1.MapQuarantined, 0), failedSilent(gamev1.MapTerminating, 0)},
			heartbeatDrought{late: 2, reporting: 2}, false},
		{"other failures are not silence", []gamev1.MapInstance{late, late,
			{Status: gamev1.MapInstanceStatus{Phase: gamev1.MapBackoff, LastHeartbeat: at(0),
				LastFailure: &gamev1.Failure{Reason: FailurePodFailed, Time: *at(16 * time.Second)}}}},
			heartbeatDrought{late: 2, reporting: 2}, false},
	}
	for _, tc := range cases {
		got := measureDrought(tc.maps, statusHeard, gamev1.DefaultHeartbeatTimeout, now)
		if got != tc.want || got.holds() != tc.hold {
			t.Errorf("%s: %+v (holds %v), want %+v (holds %v)", tc.name, got, got.holds(), tc.want, tc.hold)
		}
	}
}

// TestHeartbeatsLateForMostMapsFailThemOneAtATime: when most maps' heartbeats
// stop at once (the API server, not the pods), the operator fails them one
// every droughtFailureInterval, telling why in an event, not all at once;
// the maps failed stay late until they report, so the drought holds to
// the last.
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

	// Each turn fails one more: the failed maps' new pods have not
	// reported, so the drought holds to the last.
	g.Eventually(func() int {
		testClock.Advance(droughtFailureInterval)
		return failed()
	}).Should(Equal(len(maps)))
}

// TestWavesOfLateHeartbeatsMakeOneDrought: pods starved in waves, each
// under half of the maps still reporting, are one drought, not a series
// of lone silences each failed at once: a map failed for a late
// heartbeat stays late until it reports (docs/benchmarks.md, "Twelfth
// session": 87 of 100 maps failed in two minutes before).
func TestWavesOfLateHeartbeatsMakeOneDrought(t *testing.T) {
	const maps, wave = 20, 6
	now := t0.Add(time.Minute)
	all := make([]gamev1.MapInstance, maps)
	for i := range all {
		all[i].Status = gamev1.MapInstanceStatus{PodName: "p", Phase: gamev1.MapReady, LastHeartbeat: at(55 * time.Second)}
	}
	failed := 0
	for w := 0; w*wave < maps; w++ {
		for i := w * wave; i < min((w+1)*wave, maps); i++ {
			all[i].Status.LastHeartbeat = at(0) // this wave's pods fall silent
		}
		d := measureDrought(all, statusHeard, gamev1.DefaultHeartbeatTimeout, now)
		if d.holds() {
			break
		}
		for i := range all { // no drought: each late map is failed at once
			st := &all[i].Status
			if st.PodName != "" && now.Sub(st.LastHeartbeat.Time) >= gamev1.DefaultHeartbeatTimeout {
				st.PodName, st.Phase = "", gamev1.MapBackoff
				st.LastFailure = &gamev1.Failure{Reason: FailureHeartbeatTimeout, Time: metav1.NewTime(now)}
				failed++
			}
		}
	}
	if failed > wave {
		t.Errorf("%d maps failed at once in waves of %d of %d, want only the first wave's", failed, wave, maps)
	}
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

// statusHeard is when a map's pod was last heard from by its status
// heartbeats alone (no Lease).
func statusHeard(mi *gamev1.MapInstance) time.Time { return lastHeard(&mi.Status, time.Time{}) }
