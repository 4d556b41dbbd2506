package controllers

import (
	"context"
	"errors"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	gamev1 "github.com/roomkeeper/roomkeeper/api/v1"
	"github.com/roomkeeper/roomkeeper/internal/instanced"
	"github.com/roomkeeper/roomkeeper/internal/packs"
)

// A MapInstance's reconcile is the list of phases below, run in order on
// one mapScope (cluster-api's scope pattern): each reads what the phases
// before it learned and adds its own, and the first error ends the
// reconcile. The status is written once at the end (Reconcile's deferred
// write), and mid-reconcile only through writeStatusNow.

// mapScope is one reconcile of a MapInstance.
type mapScope struct {
	mi     *gamev1.MapInstance // the object, its status being rewritten
	before *gamev1.MapInstance // as read, or as last written mid-reconcile
	now    time.Time
	// Learned by the phases, in their order.
	room     *gamev1.GameRoom
	settings *gamev1.RoomSettings
	// content is the pack revision the pod runs.
	content  MapContent
	exposure exposure
	desired  *corev1.Pod // the pod the inputs ask for
	pod      *corev1.Pod // the pod that serves the map now, if any
	renewed  time.Time   // when the pod last renewed its Lease (mapinstance_lease.go)
	recreate bool        // a failed handover: replace the pod
	heldLate bool        // its heartbeat is late and its failure waits its turn
	wait     time.Duration
	// routedPod is the pod the map's Service was pointed at by
	// readyExposure: routeServingPod writes again only when the status
	// names another by then.
	routedPod string
}

// errNothingToRun ends a reconcile early and without an error: the map's
// room is gone or dropped it, and the MapInstance goes with it; or (as
// errPackUnchecked) its pack is not checked yet, and the pack's status
// update wakes the map.
var (
	errNothingToRun  = errors.New("nothing to run")
	errPackUnchecked = fmt.Errorf("the map's content pack is not checked yet: %w", errNothingToRun)
)

// reconcileStep is one step of a MapInstance's reconcile.
type reconcileStep func(*MapInstanceReconciler, context.Context, *mapScope) error

// reconcileSteps are the steps of a MapInstance's reconcile, in order (method
// expressions: a reconcile allocates nothing to walk them).
var reconcileSteps = []reconcileStep{
	(*MapInstanceReconciler).loadRoom,        // the GameRoom the map runs from
	(*MapInstanceReconciler).loadContent,     // the content pack's revision it runs
	(*MapInstanceReconciler).readyExposure,   // a host port, or the Gateway's route, before the pod
	(*MapInstanceReconciler).buildDesiredPod, // the pod the inputs ask for
	(*MapInstanceReconciler).loadPod,         // the pod serving the map now
	(*MapInstanceReconciler).handOverDeleted, // someone deleted the serving pod: hand it over
	(*MapInstanceReconciler).readLease,       // the pod's Lease, renewed between heartbeats
	(*MapInstanceReconciler).recordFailure,   // a pod that ended, vanished or went silent
	(*MapInstanceReconciler).advanceHandover, // a successor on its way
	(*MapInstanceReconciler).runPod,          // create or replace the pod, with backoff
	(*MapInstanceReconciler).reportPod,       // what the pod says, the public endpoint, emptiness
	(*MapInstanceReconciler).routeServingPod, // behind a Gateway, the map's path to the pod serving it
	(*MapInstanceReconciler).scheduleNext,    // when to look again
}

// loadRoom finds the map's GameRoom and its settings.
func (r *MapInstanceReconciler) loadRoom(ctx context.Context, s *mapScope) error {
	room, err := r.roomOf(ctx, s.mi)
	switch {
	case err != nil:
		return r.reportBlocked(s.mi, err, s.now)
	case room == nil:
		return errNothingToRun
	}
	s.room, s.settings = room, &room.Spec.RoomSettings
	s.mi.Status.PodReplacement = s.settings.Replacement()
	return nil
}

