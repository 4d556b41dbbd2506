package controllers

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	gamev1 "github.com/roomkeeper/roomkeeper/api/v1"
	"github.com/roomkeeper/roomkeeper/internal/podenv"
)

// ports is the host port allocator, made on first use from HostPortRange
// and the statuses in the cache.
func (r *MapInstanceReconciler) ports() *hostPorts {
	r.hostPortsOnce.Do(func() {
		portRange := r.HostPortRange
		if portRange == (PortRange{}) {
			portRange = DefaultHostPortRange
		}
		r.hostPorts = newHostPorts(portRange, r.HostPortsPerNamespace, func() (map[types.NamespacedName]int32, error) {
			return recordedHostPorts(context.Background(), r.Client)
		})
	})
	return r.hostPorts
}

// recordedHostPorts lists the host ports the MapInstances' statuses hold.
func recordedHostPorts(ctx context.Context, c client.Reader) (map[types.NamespacedName]int32, error) {
	var list gamev1.MapInstanceList
	if err := c.List(ctx, &list); err != nil {
		return nil, err
	}
	ports := map[types.NamespacedName]int32{}
	for i := range list.Items {
		mi := &list.Items[i]
		if mi.Status.HostPort != 0 {
			ports[client.ObjectKeyFromObject(mi)] = mi.Status.HostPort
		}
		if h := mi.Status.Handover; h != nil && h.HostPort != 0 {
			ports[handoverPortKey(client.ObjectKeyFromObject(mi))] = h.HostPort
		}
	}
	return ports, nil
}

// MapInstanceReconciler runs one room-server pod per MapInstance, restarts
// it with backoff when it fails, quarantines a map that keeps failing, and
// reports all of it in the MapInstance's status.
type MapInstanceReconciler struct {
	client.Client
	// APIReader reads past the cache, which holds only the operator's own
	// pods: it tells whose a pod is when a create finds its name taken.
	APIReader client.Reader
	Recorder  events.EventRecorder
	Clock     clock.PassiveClock
	// MaxRequeue, when set, caps every timed requeue (tests move the
	// clock faster than real time).
	MaxRequeue time.Duration
	// Pods are the manager's settings every map pod gets (BuildPod).
	Pods PodSettings
	// HostPortRange is where maps with exposure HostPort take their node
	// port from (DefaultHostPortRange when zero).
	HostPortRange PortRange
	// HostPortsPerNamespace, when positive, is the ports of the range one
	// namespace's maps may hold at once.
	HostPortsPerNamespace int

	// GatewayAPI says the cluster serves HTTPRoutes (Options.GatewayAPI):
	// the controller then writes and watches the routes it owns. Without
	// it no route is looked up: a lookup of a kind the API server does not
	// know costs a discovery request every time.
	GatewayAPI bool

	// mapMemory is what the controller keeps in memory (memory.go).
	mapMemory
}

// +kubebuilder:rbac:groups=game.roomkeeper.dev,resources=mapinstances,verbs=get;list;watch
// +kubebuilder:rbac:groups=game.roomkeeper.dev,resources=mapinstances/status,verbs=get;update
// +kubebuilder:rbac:groups=core,resources=pods,verbs=get;list;watch;create;delete
// +kubebuilder:rbac:groups=events.k8s.io,resources=events,verbs=create;patch

