package controllers

import (
	"context"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	"github.com/prometheus/client_golang/prometheus/testutil"
	eventsv1 "k8s.io/api/events/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"sigs.k8s.io/controller-runtime/pkg/client"

	gamev1 "github.com/roomkeeper/roomkeeper/api/v1"
	"github.com/roomkeeper/roomkeeper/internal/heartbeat"
)

// partyServer is an instanced map's MapInstance as the join API creates it
// for one party, with its pod running and a room server's heartbeats.
type partyServer struct {
	ns, name string
	beats    *heartbeat.Reporter
}

// startParty creates the MapInstance of map mapName for a party, plays the
// kubelet running its pod (Ready, no start time, so the heartbeat timeout
// never runs however far the test moves the clock) and waits for it to be
// Ready.
func startParty(ctx context.Context, t *testing.T, g Gomega, room *gamev1.GameRoom, mapName, party, ip string) *partyServer {
	t.Helper()
	var mi *gamev1.MapInstance
	for _, m := range room.Spec.Maps {
		if m.Name == mapName {
			mi = buildShard(room, m, 1)
		}
	}
	g.Expect(mi).NotTo(BeNil(), "no map %s", mapName)
	mi.Name = room.Name + "-" + mapName + "-" + party
	mi.Labels = mapLabels(room.Name, mapName, mi.Name)
	g.Expect(k8s.Create(ctx, mi)).To(Succeed())
	markPodReady(ctx, g, room.Namespace, mi.Name, ip, true)
	beats, err := heartbeat.New(restConfig, room.Namespace, mi.Name, testClock.Now)
	g.Expect(err).NotTo(HaveOccurred())
	s := &partyServer{ns: room.Namespace, name: mi.Name, beats: beats}
	g.Eventually(func() gamev1.MapInstancePhase { return s.get(ctx, g).Status.Phase }).Should(Equal(gamev1.MapReady))
	return s
}

// report sends the room server's heartbeat with this many players, all
// playing.
func (s *partyServer) report(ctx context.Context, g Gomega, players int) {
	g.Expect(s.beats.Apply(ctx, heartbeat.Report{Players: players, ActivePlayers: players})).To(Succeed())
}

func (s *partyServer) get(ctx context.Context, g Gomega) *gamev1.MapInstance {
	mi := &gamev1.MapInstance{}
	g.Expect(k8s.Get(ctx, key(s.ns, s.name), mi)).To(Succeed())
	return mi
}

func (s *partyServer) emptySince(ctx context.Context, g Gomega) func() *metav1.Time {
	return func() *metav1.Time { return s.get(ctx, g).Status.EmptySince }
}

func exists(ctx context.Context, ns, name string, obj client.Object) func() bool {
	return func() bool { return !apierrors.IsNotFound(k8s.Get(ctx, key(ns, name), obj)) }
}

// townHeartbeats reports for the room's non-instanced map demo-town.
func townHeartbeats(g Gomega, ns string) *heartbeat.Reporter {
	r, err := heartbeat.New(restConfig, ns, "demo-town", testClock.Now)
	g.Expect(err).NotTo(HaveOccurred())
	return r
}

// roomEvent returns the first event with reason on GameRoom demo, once there is one.
func roomEvent(ctx context.Context, g Gomega, ns, reason string) *eventsv1.Event {
	return eventOn(ctx, g, ns, "GameRoom", "demo", reason)
}

// eventOn returns the first event with reason on the object kind/name,
// once there is one.
func eventOn(ctx context.Context, g Gomega, ns, kind, name, reason string) *eventsv1.Event {
	var found *eventsv1.Event
	g.Eventually(func() bool { // the recorder writes events asynchronously
		var list eventsv1.EventList
		g.Expect(k8s.List(ctx, &list, client.InNamespace(ns))).To(Succeed())
		for i := range list.Items {
			if e := &list.Items[i]; e.Reason == reason && e.Regarding.Kind == kind && (name == "" || e.Regarding.Name == name) {
				found = e
				return true
			}
		}
		return false
	}).Should(BeTrue(), "a %s event on the %s", reason, kind)
	return found
}

// deletedObject waits for the watch to deliver the deletion and returns
// the object's last state, as a watcher sees it.
func deletedObject(g Gomega, w watch.Interface) *gamev1.MapInstance {
	var last *gamev1.MapInstance
	g.Eventually(func() bool {
		for {
			select {
			case e := <-w.ResultChan():
				if e.Type == watch.Deleted {
					last = e.Object.(*gamev1.MapInstance)
					return true
				}
			default:
				return false
			}
		}
	}).Should(BeTrue(), "the watch sees the deletion")
	return last
}