// loadContent finds the map's content pack (internal/packs): a
// GameContent's valid revision, or a built-in pack. A pack that is missing
// or has never been valid blocks a map without a pod; a running pod keeps
// the revision it runs, and the room's ContentValid condition says why.
func (r *MapInstanceReconciler) loadContent(ctx context.Context, s *mapScope) error {
	m, ok := s.room.Spec.Map(s.mi.Spec.MapName)
	if !ok {
		return nil // buildDesiredPod reports it
	}
	src, err := packs.Find(ctx, r.Client, s.mi.Namespace, m.Config.Content)
	_, configMap := src.Revision()
	var problem *blockedError
	switch {
	case errors.Is(err, packs.ErrNotFound):
		problem = blocked(gamev1.ReasonPackNotFound, err.Error())
	case err != nil:
		return err
	case src.Content == nil || configMap != "": // a built-in pack, or a valid revision
		s.content = MapContent{Name: src.Name, ConfigMap: configMap}
		return nil
	case src.Problem() == "":
		return errPackUnchecked
	default:
		problem = blocked(gamev1.ReasonPackInvalid, fmt.Sprintf("content pack %s is invalid and has no valid revision: %s",
			src.Name, firstLine(src.Problem())))
	}
	// A running pod keeps the revision it runs: its inputs stay as they
	// are, so nothing rolls it, and a successor runs the same.
	if s.mi.Status.PodName != "" {
		pod, err := r.currentPod(ctx, s.mi)
		if err != nil || pod != nil {
			s.content = contentOf(pod)
			return err
		}
	}
	return r.reportBlocked(s.mi, problem, s.now)
}

// readyExposure readies the map's exposure (exposure.go) before its pod.
func (r *MapInstanceReconciler) readyExposure(ctx context.Context, s *mapScope) (err error) {
	s.exposure, err = r.prepareExposure(ctx, s.before, s.mi, &s.settings.Exposure)
	s.routedPod = s.mi.Status.PodName
	return err
}

// buildDesiredPod builds the pod the map's inputs ask for.
func (r *MapInstanceReconciler) buildDesiredPod(_ context.Context, s *mapScope) error {
	desired, err := BuildPodWith(s.mi, s.room, r.Pods, s.content)
	if err != nil {
		return r.reportBlocked(s.mi, invalidPod(err), s.now)
	}
	s.desired = desired
	return nil
}

// loadPod finds the pod serving the map now.
func (r *MapInstanceReconciler) loadPod(ctx context.Context, s *mapScope) error {
	pod, err := r.currentPod(ctx, s.mi)
	if err != nil {
		return r.reportBlocked(s.mi, err, s.now)
	}
	s.pod = pod
	return nil
}

// handOverDeleted starts a handover when someone else deleted the pod
// serving the map (mapinstance_handover.go).
func (r *MapInstanceReconciler) handOverDeleted(ctx context.Context, s *mapScope) error {
	if !deletedWhileServing(s.mi, s.pod, r.expectedPod(s.mi)) {
		return nil
	}
	_, err := r.startHandover(ctx, s, s.pod, "being deleted") // none started: the pod drains as it stops
	return err
}

// heartbeatTimeout is the room's, or the default before the room is known.
func (s *mapScope) heartbeatTimeout() time.Duration {
	if s.settings == nil {
		return gamev1.DefaultHeartbeatTimeout
	}
	return s.settings.RestartPolicy.HeartbeatTimeoutOrDefault()
}

// recordFailure counts a failed pod toward backoff and quarantine.
func (r *MapInstanceReconciler) recordFailure(ctx context.Context, s *mapScope) (err error) {
	s.pod, s.heldLate, err = r.detectFailure(ctx, s.before, s.mi, &s.settings.RestartPolicy, s.pod, s.renewed, s.now)
	return err
}

