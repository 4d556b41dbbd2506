package main

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"
)

// Timings of a pod's life on the node.
const (
	retryInterval      = 2 * time.Second  // between attempts to start a pod whose config is not there yet
	refreshInterval    = 5 * time.Second  // between rewrites of Secret and ConfigMap volumes
	reportRetry        = 5 * time.Second  // between writes of a pod status the API server did not take
	shutdownGrace      = 10 * time.Second // SIGTERM to SIGKILL when the agent stops
	minGrace           = 2 * time.Second  // the kubelet's floor for a deletion's grace period
	defaultGrace       = 30 * time.Second // terminationGracePeriodSeconds unset
	killWait           = 10 * time.Second // how long to wait for a SIGKILLed process
	volumesDirName     = "volumes"
	logFileName        = "log"
	podDirPermissions  = 0o755
	statusTimeout      = apiTimeout
	maxConflictRetries = 5
)

// podRunner owns one pod's process from start to deletion. Only its run
// goroutine touches state and proc; the informer only calls markDeleting.
type podRunner struct {
	agent *agent
	pod   *corev1.Pod // as first seen; its spec does not change
	log   logr.Logger
	dir   string
	get   secretGetter

	deleting   chan struct{} // closed when the pod is being deleted or is gone
	deleteOnce sync.Once
	grace      atomic.Int64 // nanoseconds the process gets after SIGTERM

	state   runState
	proc    *process
	probe   readiness
	volumes map[string]string // volume name -> local directory
	creds   *credentials      // nil: the pod has no ServiceAccount token
	ports   *forwarder        // the host ports, while the process runs
	// unreported: the last status write failed, and is made again every
	// reportRetry until one succeeds.
	unreported bool
}

func newPodRunner(a *agent, pod *corev1.Pod) *podRunner {
	r := &podRunner{
		agent: a, pod: pod.DeepCopy(), dir: a.podDir(pod),
		log:      a.log.WithValues("pod", pod.Namespace+"/"+pod.Name),
		get:      a.getter(pod.Namespace),
		deleting: make(chan struct{}),
	}
	r.grace.Store(int64(graceOf(pod)))
	return r
}

// graceOf is how long the pod's process gets between SIGTERM and SIGKILL.
func graceOf(pod *corev1.Pod) time.Duration {
	grace := defaultGrace
	if s := pod.DeletionGracePeriodSeconds; s != nil {
		grace = time.Duration(*s) * time.Second
	} else if s := pod.Spec.TerminationGracePeriodSeconds; s != nil {
		grace = time.Duration(*s) * time.Second
	}
	return max(grace, minGrace)
}

// markDeleting tells the runner to stop the pod. Safe to call many times.
func (r *podRunner) markDeleting(pod *corev1.Pod) {
	r.deleteOnce.Do(func() {
		r.grace.Store(int64(graceOf(pod)))
		close(r.deleting)
	})
}

// run is the pod's life: start, supervise, and on deletion stop and clean up.
// When ctx ends first, the process is stopped and the pod left as it is.
func (r *podRunner) run(ctx context.Context) {
	defer r.agent.forget(r.pod.UID)
	if r.start(ctx) && !r.supervise(ctx) {
		return
	}
	if !r.awaitDeletion(ctx) {
		return
	}
	r.agent.confirmDeletion(ctx, r.pod)
	r.keepLog()
	if err := os.RemoveAll(r.dir); err != nil {
		r.log.Error(err, "Removing the pod directory failed")
	}
	if r.state.podIP != "" {
		r.agent.ips.release(r.state.podIP)
	}
	r.log.Info("Pod deleted")
}

// awaitDeletion waits for the pod's deletion, writing a status the API
// server did not take meanwhile; false when the agent stopped first.
func (r *podRunner) awaitDeletion(ctx context.Context) bool {
	retry := time.NewTicker(reportRetry)
	defer retry.Stop()
	for {
		select {
		case <-ctx.Done():
			return false
		case <-r.deleting:
			return true
		case <-retry.C:
			r.reportAgain(ctx)
		}
	}
}

// keepLog moves the deleted pod's log where --deleted-pod-logs says, so
// that what a pod said before a test or a soak deleted it can be read.
func (r *podRunner) keepLog() {
	dir := r.agent.cfg.deletedLogs
	if dir == "" {
		return
	}
	kept := filepath.Join(dir, fmt.Sprintf("%s_%s_%s.log", r.pod.Namespace, r.pod.Name, r.pod.UID))
	err := os.MkdirAll(dir, podDirPermissions)
	if err == nil {
		err = os.Rename(filepath.Join(r.dir, logFileName), kept)
	}
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		r.log.Error(err, "Keeping the deleted pod's log failed")
	}
}

