package controllers

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	gamev1 "github.com/roomkeeper/roomkeeper/api/v1"
)

// A pod replacement by handover (spec.podReplacement Handover), in three
// steps recorded in status.handover so that a restarted operator carries on:
//
//  1. The running pod is outdated, or is being deleted by someone else
//     (kubectl delete pod, a node drain's eviction): the new pod is created
//     beside it, and the old one keeps serving (a deleted one for as long
//     as its grace period lets it wait, cmd/roomserver).
//  2. The new pod is Ready: status names it (podName, endpoint: new joins go
//     there) and handover.endpoint is set, in one write that lands before
//     the old pod is deleted. The old pod, told to stop, reads the endpoint
//     in its heartbeats' answers and hands every connected player over
//     (a transfer to the same map: its state committed, its lease moved),
//     then stops as any drained pod does.
//  3. The old pod is gone: status.handover is cleared.
//
// If the new pod fails, or is not Ready within handoverTimeout, or the old
// pod fails first, the handover is abandoned: the new pod is deleted and the
// map goes on as without one (an outdated pod is then recreated). An old
// pod that is gone (not failed) before the new one is Ready leaves the new
// one as the map's pod: its players resume there.

// handoverTimeout bounds how long a new pod may take to become Ready.
const handoverTimeout = 2 * time.Minute

// EventHandover, on a MapInstance: a pod replacement by handover started,
// handed the players over, or was abandoned (Warning).
const EventHandover = "PodHandover"

// successorName is the name of the pod that takes over from pod: the
// input hash and pod's UID make it differ from every earlier pod's, and a
// reconcile whose status write was lost finds the one it made.
func successorName(mi *gamev1.MapInstance, desired, pod *corev1.Pod) (string, error) {
	suffix, err := hashJSON([]string{desired.Annotations[gamev1.AnnotationInputHash], string(pod.UID)})
	return mi.Name + "-" + suffix, err
}

// deletedWhileServing reports whether pod, the map's running pod, is being
// deleted by someone else with a grace period to hand its players over in.
func deletedWhileServing(mi *gamev1.MapInstance, pod *corev1.Pod, expected string) bool {
	return mi.Status.HandsOver() && mi.Status.Handover == nil && pod != nil && pod.Name == expected &&
		pod.DeletionTimestamp != nil && pod.Status.Phase == corev1.PodRunning
}

// handingOverFrom reports whether a handover takes the players of pod over:
// its deletion is then the handover's doing, no failure.
func handingOverFrom(mi *gamev1.MapInstance, pod string) bool {
	return mi.Status.Handover != nil && mi.Status.Handover.From == pod
}

// startHandover creates the pod that takes over from the running pod,
// outdated or being deleted (why), and records the handover; the old pod
// serves on meanwhile. Under exposure HostPort the new pod gets a host
// port of its own, recorded before the pod exists; with none free in the
// range (or the namespace's share) no handover starts: ok is false, and
// the pod is replaced the plain way.
func (r *MapInstanceReconciler) startHandover(ctx context.Context, s *mapScope, pod *corev1.Pod, why string) (ok bool, _ error) {
	mi, next := s.mi, s.desired.DeepCopy()
	h := &gamev1.Handover{From: pod.Name, Started: metav1.NewTime(s.now)}
	if s.settings.Exposure.Type == gamev1.ExposureHostPort {
		port, free, err := r.ports().assign(handoverPortKey(client.ObjectKeyFromObject(mi)), 0)
		if err != nil || !free {
			r.Recorder.Eventf(mi, pod, corev1.EventTypeWarning, EventHandover, "StartHandover",
				"Pod %s is %s, and no host port is free for a pod to take its players over: it is replaced the plain way", pod.Name, why)
			return false, err
		}
		if next, err = r.successorOnPort(s, port); err != nil {
			return false, err
		}
		h.HostPort = port
	}
	name, err := successorName(mi, next, pod)
	if err != nil {
		return false, err
	}
	if name, err = r.freeSuccessorName(ctx, mi, name); err != nil {
		return false, err
	}
	next.Name, h.To = name, name
	next.Labels[labelPod] = podKey(name) // for the Service of its own route behind a Gateway
	// The handover is recorded before its pod exists: the new pod asks its
	// MapInstance at start whether it takes a handover (and may write its
	// heartbeat only once status names it), and no pod ever uses a host
	// port the statuses do not record.
	mi.Status.Handover = h
	if err := r.writeStatusNow(ctx, s.before, mi); err != nil {
		return false, fmt.Errorf("recording the handover: %w", err)
	}
	err = r.Create(ctx, next, client.FieldOwner(gamev1.FieldManagerOperator))
	if apierrors.IsAlreadyExists(err) { // made by a reconcile whose status write was lost
		err = ownedLive(ctx, r.APIReader, r.Scheme(), next, mi)
	}
	if err != nil {
		return false, fmt.Errorf("creating the pod to hand over to: %w", err)
	}
	r.Recorder.Eventf(mi, pod, corev1.EventTypeNormal, EventHandover, "StartHandover",
		"Pod %s is %s: starting %s to take its players over", pod.Name, why, next.Name)
	return true, nil
}

