package controllers

import (
	"context"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
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

// A pod that ended is a player-facing outage until its map is replaced,
// so its MapInstance goes ahead of routine work in the controller's
// priority queue. When 100 maps start at once on a saturated API server
// every reconcile takes seconds and the queue holds a minute of them
// (docs/benchmarks.md, "Density"): in order of arrival, a killed pod was
// counted failed 72 s after it exited. Routine work keeps the default
// priority, and a map's heartbeat check, time-driven and due every few
// seconds for every running map, is routine even after an urgent
// reconcile: a requeue keeps the priority it was taken with otherwise.

// urgentPriority is a pod's end: it exited, began its deletion or is
// gone. Everything else has the queue's default, 0 (or the lower one
// controller-runtime gives the initial list and resyncs).
const urgentPriority = 100

// mapPods enqueues the MapInstance that controls a pod when the pod
// changes or goes, urgently when it has just ended. A pod's creation
// enqueues nothing: the reconcile that made it already knows.
var mapPods = handler.Funcs{
	UpdateFunc: func(_ context.Context, e event.UpdateEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
		var priority *int // the queue's
		if justEnded(e.ObjectOld, e.ObjectNew) {
			priority = new(urgentPriority)
		}
		enqueueOwner(q, e.ObjectNew, priority)
	},
	DeleteFunc: func(_ context.Context, e event.DeleteEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
		enqueueOwner(q, e.Object, new(urgentPriority))
	},
}

// justEnded says whether a pod update is its end: it failed or began its
// deletion in this update.
func justEnded(old, updated client.Object) bool {
	before, ok1 := old.(*corev1.Pod)
	after, ok2 := updated.(*corev1.Pod)
	if !ok1 || !ok2 {
		return false
	}
	return ended(after) && !ended(before)
}

func ended(pod *corev1.Pod) bool {
	state := classifyPod(pod)
	return state == podFailed || state == podTerminating
}

// enqueueOwner adds the MapInstance that controls obj, if any, with
// priority (nil: the queue's default).
func enqueueOwner(q workqueue.TypedRateLimitingInterface[reconcile.Request], obj client.Object, priority *int) {
	owner := metav1.GetControllerOf(obj)
	if owner == nil || owner.Kind != "MapInstance" || owner.APIVersion != gamev1.GroupVersion.String() {
		return
	}
	req := reconcile.Request{NamespacedName: types.NamespacedName{Namespace: obj.GetNamespace(), Name: owner.Name}}
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