// start prepares and starts the process, retrying while its config is
// missing. It reports false when the pod cannot run, is deleted first or
// the agent stops.
func (r *podRunner) start(ctx context.Context) bool {
	for attempt := 0; ; attempt++ {
		err := r.tryStart(ctx)
		if err == nil {
			r.log.Info("Process started", "pid", r.state.pid, "podIP", r.state.podIP)
			r.report(ctx)
			return true
		}
		r.state.waitReason, r.state.message = waitReasonOf(err), err.Error()
		if errors.Is(err, errUnsupported) {
			r.state.failed, r.state.waitReason = true, reasonUnsupported
			r.log.Info("Pod cannot run here", "reason", err.Error())
			r.report(ctx)
			return false
		}
		if attempt == 0 || attempt%30 == 0 {
			r.log.Info("Pod is waiting", "reason", err.Error())
			r.report(ctx)
		}
		select {
		case <-ctx.Done():
			return false
		case <-r.deleting:
			return false
		case <-time.After(retryInterval):
		}
	}
}

// waitError is a start failure shown with its own waiting reason.
type waitError struct {
	reason string
	err    error
}

func (e waitError) Error() string { return e.err.Error() }
func (e waitError) Unwrap() error { return e.err }

// creating marks a failure to set up what a kubelet sets up before the
// container (volumes it projects, the sandbox's host ports): the pod shows
// ContainerCreating.
func creating(err error) error {
	return waitError{reason: reasonCreating, err: err}
}

// waitReasonOf is the waiting reason a failed start attempt shows.
func waitReasonOf(err error) string {
	var w waitError
	if errors.As(err, &w) {
		return w.reason
	}
	return reasonConfigError
}

// tryStart is one attempt to start the process. Host ports are taken before
// the process starts, as a kubelet's sandbox has them before its containers.
func (r *podRunner) tryStart(ctx context.Context) error {
	binary, env, err := r.prepare(ctx)
	if err != nil {
		return err
	}
	c := r.pod.Spec.Containers[0]
	ports, err := forwardPorts(hostPorts(c, r.agent.cfg.nodeIP, r.state.podIP), r.log)
	if err != nil {
		return creating(err)
	}
	args := rewriteArgs(c.Args, r.mounts(c), r.state.podIP)
	if r.proc, err = startProcess(binary, args, env, r.dir, filepath.Join(r.dir, logFileName), r.agent.cfg.podNice, r.agent.cgroup); err != nil {
		ports.close()
		return err
	}
	r.ports = ports
	r.state.binary, r.state.pid, r.state.started = binary, r.proc.cmd.Process.Pid, time.Now()
	r.state.waitReason, r.state.message = "", ""
	r.probe = readiness{probe: c.ReadinessProbe, container: c, podIP: r.state.podIP}
	return nil
}

// prepare gets what the process needs: its binary, address, directory,
// volumes, credentials and environment.
func (r *podRunner) prepare(ctx context.Context) (binary string, env []string, err error) {
	if err := checkRunnable(r.pod); err != nil {
		return "", nil, err
	}
	if binary, err = resolveImage(r.agent.cfg.images, r.pod.Spec.Containers[0].Image); err != nil {
		return "", nil, err
	}
	if r.state.podIP == "" {
		if r.state.podIP, err = r.agent.ips.allocate(); err != nil {
			return "", nil, err
		}
	}
	if err := os.MkdirAll(r.dir, podDirPermissions); err != nil {
		return "", nil, err
	}
	if r.volumes, err = writeVolumes(ctx, r.get, r.pod, filepath.Join(r.dir, volumesDirName)); err != nil {
		return "", nil, err
	}
	if r.creds, err = r.agent.mountCredentials(ctx, r.pod, r.dir); err != nil {
		return "", nil, creating(err)
	}
	env, err = buildEnv(ctx, r.get, r.pod, r.baseEnv(), podAddrs{podIP: r.state.podIP, hostIP: r.agent.cfg.nodeIP})
	return binary, env, err
}

// baseEnv is what every process starts from: PATH, what a kubelet tells a
// container about the API server, and the pod's kubeconfig when it has
// credentials. The agent's own kubeconfig is never passed on.
func (r *podRunner) baseEnv() []string {
	env := append([]string{"PATH=" + os.Getenv("PATH")}, r.agent.api.serviceEnv()...)
	if r.creds != nil {
		env = append(env, "KUBECONFIG="+r.creds.kubeconfig)
	}
	return env
}

// mounts maps the container's mount paths, the ServiceAccount's included,
// to local directories.
func (r *podRunner) mounts(c corev1.Container) map[string]string {
	m := mountDirs(c, r.volumes)
	if r.creds != nil {
		m[serviceAccountMountPath] = r.creds.dir
	}
	return m
}

