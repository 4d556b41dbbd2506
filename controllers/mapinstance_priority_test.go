package controllers

import (
	"context"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/controller/priorityqueue"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	gamev1 "github.com/roomkeeper/roomkeeper/api/v1"
)

// mapPod is a map's running, Ready pod at resourceVersion rv.
func mapPod(mapName, rv string) *corev1.Pod {
	yes := true
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: mapName, ResourceVersion: rv,
			OwnerReferences: []metav1.OwnerReference{{APIVersion: gamev1.GroupVersion.String(), Kind: "MapInstance",
				Name: mapName, Controller: &yes}}},
		Status: corev1.PodStatus{Phase: corev1.PodRunning,
			Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}},
	}
}

// next is the queue's next map and the priority it was taken with.
func next(t *testing.T, q priorityqueue.PriorityQueue[reconcile.Request]) (string, int) {
	t.Helper()
	got := make(chan reconcile.Request, 1)
	var priority int
	go func() {
		req, p, _ := q.GetWithPriority()
		priority = p
		got <- req
	}()
	select {
	case req := <-got:
		q.Done(req)
		return req.Name, priority
	case <-time.After(10 * time.Second):
		t.Fatal("nothing in the queue")
		return "", 0
	}
}

// cacheHolding is a cache that holds objs (MapInstances, GameRooms).
func cacheHolding(t *testing.T, objs ...client.Object) client.Reader {
	t.Helper()
	scheme := runtime.NewScheme()
	if err := gamev1.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	b := fake.NewClientBuilder().WithScheme(scheme)
	return b.WithObjects(objs...).Build()
}

func mapInStatus(name string, status gamev1.MapInstanceStatus) *gamev1.MapInstance {
	return &gamev1.MapInstance{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name}, Status: status}
}

func TestAPodsEndGoesAheadOfRoutineWork(t *testing.T) {
	ctx := context.Background()
	mapPods := mapPods(cacheHolding(t, mapInStatus("m", gamev1.MapInstanceStatus{Phase: gamev1.MapReady})))
	failed := func(p *corev1.Pod) *corev1.Pod { p.Status.Phase = corev1.PodFailed; return p }
	deleting := func(p *corev1.Pod) *corev1.Pod { p.DeletionTimestamp = &metav1.Time{Time: time.Now()}; return p }
	notReady := func(p *corev1.Pod) *corev1.Pod { p.Status.Conditions = nil; return p }
	cases := []struct {
		name         string
		old, updated *corev1.Pod
		want         int
	}{
		{"a pod that exits", mapPod("m", "1"), failed(mapPod("m", "2")), urgentPriority},
		{"a pod whose deletion began", mapPod("m", "1"), deleting(mapPod("m", "2")), urgentPriority},
		{"a pod no longer Ready", mapPod("m", "1"), notReady(mapPod("m", "2")), 0},
		{"a failed pod that changes again", failed(mapPod("m", "1")), failed(mapPod("m", "2")), 0},
		{"a resync", mapPod("m", "1"), mapPod("m", "1"), -100},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			q := priorityqueue.New[reconcile.Request]("test-" + tc.name)
			defer q.ShutDown()
			mapPods.Update(ctx, event.UpdateEvent{ObjectOld: tc.old, ObjectNew: tc.updated}, q)
			if name, priority := next(t, q); name != "m" || priority != tc.want {
				t.Errorf("queued %q at priority %d, want m at %d", name, priority, tc.want)
			}
		})
	}

	t.Run("a pod that is gone", func(t *testing.T) {
		q := priorityqueue.New[reconcile.Request]("test-gone")
		defer q.ShutDown()
		mapPods.Delete(ctx, event.DeleteEvent{Object: mapPod("m", "3")}, q)
		if name, priority := next(t, q); name != "m" || priority != urgentPriority {
			t.Errorf("queued %q at priority %d, want m at %d", name, priority, urgentPriority)
		}
	})

	t.Run("a pod no map controls", func(t *testing.T) {
		q := priorityqueue.New[reconcile.Request]("test-stranger")
		defer q.ShutDown()
		stranger := failed(mapPod("m", "2"))
		stranger.OwnerReferences = nil
		mapPods.Update(ctx, event.UpdateEvent{ObjectOld: mapPod("m", "1"), ObjectNew: stranger}, q)
		mapPods.Delete(ctx, event.DeleteEvent{Object: stranger}, q)
		q.AddWithOpts(priorityqueue.AddOpts{Priority: new(-1000)}, reconcile.Request{NamespacedName: types.NamespacedName{Name: "sentinel"}})
		if name, _ := next(t, q); name != "sentinel" {
			t.Errorf("a stranger's pod queued %q", name)
		}
	})

	t.Run("ahead of a backlog", func(t *testing.T) {
		q := priorityqueue.New[reconcile.Request]("test-backlog")
		defer q.ShutDown()
		for _, name := range []string{"a", "b", "c"} {
			mapPods.Update(ctx, event.UpdateEvent{ObjectOld: mapPod(name, "1"), ObjectNew: notReady(mapPod(name, "2"))}, q)
		}
		// c was queued before it failed: its end raises it.
		mapPods.Update(ctx, event.UpdateEvent{ObjectOld: mapPod("c", "2"), ObjectNew: failed(mapPod("c", "3"))}, q)
		mapPods.Update(ctx, event.UpdateEvent{ObjectOld: mapPod("d", "1"), ObjectNew: failed(mapPod("d", "2"))}, q)
		var order []string
		for range 4 {
			name, _ := next(t, q)
			order = append(order, name)
		}
		if order[0] != "c" || order[1] != "d" {
			t.Errorf("taken in the order %v, want the failed c and d first, in the order they failed", order)
		}
	})
}