// freeSuccessorName is name, or, while a pod of that name is stopping
// (an abandoned handover's successor, evicted by a drain with the manager
// that made it), a name derived from that pod: the new try starts its pod
// at once instead of waiting for the old one to go, which a deleted pod's
// wait for its successor may not outlast. A pod that ended and was left
// there (a manager lost before it deleted it) is deleted on the way.
func (r *MapInstanceReconciler) freeSuccessorName(ctx context.Context, mi *gamev1.MapInstance, name string) (string, error) {
	for range maxSuccessorRetries {
		stale, err := r.podNamed(ctx, r.Client, mi, name)
		if err != nil || stale == nil {
			return name, err
		}
		switch classifyPod(stale) {
		case podFailed:
			if err := r.Delete(ctx, stale, client.Preconditions{UID: &stale.UID}); err != nil && !apierrors.IsNotFound(err) {
				return "", fmt.Errorf("deleting pod %s: %w", stale.Name, err)
			}
		case podTerminating:
		default:
			return name, nil // a live successor: a reconcile whose status write was lost made it
		}
		suffix, err := hashJSON([]string{name, string(stale.UID)})
		if err != nil {
			return "", err
		}
		name = mi.Name + "-" + suffix
	}
	return "", fmt.Errorf("the %d names tried for the pod to hand over to are all taken by stopping pods", maxSuccessorRetries)
}

// maxSuccessorRetries bounds the names freeSuccessorName tries.
const maxSuccessorRetries = 4

// successorOnPort is the desired pod as it is once its host port is port:
// built so, its input hash is the one the map asks for once it takes the
// map over, and it is not replaced again for its port.
func (r *MapInstanceReconciler) successorOnPort(s *mapScope, port int32) (*corev1.Pod, error) {
	mi := s.mi.DeepCopy()
	mi.Status.HostPort = port
	return BuildPod(mi, s.room, r.Pods)
}

// continueHandover moves a handover on and returns the pod to report on.
// recreate is set when the handover was abandoned: the outdated pod is
// then replaced the plain way.
func (r *MapInstanceReconciler) continueHandover(ctx context.Context, before, mi *gamev1.MapInstance, pod *corev1.Pod,
	x *gamev1.Exposure, now time.Time) (_ *corev1.Pod, recreate bool, _ error) {
	h := mi.Status.Handover
	if h.Endpoint != "" { // step 3: waiting for the old pod to go
		return pod, false, r.awaitOldPod(ctx, mi, pod)
	}
	successor := ""
	if x.Type == gamev1.ExposureGateway && x.Gateway != nil {
		var err error
		if successor, err = r.attachSuccessorRoute(ctx, mi, x.Gateway, h.To); err != nil {
			return pod, false, err
		}
	}
	next, err := r.podNamed(ctx, r.Client, mi, h.To)
	if next == nil && err == nil { // the cache may not hold a pod made a moment ago yet
		next, err = r.podNamed(ctx, r.APIReader, mi, h.To)
	}
	if err != nil {
		return pod, false, err
	}
	state := classifyPod(next)
	switch {
	case (pod == nil || pod.Name != h.From) && mi.Status.PodName == h.From && (state == podPending || state == podStarting || state == podReady):
		r.adoptSuccessor(mi, next)
		return next, false, nil
	case pod == nil || pod.Name != h.From:
		return pod, true, r.abandonHandover(ctx, mi, next, "the old pod ended first")
	case state == podMissing || state == podFailed || state == podTerminating:
		return pod, true, r.abandonHandover(ctx, mi, next, fmt.Sprintf("pod %s failed", h.To))
	case state != podReady && now.Sub(h.Started.Time) >= handoverTimeout:
		return pod, true, r.abandonHandover(ctx, mi, next, fmt.Sprintf("pod %s was not Ready within %s", h.To, handoverTimeout))
	case state != podReady:
		return pod, false, nil
	case x.Type == gamev1.ExposureHostPort:
		address, err := r.nodeAddress(ctx, next.Spec.NodeName)
		if err != nil || address == "" {
			return pod, false, err // the node's address is soon known, or the handover times out
		}
		successor = hostPortEndpoint(address, h.HostPort)
	case x.Type != gamev1.ExposureGateway:
		successor = endpointFor(next.Status.PodIP)
	case successor == "" && now.Sub(h.Started.Time) >= handoverTimeout:
		return pod, true, r.abandonHandover(ctx, mi, next, fmt.Sprintf("the Gateway did not accept pod %s's route within %s", h.To, handoverTimeout))
	case successor == "":
		return pod, false, nil // the route's acceptance wakes the map
	}
	return next, false, r.handOver(ctx, before, mi, pod, next, successor)
}