// supervise watches the running process: readiness probes, volume refresh,
// exit and deletion. It returns false when the agent stopped, true when the
// process ended by itself or for the pod's deletion.
func (r *podRunner) supervise(ctx context.Context) bool {
	defer r.ports.close()
	renew := r.tokenDue()
	probeTimer := time.NewTimer(r.probe.initialDelay())
	defer probeTimer.Stop()
	refresh := time.NewTicker(refreshInterval)
	defer refresh.Stop()
	retry := time.NewTicker(reportRetry)
	defer retry.Stop()
	for {
		select {
		case <-retry.C:
			r.reportAgain(ctx)
		case <-ctx.Done():
			r.stop(shutdownGrace)
			return false
		case <-r.deleting:
			r.stop(time.Duration(r.grace.Load()))
			return true
		case <-r.proc.exited:
			r.exited()
			r.report(ctx)
			return true
		case <-probeTimer.C:
			r.checkReadiness(ctx)
			probeTimer.Reset(r.probe.period())
		case <-refresh.C:
			if _, err := writeVolumes(ctx, r.get, r.pod, filepath.Join(r.dir, volumesDirName)); err != nil && ctx.Err() == nil {
				r.log.Error(err, "Refreshing volumes failed")
			}
		case <-renew:
			renew = r.renewToken(ctx)
		}
	}
}

// tokenDue fires when the pod's token is to be renewed; never for a pod
// without one.
func (r *podRunner) tokenDue() <-chan time.Time {
	if r.creds == nil {
		return nil
	}
	return time.After(time.Until(r.creds.renewAt))
}

// renewToken replaces the pod's token and says when to do it next. After a
// failure it retries soon: the old token is good for a fifth of its life.
func (r *podRunner) renewToken(ctx context.Context) <-chan time.Time {
	renewAt, err := r.agent.writeToken(ctx, r.pod, r.creds.dir)
	if err != nil {
		if ctx.Err() == nil {
			r.log.Error(err, "Renewing the ServiceAccount token failed")
		}
		return time.After(tokenRetryInterval)
	}
	r.creds.renewAt = renewAt
	r.log.Info("ServiceAccount token renewed", "next", renewAt)
	return r.tokenDue()
}

// checkReadiness probes once and reports a change.
func (r *podRunner) checkReadiness(ctx context.Context) {
	ready := r.probe.check(ctx, r.state.ready)
	if ready != r.state.ready {
		r.state.ready = ready
		r.log.Info("Readiness changed", "ready", ready)
		r.report(ctx)
	}
}

// exited records the end of the process.
func (r *podRunner) exited() {
	r.state.exited, r.state.ready = true, false
	r.state.exitCode, r.state.finished = r.proc.code, time.Now()
	r.log.Info("Process exited", "exitCode", r.state.exitCode)
}

// stop sends SIGTERM to the process group, SIGKILL after grace, and waits
// for the process to be reaped.
func (r *podRunner) stop(grace time.Duration) {
	select {
	case <-r.proc.exited:
		return
	default:
	}
	r.proc.signal(syscall.SIGTERM)
	timer := time.NewTimer(grace)
	defer timer.Stop()
	select {
	case <-r.proc.exited:
		return
	case <-timer.C:
	}
	r.log.Info("Process ignored SIGTERM, killing it", "grace", grace.String())
	r.proc.signal(syscall.SIGKILL)
	select {
	case <-r.proc.exited:
	case <-time.After(killWait):
		r.log.Info("Process did not die after SIGKILL", "pid", r.state.pid)
	}
}

// report writes the runner's state to the pod status. A failed write is
// logged and made again (reportAgain) until the API server takes it, as
// a kubelet syncs a pod's status: a process's exit is reported once, and
// on an API server too busy to answer that once, the operator would
// never see it (a 50-room soak's killed map stayed Ready for minutes).
func (r *podRunner) report(ctx context.Context) {
	err := r.agent.updateStatus(ctx, r.pod, r.state)
	r.unreported = err != nil
	if err != nil && ctx.Err() == nil {
		r.log.Error(err, "Updating pod status failed; trying again", "in", reportRetry.String())
	}
}

// reportAgain writes the status again if the last write failed.
func (r *podRunner) reportAgain(ctx context.Context) {
	if r.unreported {
		r.report(ctx)
	}
}

// updateStatus applies s to the pod's current status.
func (a *agent) updateStatus(ctx context.Context, pod *corev1.Pod, s runState) error {
	backoff := retry.DefaultBackoff
	backoff.Steps = maxConflictRetries
	return retry.RetryOnConflict(backoff, func() error {
		ctx, cancel := context.WithTimeout(ctx, statusTimeout)
		defer cancel()
		current, err := a.client.CoreV1().Pods(pod.Namespace).Get(ctx, pod.Name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) || (err == nil && current.UID != pod.UID) {
			return nil
		}
		if err != nil {
			return err
		}
		applyStatus(current, s, a.cfg.nodeIP, time.Now())
		_, err = a.client.CoreV1().Pods(pod.Namespace).UpdateStatus(ctx, current, metav1.UpdateOptions{})
		return err
	})
}
