package controllers

import (
	"context"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/workqueue"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/priorityqueue"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	gamev1 "github.com/roomkeeper/roomkeeper/api/v1"
)

// A map whose pod ended is a player-facing outage until its new pod
// serves, so its MapInstance goes ahead of routine work in the
// controller's priority queue: when the pod ends, and when the pod that
// brings it back (a restart's, or a handover's successor) turns Ready.
// When 100 maps start at once on a saturated API server every reconcile
// takes seconds and the queue holds a minute of them (docs/benchmarks.md,
// "Density"): in order of arrival, a killed pod was counted failed 72 s
// after it exited, and a restarted map said Ready two minutes after its
// pod was. Routine work keeps the default priority, and a map's heartbeat
// check, time-driven and due every few seconds for every running map, is
// routine even after an urgent reconcile: a requeue keeps the priority it
// was taken with otherwise.

// urgentPriority is a map's outage: its pod exited, began its deletion or
// is gone, or the pod bringing it back is Ready. Everything else has the
// queue's default, 0 (or the lower one controller-runtime gives the
// initial list and resyncs).
const urgentPriority = 100

// mapPods enqueues the MapInstance that controls a pod when the pod
// changes or goes, urgently for an outage's start or end (maps, the
// cache, tells a pod that brings its map back). A pod's creation enqueues
// nothing: the reconcile that made it already knows.
func mapPods(maps client.Reader) handler.EventHandler {
	return handler.Funcs{
		UpdateFunc: func(ctx context.Context, e event.UpdateEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			var priority *int // the queue's
			if outageEdge(ctx, maps, e.ObjectOld, e.ObjectNew) {
				priority = new(urgentPriority)
			}
			enqueueOwner(q, e.ObjectNew, priority)
		},
		DeleteFunc: func(_ context.Context, e event.DeleteEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			enqueueOwner(q, e.Object, new(urgentPriority))
		},
	}
}

// outageEdge says whether a pod update starts or ends its map's outage:
// the pod failed or began its deletion, or it turned Ready and brings
// its map back.
func outageEdge(ctx context.Context, maps client.Reader, old, updated client.Object) bool {
	before, ok1 := old.(*corev1.Pod)
	after, ok2 := updated.(*corev1.Pod)
	if !ok1 || !ok2 {
		return false
	}
	switch {
	case ended(after):
		return !ended(before)
	case classifyPod(after) == podReady && classifyPod(before) != podReady:
		return bringsBack(ctx, maps, after)
	}
	return false
}

func ended(pod *corev1.Pod) bool {
	state := classifyPod(pod)
	return state == podFailed || state == podTerminating
}

// bringsBack says whether pod is the one its map waits for to serve
// again: the pod of a map that restarted and is not Ready, or the
// successor of a handover.
func bringsBack(ctx context.Context, maps client.Reader, pod *corev1.Pod) bool {
	name, ok := controllingMap(pod)
	if !ok {
		return false
	}
	mi := &gamev1.MapInstance{}
	if err := maps.Get(ctx, types.NamespacedName{Namespace: pod.Namespace, Name: name}, mi); err != nil {
		return false
	}
	restarting := mi.Status.RestartCount > 0 && mi.Status.Phase != gamev1.MapReady
	return restarting || mi.Status.Handover != nil && mi.Status.Handover.To == pod.Name
}

// enqueueOwner adds the MapInstance that controls obj, if any, with
// priority (nil: the queue's default).
func enqueueOwner(q workqueue.TypedRateLimitingInterface[reconcile.Request], obj client.Object, priority *int) {
	name, ok := controllingMap(obj)
	if !ok {
		return
	}
	req := reconcile.Request{NamespacedName: types.NamespacedName{Namespace: obj.GetNamespace(), Name: name}}
	if pq, ok := q.(priorityqueue.PriorityQueue[reconcile.Request]); ok && priority != nil {
		pq.AddWithOpts(priorityqueue.AddOpts{Priority: priority}, req)
		return
	}
	q.Add(req)
}

// routine makes a requeue routine: a reconcile taken urgently would
// otherwise requeue itself urgently for good.
func routine(res ctrl.Result) ctrl.Result {
	res.Priority = new(0)
	return res
}