// advanceHandover moves a handover under way along.
func (r *MapInstanceReconciler) advanceHandover(ctx context.Context, s *mapScope) (err error) {
	if s.mi.Status.Handover == nil {
		return nil
	}
	s.pod, s.recreate, err = r.continueHandover(ctx, s.before, s.mi, s.pod, &s.settings.Exposure, s.now)
	if err != nil || !s.recreate {
		return err
	}
	// Abandoned while the old pod, deleted by someone else, still serves
	// (its successor evicted by a drain, say): another successor starts
	// now. Nothing else would wake the map before that pod's wait ran out.
	return r.handOverDeleted(ctx, s)
}

// runPod creates the pod, or replaces an outdated one, unless the
// exposure holds a map without a pod back.
func (r *MapInstanceReconciler) runPod(ctx context.Context, s *mapScope) (err error) {
	if s.exposure.holdPod && s.pod == nil {
		return nil
	}
	if s.wait, s.pod, err = r.syncPod(ctx, s); err != nil {
		return r.reportBlocked(s.mi, err, s.now)
	}
	return nil
}

// reportPod puts what the pod says in the status, with the map's public
// endpoint and since when it has been empty.
func (r *MapInstanceReconciler) reportPod(ctx context.Context, s *mapScope) error {
	now := metav1.NewTime(s.now)
	s.mi.Status = observePod(s.mi.Status, s.pod, s.mi.Generation, now)
	if err := r.publishEndpoint(ctx, s.mi, &s.settings.Exposure, s.pod, s.exposure, now); err != nil {
		return err
	}
	s.mi.Status.EmptySince = instanced.TrackEmpty(s.mi, now)
	r.skipFirstPending(s.before, s.mi, s.pod, s.exposure)
	return nil
}

// routeServingPod leads the map's own path on the Gateway to the pod
// the status names now (exposure_gateway.go): a handover moves it there
// in the reconcile that moves the map.
func (r *MapInstanceReconciler) routeServingPod(ctx context.Context, s *mapScope) error {
	if s.settings.Exposure.Type != gamev1.ExposureGateway || !r.GatewayAPI {
		return nil
	}
	return r.routeMapPath(ctx, s.mi, s.pod, s.mi.Status.PodName != s.routedPod)
}

// scheduleNext brings the next look forward for an exposure that waits
// on something, and for a handover's deadline.
func (r *MapInstanceReconciler) scheduleNext(_ context.Context, s *mapScope) error {
	if s.exposure.waiting() && (s.wait == 0 || s.wait > exposureRetry) {
		s.wait = exposureRetry
	}
	if h := s.mi.Status.Handover; h != nil && h.Endpoint == "" {
		if due := max(h.Started.Add(handoverTimeout).Sub(s.now), time.Second); s.wait == 0 || s.wait > due {
			s.wait = due
		}
	}
	// A held map asks for its turn when the next one comes, not every
	// second as an overdue heartbeat would: each ask lists every map.
	if s.heldLate && (s.wait == 0 || s.wait > droughtFailureInterval) {
		s.wait = droughtFailureInterval
	}
	return nil
}

// writeStatusNow writes the status in the middle of a reconcile, for a
// step that must not come before the API server has it (deleting a failed
// pod, a pod asking for its host port, the old pod told where to hand
// over); before becomes what was written, so the reconcile's final write
// sends only what changed after. A write that lost a conflict puts mi's
// status back as read: the reconcile ends (conflictRetry), and its final
// write would only lose again.
func (r *MapInstanceReconciler) writeStatusNow(ctx context.Context, before, mi *gamev1.MapInstance) error {
	if err := r.written.updateStatus(ctx, r.Client, before, mi, before.Status, mi.Status); err != nil {
		if apierrors.IsConflict(err) {
			before.Status.DeepCopyInto(&mi.Status)
		}
		return err
	}
	mi.DeepCopyInto(before)
	return nil
}