// TestIdleInstancedMapIsDeleted: with the room's idleTimeout unset, an
// instanced map without players goes after 30m and says why; one with
// players stays, the non-instanced map stays, and the room never expires.
func TestIdleInstancedMapIsDeleted(t *testing.T) {
	ctx, ns := envtestNamespace(t)
	g := wait(t)
	room := createRoom(ctx, t, ns, newGameRoom("demo", withMap("town"), withInstancedMap("crypt")))
	markPodReady(ctx, g, ns, "demo-town", "127.0.0.20", true)
	busy := startParty(ctx, t, g, room, "crypt", "busy1", "127.0.0.21")
	idle := startParty(ctx, t, g, room, "crypt", "idle1", "127.0.0.22")
	busy.report(ctx, g, 2)
	idle.report(ctx, g, 0)

	g.Eventually(idle.emptySince(ctx, g)).ShouldNot(BeNil(), "empty from the moment it is Ready")
	g.Eventually(busy.emptySince(ctx, g)).Should(BeNil(), "a party plays there")
	g.Expect(mapInstance(ctx, g, ns).Status.EmptySince).To(BeNil(), "non-instanced maps are not tracked")
	deletionsBefore := testutil.ToFloat64(idleDeletions.WithLabelValues(idleKindMapInstance))
	miWatch := watchObject(ctx, t, ns, &gamev1.MapInstanceList{}, idle.get(ctx, g))

	testClock.Advance(29 * time.Minute)
	g.Consistently(exists(ctx, ns, idle.name, &gamev1.MapInstance{})).Should(BeTrue(), "29 of 30 minutes idle")
	testClock.Advance(2 * time.Minute)
	g.Eventually(exists(ctx, ns, idle.name, &gamev1.MapInstance{})).Should(BeFalse(), "deleted after 30 minutes idle")

	last := deletedObject(g, miWatch)
	ready := meta.FindStatusCondition(last.Status.Conditions, gamev1.ConditionReady)
	g.Expect(ready).NotTo(BeNil())
	g.Expect(ready.Status).To(Equal(metav1.ConditionFalse))
	g.Expect(ready.Reason).To(Equal(gamev1.ReasonIdleTimeout), "a watcher sees why it went")
	g.Expect(last.Status.Phase).To(Equal(gamev1.MapTerminating))
	e := roomEvent(ctx, g, ns, EventIdleDeleted)
	g.Expect(e.Type).To(Equal("Normal"))
	g.Expect(e.Note).To(ContainSubstring(idle.name))
	g.Expect(e.Related).NotTo(BeNil())
	g.Expect(e.Related.Name).To(Equal(idle.name))
	g.Eventually(func() float64 { return testutil.ToFloat64(idleDeletions.WithLabelValues(idleKindMapInstance)) }).
		Should(Equal(deletionsBefore + 1))
	g.Eventually(func() []gamev1.MapDirectoryEntry {
		r := &gamev1.GameRoom{}
		g.Expect(k8s.Get(ctx, key(ns, "demo"), r)).To(Succeed())
		return r.Status.Maps
	}).Should(HaveLen(2), "the directory drops the deleted instance")

	// The room's idleTimeout is unset: two days later nothing else is gone.
	testClock.Advance(48 * time.Hour)
	g.Consistently(func(g Gomega) {
		g.Expect(exists(ctx, ns, "demo", &gamev1.GameRoom{})()).To(BeTrue(), "a room without idleTimeout never expires")
		g.Expect(exists(ctx, ns, "demo-town", &gamev1.MapInstance{})()).To(BeTrue(), "non-instanced maps are never deleted for idleness")
		g.Expect(exists(ctx, ns, busy.name, &gamev1.MapInstance{})()).To(BeTrue(), "an instance with players stays")
	}).Should(Succeed())
	r := &gamev1.GameRoom{}
	g.Expect(k8s.Get(ctx, key(ns, "demo"), r)).To(Succeed())
	g.Expect(r.Status.EmptySince).To(BeNil(), "the busy party counts for the room")
}

