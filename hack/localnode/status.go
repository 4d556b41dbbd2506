package main

import (
	"os"
	"strconv"
	"syscall"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

// Reasons the agent reports, the kubelet's where one fits.
const (
	reasonConfigError  = "CreateContainerConfigError"
	reasonCreating     = "ContainerCreating"
	reasonCannotRun    = "ContainerCannotRun"
	reasonUnsupported  = "UnsupportedByLocalnode"
	reasonError        = "Error"
	reasonCompleted    = "Completed"
	reasonNotReady     = "ContainersNotReady"
	cannotRunExitCode  = 128
	containerIDPrefix  = "localnode://"
	signalExitCodeBase = 128
)

// runState is what the agent knows about a pod's process. The pod status is a
// pure function of it (applyStatus).
type runState struct {
	podIP    string
	binary   string
	pid      int
	started  time.Time // zero until the process runs
	ready    bool      // the readiness probe passes
	exited   bool      // the process has ended
	exitCode int32
	finished time.Time
	// waitReason and message say why the process does not run yet; with
	// failed set, why it never will.
	waitReason, message string
	failed              bool
}

// exitCodeOf is the container exit code of a finished process: its exit
// status, or 128+signal when a signal killed it.
func exitCodeOf(ps *os.ProcessState) int32 {
	if ws, ok := ps.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		return signalExitCodeBase + int32(ws.Signal())
	}
	return int32(ps.ExitCode())
}

// phaseOf is the pod phase for s.
func phaseOf(s runState) corev1.PodPhase {
	switch {
	case s.failed:
		return corev1.PodFailed
	case s.exited && s.exitCode == 0:
		return corev1.PodSucceeded
	case s.exited:
		return corev1.PodFailed
	case !s.started.IsZero():
		return corev1.PodRunning
	default:
		return corev1.PodPending
	}
}

// applyStatus writes s into pod.Status as a kubelet on a node at hostIP
// would at now.
func applyStatus(pod *corev1.Pod, s runState, hostIP string, now time.Time) {
	st := &pod.Status
	st.Phase = phaseOf(s)
	st.HostIP = hostIP
	st.HostIPs = []corev1.HostIP{{IP: hostIP}}
	if s.podIP != "" {
		st.PodIP = s.podIP
		st.PodIPs = []corev1.PodIP{{IP: s.podIP}}
	}
	if st.StartTime == nil {
		st.StartTime = ptr.To(metav1.NewTime(now))
	}
	st.Reason, st.Message = "", ""
	if s.failed {
		st.Reason, st.Message = s.waitReason, s.message
	}
	ready := s.ready && st.Phase == corev1.PodRunning
	setCondition(st, corev1.PodScheduled, true, "", now)
	setCondition(st, corev1.PodInitialized, true, "", now)
	setCondition(st, corev1.ContainersReady, ready, reasonNotReady, now)
	setCondition(st, corev1.PodReady, ready, reasonNotReady, now)
	st.ContainerStatuses = nil
	for i, c := range pod.Spec.Containers {
		cs := corev1.ContainerStatus{Name: c.Name, Image: c.Image, ImageID: c.Image}
		if i == 0 {
			cs = containerStatus(c, s, ready)
		}
		if cs.State == (corev1.ContainerState{}) {
			cs.State.Waiting = &corev1.ContainerStateWaiting{Reason: reasonUnsupported}
		}
		st.ContainerStatuses = append(st.ContainerStatuses, cs)
	}
}

// containerStatus is the status of the container the process runs.
func containerStatus(c corev1.Container, s runState, ready bool) corev1.ContainerStatus {
	cs := corev1.ContainerStatus{
		Name: c.Name, Image: c.Image, ImageID: c.Image,
		Ready: ready, Started: ptr.To(!s.started.IsZero() && !s.exited),
	}
	if s.pid != 0 {
		cs.ContainerID = containerIDPrefix + s.binary + "@" + strconv.Itoa(s.pid)
	}
	started := metav1.NewTime(s.started)
	switch {
	case s.exited:
		reason := reasonError
		if s.exitCode == 0 {
			reason = reasonCompleted
		}
		cs.State.Terminated = &corev1.ContainerStateTerminated{
			ExitCode: s.exitCode, Reason: reason,
			StartedAt: started, FinishedAt: metav1.NewTime(s.finished),
		}
	case s.failed:
		cs.State.Terminated = &corev1.ContainerStateTerminated{
			ExitCode: cannotRunExitCode, Reason: reasonCannotRun, Message: s.message,
		}
	case !s.started.IsZero():
		cs.State.Running = &corev1.ContainerStateRunning{StartedAt: started}
	default:
		cs.State.Waiting = &corev1.ContainerStateWaiting{Reason: s.waitReason, Message: s.message}
	}
	return cs
}

// setCondition sets a pod condition, moving its transition time only when
// its status changes. reason is used when the condition is False.
func setCondition(st *corev1.PodStatus, t corev1.PodConditionType, ok bool, reason string, now time.Time) {
	status, why := corev1.ConditionTrue, ""
	if !ok {
		status, why = corev1.ConditionFalse, reason
	}
	for i := range st.Conditions {
		c := &st.Conditions[i]
		if c.Type != t {
			continue
		}
		if c.Status != status {
			c.LastTransitionTime = metav1.NewTime(now)
		}
		c.Status, c.Reason = status, why
		return
	}
	st.Conditions = append(st.Conditions, corev1.PodCondition{
		Type: t, Status: status, Reason: why, LastTransitionTime: metav1.NewTime(now),
	})
}