// handOver is step 2: the new pod is the map's now, and the old one is
// told to stop once the endpoint it hands its players to is written.
func (r *MapInstanceReconciler) handOver(ctx context.Context, before, mi *gamev1.MapInstance, old, next *corev1.Pod, endpoint string) error {
	mi.Status.Handover.Endpoint = endpoint
	mi.Status.PodName = next.Name
	swapped := swapHostPorts(&mi.Status)
	if err := r.writeStatusNow(ctx, before, mi); err != nil {
		return fmt.Errorf("recording the handover: %w", err)
	}
	if swapped { // once the statuses say so, as a restarted manager reads them
		key := client.ObjectKeyFromObject(mi)
		r.ports().swap(key, handoverPortKey(key))
	}
	return r.stopHandedOver(ctx, mi, old, next)
}

// stopHandedOver deletes the old pod of a handover whose endpoint is
// written: on SIGTERM it hands its players over to next and stops.
func (r *MapInstanceReconciler) stopHandedOver(ctx context.Context, mi *gamev1.MapInstance, old, next *corev1.Pod) error {
	if err := r.Delete(ctx, old, client.Preconditions{UID: &old.UID}); err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("stopping pod %s: %w", old.Name, err)
	}
	r.Recorder.Eventf(mi, next, corev1.EventTypeNormal, EventHandover, "HandOver",
		"Pod %s is Ready: %s hands its players over to it and stops", next.Name, old.Name)
	return nil
}

// awaitOldPod is step 3: the handover is over once the old pod is gone.
// An old pod not even being deleted was never told to stop: the operator
// stopped between step 2's status write and the deletion (a restart, a
// new leader), so the deletion is made now. The API server, not the
// cache, says so, since the cache may not show a deletion just made.
func (r *MapInstanceReconciler) awaitOldPod(ctx context.Context, mi *gamev1.MapInstance, next *corev1.Pod) error {
	from := mi.Status.Handover.From
	old, err := r.podNamed(ctx, r.Client, mi, from)
	if err == nil && old != nil && old.DeletionTimestamp == nil {
		old, err = r.podNamed(ctx, r.APIReader, mi, from)
	}
	switch {
	case err != nil:
		return err
	case old == nil:
		mi.Status.Handover = nil
		r.ports().release(handoverPortKey(client.ObjectKeyFromObject(mi))) // the old pod's
		return r.deletePodRoute(ctx, mi, from)
	case old.DeletionTimestamp == nil && next != nil:
		return r.stopHandedOver(ctx, mi, old, next)
	}
	return nil
}

// adoptSuccessor makes the pod that was to take over the map's pod when
// the old one is gone (not failed) before the handover (a deletion whose
// grace period ran out): the old pod's players resume on it.
func (r *MapInstanceReconciler) adoptSuccessor(mi *gamev1.MapInstance, next *corev1.Pod) {
	r.Recorder.Eventf(mi, next, corev1.EventTypeNormal, EventHandover, "AdoptSuccessor",
		"Pod %s is gone before it handed its players over to %s: they resume on the new pod", mi.Status.Handover.From, next.Name)
	if swapHostPorts(&mi.Status) { // the new pod's port is the map's; the old pod's is free
		key := client.ObjectKeyFromObject(mi)
		r.ports().swap(key, handoverPortKey(key))
		r.ports().release(handoverPortKey(key))
	}
	mi.Status.PodName, mi.Status.Handover = next.Name, nil
}

// swapHostPorts makes a handover's host port the map's, and the map's the
// handover's until the old pod is gone (exposure HostPort); false when
// the handover holds no port.
func swapHostPorts(status *gamev1.MapInstanceStatus) bool {
	h := status.Handover
	if h == nil || h.HostPort == 0 {
		return false
	}
	status.HostPort, h.HostPort = h.HostPort, status.HostPort
	return true
}

// abandonHandover deletes the pod that was to take over and forgets the
// handover.
func (r *MapInstanceReconciler) abandonHandover(ctx context.Context, mi *gamev1.MapInstance, next *corev1.Pod, why string) error {
	if next != nil && next.DeletionTimestamp == nil {
		if err := r.Delete(ctx, next, client.Preconditions{UID: &next.UID}); err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("deleting pod %s: %w", next.Name, err)
		}
	}
	to := mi.Status.Handover.To
	r.Recorder.Eventf(mi, relatedPod(next), corev1.EventTypeWarning, EventHandover, "AbandonHandover",
		"Handover to %s abandoned: %s", to, why)
	mi.Status.Handover = nil
	r.ports().release(handoverPortKey(client.ObjectKeyFromObject(mi))) // the new pod's
	return r.deletePodRoute(ctx, mi, to)
}

// podNamed is the MapInstance's pod called name, as reader has it; nil
// when there is none.
func (r *MapInstanceReconciler) podNamed(ctx context.Context, reader client.Reader, mi *gamev1.MapInstance, name string) (*corev1.Pod, error) {
	pod := &corev1.Pod{}
	err := reader.Get(ctx, client.ObjectKey{Namespace: mi.Namespace, Name: name}, pod)
	switch {
	case apierrors.IsNotFound(err):
		return nil, nil
	case err != nil:
		return nil, fmt.Errorf("reading pod %s: %w", name, err)
	}
	return pod, ownedBy(r.Scheme(), pod, mi)
}
