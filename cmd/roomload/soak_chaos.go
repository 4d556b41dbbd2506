package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	ctrlclient "sigs.k8s.io/controller-runtime/pkg/client"

	gamev1 "github.com/roomkeeper/roomkeeper/api/v1"
	"github.com/roomkeeper/roomkeeper/internal/podenv"
)

// The faults of --chaos, injected in this order, round and round: each
// kind comes once before any comes twice.
var faultKinds = []string{"kill-room-server", "delete-pod", "restart-postgres", "restart-manager", "party-flood"}

// recoveryLimit bounds the wait for the soak to recover from a fault; a
// longer one is a violation.
const recoveryLimit = 2 * time.Minute

// fault is one injected fault and how long the soak took to recover.
type fault struct {
	kind, target string
	at           time.Time
	recovery     time.Duration
	err          error
}

// chaosLoop injects a fault at a random time within the bounds after the
// last recovery, until play ends; the last fault's recovery is awaited
// under ctx, past the end of play.
func (s *soak) chaosLoop(ctx, play context.Context, r *soakReport) {
	for n := 0; ; n++ {
		wait := s.cfg.chaosMin + time.Duration(s.rng.Int64N(int64(s.cfg.chaosMax-s.cfg.chaosMin)+1))
		select {
		case <-play.Done():
			return
		case <-time.After(wait):
		}
		worlds := s.markWorlds(ctx)
		f := fault{kind: faultKinds[n%len(faultKinds)], at: time.Now()}
		var took func() error
		f.target, took, f.err = s.inject(ctx, f.kind, n)
		if f.err == nil {
			f.err = s.awaitRecovery(ctx, f.at, took)
			f.recovery = time.Since(f.at)
		}
		progress("fault %s (%s) at %s: recovered in %s, %v", f.kind, f.target, f.at.UTC().Format(time.TimeOnly), f.recovery.Round(time.Second), f.err)
		if f.err != nil {
			r.violate("fault %s (%s): %v", f.kind, f.target, f.err)
		} else {
			s.checkWorlds(ctx, worlds, f.at, r)
		}
		s.faults = append(s.faults, f)
	}
}

// inject makes one fault happen and names what it hit; took reports
// (nil) once the fault shows, so that recovery is not measured before it.
func (s *soak) inject(ctx context.Context, kind string, round int) (target string, took func() error, err error) {
	switch kind {
	case "party-flood":
		return s.partyFlood(ctx, round)
	case "kill-room-server":
		pod, err := s.soakPod(ctx)
		if err != nil {
			return "", nil, err
		}
		// The process of that pod, not of a same-named room of another
		// dev cluster on this machine: the pod's IP is in its --listen.
		instance := gamev1.MapInstanceName(pod.Labels[gamev1.LabelRoom], pod.Labels[gamev1.LabelMap])
		restarts := s.restarts(ctx, instance)
		_, err = s.killProcess(func(p process) bool {
			return p.inPod(pod.UID) ||
				flagValue(p.cmdline, podenv.FlagInstance) == instance && strings.HasPrefix(flagValue(p.cmdline, podenv.FlagListen), pod.Status.PodIP+":")
		})
		return instance, func() error { return s.restarted(ctx, instance, restarts) }, err
	case "delete-pod":
		pod, err := s.soakPod(ctx)
		if err != nil {
			return "", nil, err
		}
		return pod.Name, func() error { return s.podGone(ctx, pod) }, s.k8s.Delete(ctx, pod)
	case "restart-postgres":
		out, err := exec.CommandContext(ctx, postgresScript(), "restart", s.cfg.pgDir).CombinedOutput()
		if err != nil {
			err = fmt.Errorf("hack/postgres.sh restart: %w: %s", err, out)
		}
		return s.cfg.pgDir, s.databaseAnswers(ctx), err
	default: // restart-manager: the dev cluster, or the kubelet, starts it again
		managerPod := s.podAt(ctx, hostPort(s.cfg.api.URL))
		pid, err := s.killProcess(func(p process) bool {
			return managerPod != "" && p.inPod(managerPod) ||
				strings.Contains(p.cmdline, "bin/manager ") && strings.Contains(p.cmdline, "--join-api-bind-address="+hostPort(s.cfg.api.URL))
		})
		answers := s.databaseAnswers(ctx)
		return "manager", func() error {
			if syscall.Kill(pid, 0) == nil {
				return fmt.Errorf("the manager (pid %d) has not exited yet", pid)
			}
			return answers() // a new manager serves the join API
		}, err
	}
}

// soakPod is one running pod of the soak's rooms' town or forest, with its
// IP, at random.
func (s *soak) soakPod(ctx context.Context) (*corev1.Pod, error) {
	pods := &corev1.PodList{}
	if err := s.watched.List(ctx, pods, ctrlclient.InNamespace(s.cfg.api.Namespace)); err != nil {
		return nil, err
	}
	var ours []corev1.Pod
	for _, p := range pods.Items {
		if strings.HasPrefix(p.Labels[gamev1.LabelRoom], s.cfg.prefix+"-") && p.Labels[gamev1.LabelMap] != cellarMap && p.DeletionTimestamp == nil &&
			p.Status.Phase == corev1.PodRunning && p.Status.PodIP != "" {
			ours = append(ours, p)
		}
	}
	if len(ours) == 0 {
		return nil, errors.New("no running pod of the soak's rooms")
	}
	return &ours[s.rng.IntN(len(ours))], nil
}