func TestTheNewPodOfAMapInAnOutageGoesAheadWhenReady(t *testing.T) {
	ctx := context.Background()
	ready := mapPod("m", "2")
	notReady := mapPod("m", "1")
	notReady.Status.Conditions = nil
	successor := func(p *corev1.Pod) *corev1.Pod { p.Name = "m-successor"; return p }
	cases := []struct {
		name         string
		status       gamev1.MapInstanceStatus
		old, updated *corev1.Pod
		want         int
	}{
		{"a restarted map not Ready", gamev1.MapInstanceStatus{Phase: gamev1.MapStarting, RestartCount: 1}, notReady, ready, urgentPriority},
		{"a map's first pod", gamev1.MapInstanceStatus{}, notReady, ready, 0},
		{"a restarted map already Ready", gamev1.MapInstanceStatus{Phase: gamev1.MapReady, RestartCount: 1}, notReady, ready, 0},
		{"a handover's successor", gamev1.MapInstanceStatus{Phase: gamev1.MapReady, Handover: &gamev1.Handover{To: "m-successor"}},
			successor(notReady.DeepCopy()), successor(ready.DeepCopy()), urgentPriority},
		{"a Ready pod that changes", gamev1.MapInstanceStatus{Phase: gamev1.MapStarting, RestartCount: 1}, mapPod("m", "1"), ready, 0},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			q := priorityqueue.New[reconcile.Request]("test-back-" + tc.name)
			defer q.ShutDown()
			h := mapPods(cacheHolding(t, mapInStatus("m", tc.status)))
			h.Update(ctx, event.UpdateEvent{ObjectOld: tc.old, ObjectNew: tc.updated}, q)
			if name, priority := next(t, q); name != "m" || priority != tc.want {
				t.Errorf("queued %q at priority %d, want m at %d", name, priority, tc.want)
			}
		})
	}
}

func TestARunningMapsHeartbeatCheckIsRoutine(t *testing.T) {
	r := &MapInstanceReconciler{}
	now := time.Now()
	pod := mapPod("m", "1")
	pod.Status.StartTime = &metav1.Time{Time: now.Add(-time.Minute)}
	heard := now.Add(-5 * time.Second)
	res := r.requeue(pod, heard, 15*time.Second, 0, now)
	if res.RequeueAfter != 10*time.Second || res.Priority == nil || *res.Priority != 0 {
		t.Errorf("the heartbeat check: %+v, want after 10s at priority 0", res)
	}
	res = r.requeue(failedPod(), heard, 15*time.Second, 4*time.Second, now)
	if res.RequeueAfter != 4*time.Second || res.Priority != nil {
		t.Errorf("the end of a backoff: %+v, want after 4s at the priority it was taken with", res)
	}
}

func failedPod() *corev1.Pod {
	p := mapPod("m", "1")
	p.Status.Phase = corev1.PodFailed
	return p
}
