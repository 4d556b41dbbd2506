package controllers

import (
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	gamev1 "github.com/roomkeeper/roomkeeper/api/v1"
)

// podState is what the operator makes of a map pod.
type podState int

const (
	podMissing podState = iota
	podPending
	podStarting
	podReady
	podFailed
	podTerminating
)

func classifyPod(pod *corev1.Pod) podState {
	switch {
	case pod == nil:
		return podMissing
	case pod.DeletionTimestamp != nil:
		return podTerminating
	case pod.Status.Phase == corev1.PodFailed || pod.Status.Phase == corev1.PodSucceeded:
		return podFailed
	case pod.Status.Phase != corev1.PodRunning:
		return podPending
	case podConditionTrue(pod, corev1.PodReady):
		return podReady
	default:
		return podStarting
	}
}

func podConditionTrue(pod *corev1.Pod, t corev1.PodConditionType) bool {
	for _, c := range pod.Status.Conditions {
		if c.Type == t {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// observePod returns status updated from the map's pod: podName, endpoint,
// the PodHealthy and Ready conditions and the phase. It leaves the fields the
// pod itself reports (players, tick, checkpoint, heartbeat) alone.
func observePod(status gamev1.MapInstanceStatus, pod *corev1.Pod, generation int64, now metav1.Time) gamev1.MapInstanceStatus {
	out := *status.DeepCopy()
	state := classifyPod(pod)
	if state == podTerminating && servesUntilHandover(status, pod) {
		serving := *pod
		serving.DeletionTimestamp = nil
		state = classifyPod(&serving)
	}

	// podName is the pod the operator expects to run: a pod on its way out
	// keeps whatever the reconcile decided (cleared when the operator
	// deleted it), so a later disappearance is only a failure when someone
	// else removed it.
	out.Endpoint = ""
	switch {
	case pod == nil:
		out.PodName = ""
	case state != podTerminating:
		out.PodName = pod.Name
	}
	if pod != nil && pod.Status.PodIP != "" && (state == podStarting || state == podReady) {
		out.Endpoint = endpointFor(pod.Status.PodIP)
	}

	healthy, healthReason, ready, readyReason := podConditions(state)
	message := podMessage(pod, state)
	if state == podStarting && status.WaitingFor != "" {
		readyReason, message = gamev1.ReasonWaitingForDatabase, "Waiting for the database: "+status.WaitingFor
	}
	setCondition(&out.Conditions, gamev1.ConditionPodHealthy, boolStatus(healthy), healthReason, message, generation, now)
	setCondition(&out.Conditions, gamev1.ConditionReady, boolStatus(ready), readyReason, message, generation, now)
	if out.QuarantinedUntil != nil {
		setCondition(&out.Conditions, gamev1.ConditionQuarantined, metav1.ConditionTrue, gamev1.ReasonCrashLoop,
			fmt.Sprintf("Failed %d times inside the restart window; no pod until %s", len(out.RecentRestarts),
				out.QuarantinedUntil.UTC().Format(time.RFC3339)), generation, now)
	} else {
		setCondition(&out.Conditions, gamev1.ConditionQuarantined, metav1.ConditionFalse,
			gamev1.ReasonWithinRestartBudget, "", generation, now)
	}
	setWorldCondition(&out, generation, now)
	out.Phase = mapPhase(out, state)
	out.ObservedGeneration = generation
	return out
}

// setWorldCondition says whether the pod writes the map's world
// checkpoints, from what its heartbeat reports (status.world).
func setWorldCondition(status *gamev1.MapInstanceStatus, generation int64, now metav1.Time) {
	switch w := status.World; {
	case w == nil:
		meta.RemoveStatusCondition(&status.Conditions, gamev1.ConditionWorldCheckpointed)
	case w.LastError != "":
		setCondition(&status.Conditions, gamev1.ConditionWorldCheckpointed, metav1.ConditionFalse,
			gamev1.ReasonWorldCheckpointFailing, "World checkpoints fail: "+w.LastError, generation, now)
	default:
		setCondition(&status.Conditions, gamev1.ConditionWorldCheckpointed, metav1.ConditionTrue,
			gamev1.ReasonWorldCheckpointed, "The map's world is checkpointed (status.world)", generation, now)
	}
}

// servesUntilHandover reports whether pod, deleted by someone else, serves
// on (it admits players, who are handed over with the others) until the
// pod taking over from it is Ready.
func servesUntilHandover(status gamev1.MapInstanceStatus, pod *corev1.Pod) bool {
	h := status.Handover
	return h != nil && h.From == pod.Name && h.Endpoint == ""
}

// podConditions maps a pod state to the PodHealthy and Ready conditions.
func podConditions(state podState) (healthy bool, healthReason string, ready bool, readyReason string) {
	switch state {
	case podReady:
		return true, gamev1.ReasonPodRunning, true, gamev1.ReasonPodReady
	case podStarting:
		return true, gamev1.ReasonPodRunning, false, gamev1.ReasonPodNotReady
	case podPending:
		return false, gamev1.ReasonPodPending, false, gamev1.ReasonPodPending
	case podFailed:
		return false, gamev1.ReasonPodFailed, false, gamev1.ReasonPodFailed
	case podTerminating:
		return false, gamev1.ReasonPodTerminating, false, gamev1.ReasonPodTerminating
	default:
		return false, gamev1.ReasonPodMissing, false, gamev1.ReasonPodMissing
	}
}

// podMessage explains the pod state to a human reading the conditions.
func podMessage(pod *corev1.Pod, state podState) string {
	switch state {
	case podMissing:
		return "No room-server pod exists"
	case podFailed:
		if t := terminatedState(pod); t != nil {
			return fmt.Sprintf("Room server exited with code %d (%s)", t.ExitCode, t.Reason)
		}
		return fmt.Sprintf("Pod %s is %s", pod.Name, pod.Status.Phase)
	default:
		return fmt.Sprintf("Pod %s is %s", pod.Name, pod.Status.Phase)
	}
}

// terminatedState is the room-server container's last termination, if any.
func terminatedState(pod *corev1.Pod) *corev1.ContainerStateTerminated {
	for _, cs := range pod.Status.ContainerStatuses {
		if cs.Name == roomServerContainer && cs.State.Terminated != nil {
			return cs.State.Terminated
		}
	}
	return nil
}

// mapPhase summarises a MapInstance in one word for `kubectl get mi`.
func mapPhase(status gamev1.MapInstanceStatus, state podState) gamev1.MapInstancePhase {
	switch {
	case meta.IsStatusConditionTrue(status.Conditions, gamev1.ConditionQuarantined):
		return gamev1.MapQuarantined
	case state == podTerminating:
		return gamev1.MapDraining
	case state == podReady:
		return gamev1.MapReady
	case state == podFailed || status.NextRestartAt != nil:
		return gamev1.MapBackoff
	case state == podStarting:
		return gamev1.MapStarting
	default:
		return gamev1.MapPending
	}
}