// postgresScript is hack/postgres.sh of the checkout roomload was built
// in (bin/roomload), else of the working directory.
func postgresScript() string {
	if exe, err := os.Executable(); err == nil {
		script := filepath.Join(filepath.Dir(exe), "..", "hack", "postgres.sh")
		if _, err := os.Stat(script); err == nil {
			return script
		}
	}
	return filepath.Join("hack", "postgres.sh")
}

// restarts is the MapInstance's restart count, -1 when it cannot be read.
func (s *soak) restarts(ctx context.Context, instance string) int32 {
	mi := &gamev1.MapInstance{}
	if err := s.watched.Get(ctx, ctrlclient.ObjectKey{Namespace: s.cfg.api.Namespace, Name: instance}, mi); err != nil {
		return -1
	}
	return mi.Status.RestartCount
}

// restarted is nil once the operator counted a failure of instance.
func (s *soak) restarted(ctx context.Context, instance string, before int32) error {
	if s.restarts(ctx, instance) > before {
		return nil
	}
	return fmt.Errorf("the operator has not seen %s fail yet", instance)
}

// podGone is nil once pod is gone (a pod of its name now is another).
func (s *soak) podGone(ctx context.Context, pod *corev1.Pod) error {
	now := &corev1.Pod{}
	if err := s.watched.Get(ctx, ctrlclient.ObjectKeyFromObject(pod), now); apierrors.IsNotFound(err) || (err == nil && now.UID != pod.UID) {
		return nil
	}
	return fmt.Errorf("pod %s is still there", pod.Name)
}

// databaseAnswers is nil once the join API answers a call that needs the
// rooms' database (a player's characters).
func (s *soak) databaseAnswers(ctx context.Context) func() error {
	return func() error {
		b := s.bots[0]
		_, err := s.cfg.api.API().Characters(ctx, s.cfg.api.Namespace, b.room, b.authKey)
		return err
	}
}

// flagValue is the value of flag name (podenv's, without dashes) in a
// command line, or "".
func flagValue(cmdline, name string) string {
	v, _ := podenv.ArgValue(strings.Fields(cmdline), name)
	return v
}

// hostPort is the host:port of a URL.
func hostPort(url string) string {
	_, rest, _ := strings.Cut(url, "://")
	host, _, _ := strings.Cut(rest, "/")
	return host
}

// process is a process of this machine, as /proc shows it.
type process struct {
	cmdline, cgroup string
}

// inPod reports whether the process runs in a container of the pod with
// uid on a real node: the kubelet names each pod's cgroup after its UID.
func (p process) inPod(uid types.UID) bool {
	return uid != "" && strings.Contains(p.cgroup, "pod"+string(uid))
}

// podAt is the UID of the pod with the address of hostPort (the join
// API's, when a manager pod serves it), or "".
func (s *soak) podAt(ctx context.Context, hostPort string) types.UID {
	host, _, _ := strings.Cut(hostPort, ":")
	pods := &corev1.PodList{}
	if err := s.watched.List(ctx, pods); err != nil {
		return ""
	}
	for _, p := range pods.Items {
		if p.Status.PodIP == host && p.DeletionTimestamp == nil {
			return p.UID
		}
	}
	return ""
}

// killProcess sends SIGKILL to a process of this machine that matches
// (one at random): a process of make dev's node, or a container of a
// real node running here (make cluster). It returns the pid.
func (s *soak) killProcess(match func(process) bool) (int, error) {
	procs, _ := filepath.Glob("/proc/[0-9]*/cmdline")
	var found []int
	for _, p := range procs {
		raw, err := os.ReadFile(p)
		if err != nil {
			continue
		}
		cgroup, _ := os.ReadFile(filepath.Join(filepath.Dir(p), "cgroup"))
		if !match(process{cmdline: strings.ReplaceAll(string(raw), "\x00", " "), cgroup: string(cgroup)}) {
			continue
		}
		if pid, err := strconv.Atoi(filepath.Base(filepath.Dir(p))); err == nil {
			found = append(found, pid)
		}
	}
	if len(found) == 0 {
		return 0, errors.New("no such process on this machine")
	}
	pid := found[s.rng.IntN(len(found))]
	return pid, syscall.Kill(pid, syscall.SIGKILL)
}

// awaitRecovery waits until every soak map is Ready and every player plays again
// (a snapshot since the fault showed).
func (s *soak) awaitRecovery(ctx context.Context, since time.Time, took func() error) error {
	if err := poll(ctx, recoveryLimit, took); err != nil {
		return err
	}
	// A player's snapshot counts from when the fault showed, not from when
	// it was injected: a killed map's players had snapshots in the moment
	// before its process died, and the operator may not have marked the
	// map not Ready yet when it counted the failure.
	shown := time.Now()
	return poll(ctx, recoveryLimit, func() error {
		if waiting := s.notReady(ctx); len(waiting) > 0 {
			return fmt.Errorf("not Ready %s after the fault: %s", time.Since(since).Round(time.Second), strings.Join(waiting, ", "))
		}
		for i, b := range s.bots {
			c := b.client()
			if c == nil {
				continue // never joined: reported as such
			}
			st := c.Snapshot()
			if st.Closed != nil {
				return fmt.Errorf("player %d gave up: %w", i, st.Closed)
			}
			if !st.SnapshotAt.After(shown) {
				return fmt.Errorf("player %d has had no snapshot since the fault showed", i)
			}
		}
		return nil
	})
}