// Reconcile keeps one MapInstance's pod running and reports on it.
func (r *MapInstanceReconciler) Reconcile(ctx context.Context, req ctrl.Request) (res ctrl.Result, reterr error) {
	mi := &gamev1.MapInstance{}
	if err := r.written.read(ctx, r.Client, r.APIReader, req.NamespacedName, mi); err != nil {
		if apierrors.IsNotFound(err) {
			r.written.forget(req.NamespacedName)
			r.started.Delete(req.NamespacedName)
			r.ports().release(req.NamespacedName)
			r.ports().release(handoverPortKey(req.NamespacedName))
		}
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if !mi.DeletionTimestamp.IsZero() {
		return ctrl.Result{}, nil // the pod goes with its owner
	}
	before := mi.DeepCopy()
	defer func() {
		written := r.written.updateStatus(ctx, r.Client, before, mi, before.Status, mi.Status)
		if reterr == nil && apierrors.IsConflict(written) {
			// The room server's heartbeat changed the status since it was
			// read: no error to log, no backoff, again in a moment.
			res = ctrl.Result{RequeueAfter: conflictRetry}
			return
		}
		if reterr = statusWritten(reterr, written); reterr != nil {
			res = ctrl.Result{} // an error requeues with backoff; a RequeueAfter beside it is ignored
		}
	}()

	sc := &mapScope{mi: mi, before: before, now: r.Clock.Now()}
	for _, phase := range reconcileSteps {
		if err := phase(r, ctx, sc); err != nil {
			if errors.Is(err, errNothingToRun) {
				return ctrl.Result{}, nil
			}
			if apierrors.IsConflict(err) { // a write lost a race (writeStatusNow)
				return ctrl.Result{RequeueAfter: conflictRetry}, nil
			}
			return ctrl.Result{}, err
		}
	}
	return r.requeue(sc.pod, lastHeard(&mi.Status, sc.renewed), sc.heartbeatTimeout(), sc.wait, sc.now), nil
}

// conflictRetry is how long a MapInstance whose reconcile lost a write to
// a conflict (its status changed since the cache's copy, a heartbeat most
// often) waits before it is reconciled again, from the API server's copy
// (staleVersions.read). That is no error: an error backs the map off
// longer with each conflict, and a killed pod was counted minutes late.
// Nothing else would bring the map back: status changes do not wake this
// controller (SetupWithManager).
const conflictRetry = 100 * time.Millisecond

// skipFirstPending leaves a new MapInstance's status unwritten while its
// first pod is pending: everything it would say (the pod's name is the
// MapInstance's, Pending, not Ready) follows from the status being empty,
// and the first write waits for the pod to change phase. The pod is
// remembered as expected, so a deletion by someone else is still a
// failure (podFailure). An exposure that waits on something (a missing
// Gateway, no host port left) is news, and is written at once.
func (r *MapInstanceReconciler) skipFirstPending(before, mi *gamev1.MapInstance, pod *corev1.Pod, e exposure) {
	key := client.ObjectKeyFromObject(mi)
	if classifyPod(pod) == podPending && !e.waiting() && equality.Semantic.DeepEqual(before.Status, gamev1.MapInstanceStatus{}) {
		mi.Status = before.Status
		r.started.Store(key, struct{}{})
		return
	}
	if mi.Status.PodName != "" || mi.Status.RestartCount > 0 {
		r.started.Delete(key) // status says it from now on
	}
}

// expectedPod is the pod the MapInstance should have: the one its status
// names, or its first pod, created without a status write.
func (r *MapInstanceReconciler) expectedPod(mi *gamev1.MapInstance) string {
	if mi.Status.PodName != "" {
		return mi.Status.PodName
	}
	if _, ok := r.started.Load(client.ObjectKeyFromObject(mi)); ok {
		return mi.Name
	}
	return ""
}

// currentPod returns the MapInstance's pod, or nil when there is none: the
// one status names (a pod that took over in a handover has a name of its
// own), else the one named after the MapInstance.
func (r *MapInstanceReconciler) currentPod(ctx context.Context, mi *gamev1.MapInstance) (*corev1.Pod, error) {
	return r.podNamed(ctx, r.Client, mi, cmp.Or(mi.Status.PodName, mi.Name))
}

// reportBlocked reports a problem a person must fix (blocked.go) in the
// map's Ready and PodHealthy conditions and ends the reconcile; other
// errors are retried.
func (r *MapInstanceReconciler) reportBlocked(mi *gamev1.MapInstance, err error, now time.Time) error {
	return reportBlocked(err, r.Recorder, mi, func(b *blockedError) (changed bool) {
		mi.Status, changed = mapBlocked(mi.Status, b, mi.Generation, metav1.NewTime(now))
		return changed
	})
}

// detectFailure records a failure when the pod ended, was removed by
// someone else, or stopped sending heartbeats (renewed: its Lease's last
// renewal), and deletes what is left of it. It returns the pod still to consider (nil after a failure), and
// whether a late heartbeat's failure waits its turn
// (mapinstance_heartbeat_drought.go).
func (r *MapInstanceReconciler) detectFailure(ctx context.Context, before, mi *gamev1.MapInstance, policy *gamev1.RestartPolicy,
	pod *corev1.Pod, renewed, now time.Time) (_ *corev1.Pod, held bool, _ error) {
	timeout := heartbeatTimeoutFor(policy, pod)
	failure, failed := podFailure(mi, r.expectedPod(mi), pod, lastHeard(&mi.Status, renewed), timeout, now)
	if !failed {
		return pod, false, nil
	}
	if failure.Reason == FailureHeartbeatTimeout {
		if held, err := r.holdLateHeartbeat(ctx, mi, pod, timeout, now); held || err != nil {
			return pod, held, err
		}
	}
	mi.Status = recordFailure(mi.Status, *policy, failure, now)
	mi.Status.PodName = ""
	// The failure is written before the pod is deleted: were the write to
	// lose a race after the deletion, the next reconcile would find the pod
	// gone and record it as deleted by someone else, its exit code lost.
	if err := r.writeStatusNow(ctx, before, mi); err != nil {
		return pod, false, fmt.Errorf("recording the failure: %w", err)
	}
	r.started.Delete(client.ObjectKeyFromObject(mi))
	if pod != nil && pod.DeletionTimestamp == nil {
		if err := r.Delete(ctx, pod, client.Preconditions{UID: &pod.UID}); err != nil && !apierrors.IsNotFound(err) {
			return pod, false, fmt.Errorf("deleting failed pod: %w", err)
		}
	}
	mapFailures.WithLabelValues(failure.Reason).Inc()
	r.Recorder.Eventf(mi, relatedPod(pod), corev1.EventTypeWarning, EventPodFailed, "RecordFailure", "%s: %s", failure.Reason, failure.Message)
	if mi.Status.QuarantinedUntil != nil {
		quarantines.Inc()
		r.Recorder.Eventf(mi, nil, corev1.EventTypeWarning, EventQuarantined, "Quarantine",
			"Failed %d times within %s: no pod until %s", len(mi.Status.RecentRestarts),
			durationOf(policy.Window), mi.Status.QuarantinedUntil.UTC().Format(time.RFC3339))
	}
	return nil, false, nil
}

// heartbeatTimeoutFor is how long pod may go without a heartbeat: the
// policy's timeout, or three of the intervals the pod was started with
// when that is longer. A room whose timeout was just shortened does not
// fail its pods for beating at the pace they were told, while their
// replacements (the interval is in the pods' input hash) start.
func heartbeatTimeoutFor(policy *gamev1.RestartPolicy, pod *corev1.Pod) time.Duration {
	timeout := policy.HeartbeatTimeoutOrDefault()
	if pod == nil || len(pod.Spec.Containers) == 0 {
		return timeout
	}
	v, _ := podenv.ArgValue(pod.Spec.Containers[0].Args, podenv.FlagHeartbeatInterval)
	every, err := time.ParseDuration(v) // no flag: the pod's default, which the default timeout covers
	if err != nil {
		return timeout
	}
	return max(timeout, gamev1.HeartbeatsPerTimeout*every)
}

// podFailure tells whether the pod counts as failed, and how; expected is
// the pod the MapInstance should have ("" when it should have none yet),
// heard when it last gave a sign of life (lastHeard).
func podFailure(mi *gamev1.MapInstance, expected string, pod *corev1.Pod, heard time.Time, heartbeatTimeout time.Duration, now time.Time) (gamev1.Failure, bool) {
	switch state := classifyPod(pod); {
	case state == podFailed:
		f := gamev1.Failure{Reason: FailurePodFailed, Message: podMessage(pod, state)}
		if pod.Status.Phase == corev1.PodSucceeded {
			f.Reason = FailurePodSucceeded
		}
		if t := terminatedState(pod); t != nil {
			f.ExitCode = &t.ExitCode
		}
		return f, true
	case expected != "" && (pod == nil || (state == podTerminating && pod.Name == expected)) && !handingOverFrom(mi, expected):
		return gamev1.Failure{Reason: FailurePodDeleted, Message: "Pod " + expected + " was deleted by someone else"}, true
	case (state == podReady || state == podStarting) && heartbeatOverdue(heard, heartbeatTimeout, podStart(pod), now):
		return gamev1.Failure{Reason: FailureHeartbeatTimeout,
			Message: fmt.Sprintf("No heartbeat from pod %s for %s", pod.Name, heartbeatTimeout)}, true
	}
	return gamev1.Failure{}, false
}

// relatedPod is pod as an event's related object: a nil interface when
// there is no pod, since the recorder cannot take a typed nil.
func relatedPod(pod *corev1.Pod) runtime.Object {
	if pod == nil {
		return nil
	}
	return pod
}

func podStart(pod *corev1.Pod) time.Time {
	if pod.Status.StartTime == nil {
		return time.Time{}
	}
	return pod.Status.StartTime.Time
}

// syncPod creates the pod when the restart policy allows, and replaces it
// when it was built from other inputs: by handover (mapinstance_handover.go) when the
// map allows one and recreate is not set, else by deleting it (the
// deletion's watch event brings the replacement). It returns how long to
// wait before the next try and the pod to report on.
func (r *MapInstanceReconciler) syncPod(ctx context.Context, s *mapScope) (time.Duration, *corev1.Pod, error) {
	mi, desired, pod, now := s.mi, s.desired, s.pod, s.now
	switch {
	case pod == nil:
		return r.startPod(ctx, mi, desired, now)
	case pod.DeletionTimestamp != nil, mi.Status.Handover != nil:
		return 0, pod, nil
	case !podOutdated(pod, desired):
		return 0, pod, nil
	}
	if !s.recreate && mi.Status.HandsOver() && classifyPod(pod) == podReady {
		started, err := r.startHandover(ctx, s, pod, "outdated")
		if started || err != nil {
			return 0, pod, err
		}
	}
	return r.recreatePod(ctx, mi, pod, now)
}

// recreatePod deletes the outdated pod; the deletion's watch event brings
// its replacement.
func (r *MapInstanceReconciler) recreatePod(ctx context.Context, mi *gamev1.MapInstance, pod *corev1.Pod, now time.Time) (time.Duration, *corev1.Pod, error) {
	if err := r.Delete(ctx, pod, client.Preconditions{UID: &pod.UID}); err != nil && !apierrors.IsNotFound(err) {
		return 0, nil, fmt.Errorf("deleting outdated pod: %w", err)
	}
	r.Recorder.Eventf(mi, pod, corev1.EventTypeNormal, EventPodReplacing, "ReplacePod",
		"Replacing pod %s: its spec changed", pod.Name)
	deleted := metav1.NewTime(now)
	pod.DeletionTimestamp = &deleted // report it as draining until the watch says it is gone
	mi.Status.PodName = ""           // our own deletion is no failure
	r.started.Delete(client.ObjectKeyFromObject(mi))
	return 0, pod, nil
}

// startPod follows the restart policy for a map without a pod.
func (r *MapInstanceReconciler) startPod(ctx context.Context, mi *gamev1.MapInstance, desired *corev1.Pod, now time.Time) (time.Duration, *corev1.Pod, error) {
	next, until := nextStep(mi.Status, now)
	switch next {
	case stepQuarantined, stepBackoff:
		return until.Sub(now), nil, nil
	case stepRelease:
		mi.Status = releaseQuarantine(mi.Status)
		r.Recorder.Eventf(mi, nil, corev1.EventTypeNormal, EventQuarantineEnded, "Release", "Quarantine over: starting the map again")
	}
	if err := r.Create(ctx, desired, client.FieldOwner(gamev1.FieldManagerOperator)); err != nil {
		switch {
		case apierrors.IsAlreadyExists(err):
			// Our old pod, still being removed (its deletion wakes us), or
			// someone else's, which the cache may not hold.
			return 0, nil, ownedLive(ctx, r.APIReader, r.Scheme(), &corev1.Pod{ObjectMeta: metav1.ObjectMeta{
				Namespace: desired.Namespace, Name: desired.Name}}, mi)
		case apierrors.IsInvalid(err):
			return 0, nil, invalidPod(err)
		case apierrors.IsForbidden(err):
			return 0, nil, forbiddenPod(err)
		}
		return 0, nil, fmt.Errorf("creating pod: %w", err)
	}
	mi.Status.NextRestartAt = nil
	if mi.Status.RestartCount > 0 { // a restart is news; the first pod is routine
		r.Recorder.Eventf(mi, desired, corev1.EventTypeNormal, EventPodRestarted, "RestartPod",
			"Created pod %s (restart %d)", desired.Name, mi.Status.RestartCount)
	}
	return 0, desired, nil
}

// requeue asks to be woken when time-driven work is due: the end of a
// backoff or quarantine, or (routine: mapinstance_priority.go) the moment
// a running pod last heard at heard would be overdue.
func (r *MapInstanceReconciler) requeue(pod *corev1.Pod, heard time.Time, heartbeatTimeout, wait time.Duration, now time.Time) ctrl.Result {
	if state := classifyPod(pod); wait == 0 && (state == podReady || state == podStarting) && !podStart(pod).IsZero() {
		due := podStart(pod)
		if heard.After(due) {
			due = heard
		}
		due = due.Add(heartbeatTimeout)
		return routine(r.after(max(due.Sub(now), time.Second)))
	}
	if wait <= 0 {
		return ctrl.Result{}
	}
	return r.after(wait)
}

// after is a requeue after wait, capped by MaxRequeue.
func (r *MapInstanceReconciler) after(wait time.Duration) ctrl.Result {
	if r.MaxRequeue > 0 {
		wait = min(wait, r.MaxRequeue)
	}
	return ctrl.Result{RequeueAfter: wait}
}

// SetupWithManager registers the controller and what it watches.
func (r *MapInstanceReconciler) SetupWithManager(mgr ctrl.Manager, workers int) error {
	if err := mgr.GetFieldIndexer().IndexField(context.Background(), &gamev1.MapInstance{}, indexRoomName, roomNameOf); err != nil {
		return fmt.Errorf("indexing MapInstances by room: %w", err)
	}
	b := ctrl.NewControllerManagedBy(mgr)
	if r.GatewayAPI {
		b = b.Owns(&gatewayv1.HTTPRoute{}, builder.WithPredicates(predicate.Funcs{CreateFunc: func(event.CreateEvent) bool { return false }}))
	}
	return b.
		// Only spec and annotation changes (a nudge after a name conflict,
		// blocked.go), and the heartbeats that move an instanced map's
		// players to or from zero (status.emptySince): other status writes,
		// including most heartbeats, must not wake the controller.
		For(&gamev1.MapInstance{}, builder.WithPredicates(predicate.Or[client.Object](
			predicate.GenerationChangedPredicate{}, predicate.AnnotationChangedPredicate{}, playersCrossedZero))).
		// Not a pod's creation: the reconcile that made it already knows.
		// (A restarted operator learns of every pod from its MapInstance's
		// own creation event.) A pod's end goes ahead of routine work
		// (mapinstance_priority.go).
		Watches(&corev1.Pod{}, mapPods(mgr.GetClient())).
		Owns(&corev1.Service{}, builder.WithPredicates(predicate.Funcs{CreateFunc: func(event.CreateEvent) bool { return false }})).
		// A pod is named after its MapInstance: someone else's pod that held
		// the name wakes the MapInstance when it is deleted.
		Watches(&corev1.Pod{}, handler.EnqueueRequestsFromMapFunc(sameName), builder.WithPredicates(onDelete)).
		// What a map runs is its room's: a room's spec change (or its
		// creation, for a MapInstance made by hand) wakes its maps.
		Watches(&gamev1.GameRoom{}, mapsOfRoom(mgr.GetClient()), builder.WithPredicates(roomSpecChanged)).
		// A content pack's new revision (or first verdict) rolls or starts
		// the maps that run it.
		Watches(&gamev1.GameContent{}, mapsOfPack(mgr.GetClient())).
		Named("mapinstance").
		WithOptions(controller.Options{MaxConcurrentReconciles: workers}).
		Complete(r)
}