// TestPlayerResetsInstanceEmptiness: a player reported by a heartbeat
// clears emptySince, and the idle time starts again when the instance
// empties, or its last player idles (connected, not playing).
func TestPlayerResetsInstanceEmptiness(t *testing.T) {
	ctx, ns := envtestNamespace(t)
	g := wait(t)
	room := createRoom(ctx, t, ns, newGameRoom("demo", withMap("town"), withInstancedMap("crypt")))
	party := startParty(ctx, t, g, room, "crypt", "ab12c", "127.0.0.23")
	g.Eventually(party.emptySince(ctx, g)).ShouldNot(BeNil())
	first := party.get(ctx, g).Status.EmptySince.Time

	testClock.Advance(20 * time.Minute)
	party.report(ctx, g, 1)
	g.Eventually(party.emptySince(ctx, g)).Should(BeNil(), "a player resets emptiness")
	// The player stays connected but stops playing (automatic pongs only):
	// the instance is empty again.
	g.Expect(party.beats.Apply(ctx, heartbeat.Report{Players: 1, ActivePlayers: 0})).To(Succeed())
	g.Eventually(party.emptySince(ctx, g)).ShouldNot(BeNil(), "empty again, an idle connection left in it")
	g.Expect(party.get(ctx, g).Status.EmptySince.Time).To(BeTemporally(">=", first.Add(20*time.Minute)))

	testClock.Advance(20 * time.Minute) // 40 minutes after it first emptied, 20 after it emptied again
	g.Consistently(exists(ctx, ns, party.name, &gamev1.MapInstance{})).Should(BeTrue(), "the idle time started again")
	testClock.Advance(11 * time.Minute)
	g.Eventually(exists(ctx, ns, party.name, &gamev1.MapInstance{})).Should(BeFalse(), "31 minutes idle since the player left")
}

// TestIdleRoomExpires: with idleTimeout set, a room with no player in any
// map (players in a party's instance count; connections that do not play
// do not) is deleted after it, with a RoomExpired event.
func TestIdleRoomExpires(t *testing.T) {
	ctx, ns := envtestNamespace(t)
	g := wait(t)
	room := createRoom(ctx, t, ns, newGameRoom("demo", withMap("town"), withInstancedMap("crypt"), withIdleTimeout(10*time.Minute)))
	roomEmptySince := func() *metav1.Time {
		r := &gamev1.GameRoom{}
		g.Expect(k8s.Get(ctx, key(ns, "demo"), r)).To(Succeed())
		return r.Status.EmptySince
	}
	g.Expect(roomEmptySince()).To(BeNil(), "not empty before it is Ready")
	markPodReady(ctx, g, ns, "demo-town", "127.0.0.24", true)
	g.Eventually(roomEmptySince).ShouldNot(BeNil(), "Ready with no players")

	town := townHeartbeats(g, ns)
	g.Expect(town.Apply(ctx, heartbeat.Report{Players: 3, ActivePlayers: 3})).To(Succeed())
	g.Eventually(roomEmptySince).Should(BeNil(), "players in the town")
	party := startParty(ctx, t, g, room, "crypt", "ab12c", "127.0.0.25")
	party.report(ctx, g, 2)
	g.Expect(town.Apply(ctx, heartbeat.Report{Players: 0})).To(Succeed())
	g.Eventually(func() int32 { return roomStatus(ctx, g, ns, "demo").ActivePlayers }).Should(BeEquivalentTo(2))
	g.Expect(roomEmptySince()).To(BeNil(), "players only in a party's instance still count")
	g.Expect(party.beats.Apply(ctx, heartbeat.Report{Players: 2, ActivePlayers: 0})).To(Succeed())
	g.Eventually(roomEmptySince).ShouldNot(BeNil(), "no player playing anywhere: the party's idle connections keep nothing")
	g.Expect(roomStatus(ctx, g, ns, "demo").Players).To(BeEquivalentTo(2), "connected, counted as players")

	expiriesBefore := testutil.ToFloat64(idleDeletions.WithLabelValues(idleKindGameRoom))
	testClock.Advance(9 * time.Minute)
	g.Consistently(exists(ctx, ns, "demo", &gamev1.GameRoom{})).Should(BeTrue(), "9 of 10 minutes idle")
	testClock.Advance(2 * time.Minute)
	g.Eventually(exists(ctx, ns, "demo", &gamev1.GameRoom{})).Should(BeFalse(), "the room expired")
	e := roomEvent(ctx, g, ns, EventRoomExpired)
	g.Expect(e.Regarding.UID).To(Equal(room.UID))
	g.Expect(e.Note).To(ContainSubstring("idleTimeout 10m0s"))
	// Counted once the delete has returned to the operator, which may be
	// after the test saw the room gone.
	g.Eventually(func() float64 { return testutil.ToFloat64(idleDeletions.WithLabelValues(idleKindGameRoom)) }).
		Should(Equal(expiriesBefore+1), "the expiry counted")
}

func roomStatus(ctx context.Context, g Gomega, ns, name string) gamev1.GameRoomStatus {
	r := &gamev1.GameRoom{}
	g.Expect(k8s.Get(ctx, key(ns, name), r)).To(Succeed())
	return r.Status
}
