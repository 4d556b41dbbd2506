package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"k8s.io/utils/ptr"

	"github.com/roomkeeper/roomkeeper/hack/internal/devlog"
	"github.com/roomkeeper/roomkeeper/internal/testenv"
	"github.com/roomkeeper/roomkeeper/internal/wait"
)

// Test timings: generous deadlines for a loaded CI machine running -race.
const (
	waitTimeout = 60 * time.Second
	fakeImage   = "roomkeeper/fakeserver"
	keyMount    = "/var/run/roomkeeper/keys"
)

// Shared by every test: one control plane and one fakeserver build.
var (
	clientset      kubernetes.Interface
	apiConfig      *rest.Config
	kubeconfigPath string
	fakeServer     string
)

func TestMain(m *testing.M) {
	os.Exit(testMain(m))
}

func testMain(m *testing.M) int {
	dir, err := os.MkdirTemp("", "localnode-test")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(dir)
	cp, err := testenv.Start()
	if err != nil {
		fmt.Fprintln(os.Stderr, "localnode tests need a control plane:", err)
		return 1
	}
	defer func() { _ = cp.Stop() }()
	if err := setup(cp.Config, dir); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return m.Run()
}

// setup builds the fake image and writes the agent's kubeconfig into dir.
func setup(cfg *rest.Config, dir string) error {
	fakeServer = filepath.Join(dir, "fakeserver")
	build := exec.Command("go", "build", "-o", fakeServer, "./testdata/fakeserver")
	if out, err := build.CombinedOutput(); err != nil {
		return fmt.Errorf("building testdata/fakeserver: %w\n%s", err, out)
	}
	kubeconfigPath = filepath.Join(dir, "kubeconfig")
	kc := clientcmdapi.NewConfig()
	kc.Clusters["test"] = &clientcmdapi.Cluster{Server: cfg.Host, CertificateAuthorityData: cfg.CAData}
	kc.AuthInfos["test"] = &clientcmdapi.AuthInfo{ClientCertificateData: cfg.CertData, ClientKeyData: cfg.KeyData}
	kc.Contexts["test"] = &clientcmdapi.Context{Cluster: "test", AuthInfo: "test"}
	kc.CurrentContext = "test"
	if err := clientcmd.WriteToFile(*kc, kubeconfigPath); err != nil {
		return err
	}
	var err error
	apiConfig = cfg
	clientset, err = kubernetes.NewForConfig(cfg)
	return err
}

// testAgent is an agent running in the test process.
type testAgent struct {
	cfg    config
	cancel context.CancelFunc
	done   chan error
}

// startAgent runs an agent for node at 127.0.0.1 until the test ends (or
// stop is called).
func startAgent(t *testing.T, node, prefix string) *testAgent {
	t.Helper()
	return startAgentAt(t, node, prefix, "127.0.0.1")
}

// startAgentAt is startAgent with the node address nodeIP.
func startAgentAt(t *testing.T, node, prefix, nodeIP string) *testAgent {
	t.Helper()
	return startAgentWith(t, config{
		kubeconfig: kubeconfigPath, nodeName: node, workdir: t.TempDir(),
		images: map[string]string{fakeImage: fakeServer}, addressPrefix: prefix, nodeIP: nodeIP,
	})
}

// startAgentWith runs an agent of cfg until the test ends (or stop is
// called).
func startAgentWith(t *testing.T, cfg config) *testAgent {
	t.Helper()
	return startAgentLogged(t, cfg, testLogger(t))
}

// startAgentLogged is startAgentWith logging to log.
func startAgentLogged(t *testing.T, cfg config, log logr.Logger) *testAgent {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	a := &testAgent{cfg: cfg, cancel: cancel, done: make(chan error, 1)}
	go func() { a.done <- run(ctx, cfg, log) }()
	t.Cleanup(func() { a.stop(t) })
	return a
}

// stop ends the agent and waits for run to return.
func (a *testAgent) stop(t *testing.T) {
	t.Helper()
	a.cancel()
	select {
	case err, ok := <-a.done:
		if ok && err != nil {
			t.Errorf("run returned %v", err)
		}
		if ok {
			close(a.done)
		}
	case <-time.After(waitTimeout):
		t.Fatal("agent did not stop")
	}
}

// testLogger logs through t until the test ends.
func testLogger(t *testing.T) logr.Logger {
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	return devlog.New(writerFunc(func(p []byte) (int, error) {
		if ctx.Err() == nil {
			t.Log(strings.TrimSpace(string(p)))
		}
		return len(p), nil
	}))
}

type writerFunc func([]byte) (int, error)

func (f writerFunc) Write(p []byte) (int, error) { return f(p) }

var _ io.Writer = writerFunc(nil)

// eventually polls cond until it holds, failing the test with cond's last
// explanation at the deadline.
func eventually(t *testing.T, what string, cond func() (bool, string)) {
	t.Helper()
	wait.Eventually(t, waitTimeout, what, func() error {
		if ok, why := cond(); !ok {
			return errors.New(why)
		}
		return nil
	})
}

// waitPod polls a pod until cond holds and returns it.
func waitPod(t *testing.T, ns, name, what string, cond func(*corev1.Pod) bool) *corev1.Pod {
	t.Helper()
	var pod *corev1.Pod
	eventually(t, what, func() (bool, string) {
		p, err := clientset.CoreV1().Pods(ns).Get(context.Background(), name, metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		pod = p
		return cond(p), fmt.Sprintf("phase %s, conditions %v, containers %v", p.Status.Phase, p.Status.Conditions, p.Status.ContainerStatuses)
	})
	return pod
}

// waitPodGone polls until the pod is deleted.
func waitPodGone(t *testing.T, ns, name string) {
	t.Helper()
	eventually(t, "pod "+name+" to disappear", func() (bool, string) {
		_, err := clientset.CoreV1().Pods(ns).Get(context.Background(), name, metav1.GetOptions{})
		return apierrors.IsNotFound(err), fmt.Sprint(err)
	})
}

// waitProcessGone polls until no process has pid.
func waitProcessGone(t *testing.T, pid int) {
	t.Helper()
	eventually(t, fmt.Sprintf("process %d to end", pid), func() (bool, string) {
		err := syscall.Kill(pid, 0)
		return errors.Is(err, syscall.ESRCH), fmt.Sprint(err)
	})
}

// newNamespace creates a namespace with its default ServiceAccount, which
// kube-controller-manager would create and envtest does not run.
func newNamespace(t *testing.T) string {
	t.Helper()
	ns, err := clientset.CoreV1().Namespaces().Create(context.Background(),
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "localnode-"}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	createServiceAccount(t, ns.Name, "default", nil)
	return ns.Name
}

func createServiceAccount(t *testing.T, ns, name string, automount *bool) {
	t.Helper()
	_, err := clientset.CoreV1().ServiceAccounts(ns).Create(context.Background(), &corev1.ServiceAccount{
		ObjectMeta: metav1.ObjectMeta{Name: name}, AutomountServiceAccountToken: automount,
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
}

// podOption changes a test pod.
type podOption func(*corev1.Pod)

// newPod is a fakeserver pod bound to node, shaped like the operator's.
func newPod(ns, name, node string, opts ...podOption) *corev1.Pod {
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec: corev1.PodSpec{
			NodeName:                      node,
			RestartPolicy:                 corev1.RestartPolicyNever,
			TerminationGracePeriodSeconds: ptr.To[int64](5),
			Containers: []corev1.Container{{
				Name:  "roomserver",
				Image: fakeImage + ":v1",
				Args:  []string{"--listen=:17350", "--http-listen=:18080"},
				Ports: []corev1.ContainerPort{{Name: "http", ContainerPort: 18080}},
				ReadinessProbe: &corev1.Probe{
					ProbeHandler: corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{
						Path: "/readyz", Port: intstr.FromString("http"),
					}},
					PeriodSeconds: 1,
				},
			}},
		},
	}
	for _, o := range opts {
		o(pod)
	}
	return pod
}

func withEnv(env ...corev1.EnvVar) podOption {
	return func(p *corev1.Pod) { p.Spec.Containers[0].Env = append(p.Spec.Containers[0].Env, env...) }
}

func withImage(image string) podOption {
	return func(p *corev1.Pod) { p.Spec.Containers[0].Image = image }
}

func withGrace(seconds int64) podOption {
	return func(p *corev1.Pod) { p.Spec.TerminationGracePeriodSeconds = ptr.To(seconds) }
}

// withKeys mounts Secret secret at keyMount and points --key-dir at it.
func withKeys(secret string) podOption {
	return func(p *corev1.Pod) {
		p.Spec.Volumes = append(p.Spec.Volumes, corev1.Volume{Name: "token-keys", VolumeSource: corev1.VolumeSource{
			Secret: &corev1.SecretVolumeSource{SecretName: secret},
		}})
		c := &p.Spec.Containers[0]
		c.VolumeMounts = append(c.VolumeMounts, corev1.VolumeMount{Name: "token-keys", MountPath: keyMount, ReadOnly: true})
		c.Args = append(c.Args, "--key-dir="+keyMount)
	}
}

// withHostPort adds a TCP container port published on the node at hostPort.
func withHostPort(containerPort, hostPort int32) podOption {
	return func(p *corev1.Pod) {
		c := &p.Spec.Containers[0]
		c.Ports = append(c.Ports, corev1.ContainerPort{Name: "game", ContainerPort: containerPort, HostPort: hostPort})
	}
}

func withServiceAccount(name string) podOption {
	return func(p *corev1.Pod) { p.Spec.ServiceAccountName = name }
}

func withAutomount(automount bool) podOption {
	return func(p *corev1.Pod) { p.Spec.AutomountServiceAccountToken = ptr.To(automount) }
}

// withReport has fakeserver write its report to path.
func withReport(path string) podOption {
	return withEnv(corev1.EnvVar{Name: "FAKESERVER_REPORT", Value: path})
}

func createPod(t *testing.T, pod *corev1.Pod) {
	t.Helper()
	if _, err := clientset.CoreV1().Pods(pod.Namespace).Create(context.Background(), pod, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
}

func deletePod(t *testing.T, ns, name string) {
	t.Helper()
	if err := clientset.CoreV1().Pods(ns).Delete(context.Background(), name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
}

// fakeReport is what fakeserver writes about itself.
type fakeReport struct {
	PID  int               `json:"pid"`
	Args []string          `json:"args"`
	Env  []string          `json:"env"`
	Keys map[string]string `json:"keys"`
}

func readReport(t *testing.T, path string) fakeReport {
	t.Helper()
	var r fakeReport
	eventually(t, "the fakeserver report", func() (bool, string) {
		data, err := os.ReadFile(path)
		if err != nil {
			return false, err.Error()
		}
		return json.Unmarshal(data, &r) == nil, string(data)
	})
	return r
}

// envOf is the value of name in env, and whether it is set.
func envOf(env []string, name string) (string, bool) {
	for _, kv := range env {
		if k, v, _ := strings.Cut(kv, "="); k == name {
			return v, true
		}
	}
	return "", false
}

// waitingWith reports whether the pod's container waits for reason with a
// message containing text.
func waitingWith(reason, text string) func(*corev1.Pod) bool {
	return func(p *corev1.Pod) bool {
		cs := p.Status.ContainerStatuses
		return p.Status.Phase == corev1.PodPending && len(cs) == 1 && cs[0].State.Waiting != nil &&
			cs[0].State.Waiting.Reason == reason && strings.Contains(cs[0].State.Waiting.Message, text)
	}
}

func isRunningAndReady(p *corev1.Pod) bool {
	return p.Status.Phase == corev1.PodRunning && podCondition(p, corev1.PodReady) == corev1.ConditionTrue &&
		len(p.Status.ContainerStatuses) == 1 && p.Status.ContainerStatuses[0].Ready
}

func isTerminal(p *corev1.Pod) bool {
	return p.Status.Phase == corev1.PodFailed || p.Status.Phase == corev1.PodSucceeded
}

func podCondition(p *corev1.Pod, t corev1.PodConditionType) corev1.ConditionStatus {
	for _, c := range p.Status.Conditions {
		if c.Type == t {
			return c.Status
		}
	}
	return corev1.ConditionUnknown
}

func TestNodeIsRegisteredReady(t *testing.T) {
	t.Parallel()
	startAgent(t, "node-ready", "127.0.11.")
	eventually(t, "a Ready node with a lease", func() (bool, string) {
		ctx := context.Background()
		node, err := clientset.CoreV1().Nodes().Get(ctx, "node-ready", metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		lease, err := clientset.CoordinationV1().Leases(leaseNamespace).Get(ctx, "node-ready", metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		ready := slices.ContainsFunc(node.Status.Conditions, func(c corev1.NodeCondition) bool {
			return c.Type == corev1.NodeReady && c.Status == corev1.ConditionTrue
		})
		pods := node.Status.Allocatable[corev1.ResourcePods]
		ok := ready && pods.Value() == 110 && len(node.Status.Addresses) == 1 &&
			node.Status.Addresses[0].Address == "127.0.0.1" && ptr.Deref(lease.Spec.HolderIdentity, "") == "node-ready"
		return ok, fmt.Sprintf("status %+v, lease %+v", node.Status, lease.Spec)
	})
	first := leaseRenewTime(t, "node-ready")
	eventually(t, "the lease to be renewed", func() (bool, string) {
		renewed := leaseRenewTime(t, "node-ready")
		return renewed.After(first), fmt.Sprintf("renew time still %v", renewed)
	})
}

func leaseRenewTime(t *testing.T, node string) time.Time {
	t.Helper()
	lease, err := clientset.CoordinationV1().Leases(leaseNamespace).Get(context.Background(), node, metav1.GetOptions{})
	if err != nil || lease.Spec.RenewTime == nil {
		t.Fatalf("lease of %s: %v", node, err)
	}
	return lease.Spec.RenewTime.Time
}

func TestPodWaitsForItsSecret(t *testing.T) {
	t.Parallel()
	const node = "node-wait"
	startAgent(t, node, "127.0.17.")
	ns := newNamespace(t)
	createPod(t, newPod(ns, "waiting", node, withKeys("late")))
	waitPod(t, ns, "waiting", "waiting to report its missing Secret", func(p *corev1.Pod) bool {
		cs := p.Status.ContainerStatuses
		return p.Status.Phase == corev1.PodPending && len(cs) == 1 && cs[0].State.Waiting != nil &&
			cs[0].State.Waiting.Reason == reasonConfigError
	})
	_, err := clientset.CoreV1().Secrets(ns).Create(context.Background(), &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: "late"}, Data: map[string][]byte{"k": []byte("v")},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	waitPod(t, ns, "waiting", "waiting to run once its Secret exists", isRunningAndReady)
}

func TestPodRunsWithRewrittenConfigAndIsDeleted(t *testing.T) {
	t.Parallel()
	const node = "node-run"
	a := startAgent(t, node, "127.0.12.")
	ns := newNamespace(t)
	ctx := context.Background()
	_, err := clientset.CoreV1().Secrets(ns).Create(ctx, &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: "keys"},
		Data:       map[string][]byte{"current.key": []byte("k1"), "dsn": []byte("postgres://db")},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	reportPath := filepath.Join(t.TempDir(), "report.json")
	createPod(t, newPod(ns, "map-a", node, withKeys("keys"), withReport(reportPath), withEnv(
		corev1.EnvVar{Name: "DATABASE_URL", ValueFrom: &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{
			LocalObjectReference: corev1.LocalObjectReference{Name: "keys"}, Key: "dsn",
		}}},
		fieldEnv("POD_NAME", "metadata.name"), fieldEnv("POD_NAMESPACE", "metadata.namespace"), fieldEnv("POD_IP", "status.podIP"),
		fieldEnv("HOST_IP", "status.hostIP"),
	)))

	pod := waitPod(t, ns, "map-a", "map-a to be Running and Ready", isRunningAndReady)
	ip := pod.Status.PodIP
	if ip != "127.0.12.2" || pod.Status.HostIP != "127.0.0.1" || pod.Status.StartTime == nil ||
		pod.Status.ContainerStatuses[0].State.Running == nil {
		t.Fatalf("status %+v", pod.Status)
	}
	report := readReport(t, reportPath)
	keyDir := filepath.Join(a.cfg.workdir, ns, "map-a", "volumes", "token-keys")
	wantArgs := []string{"--listen=" + ip + ":17350", "--http-listen=" + ip + ":18080", "--key-dir=" + keyDir}
	if !slices.Equal(report.Args, wantArgs) {
		t.Errorf("args %q, want %q", report.Args, wantArgs)
	}
	if report.Keys["current.key"] != "k1" {
		t.Errorf("keys %v, want current.key=k1", report.Keys)
	}
	podKubeconfig := filepath.Join(a.cfg.workdir, ns, "map-a", "kubeconfig")
	for _, kv := range []string{"DATABASE_URL=postgres://db", "POD_NAME=map-a", "POD_NAMESPACE=" + ns, "POD_IP=" + ip,
		"HOST_IP=127.0.0.1", "KUBECONFIG=" + podKubeconfig} {
		if !slices.Contains(report.Env, kv) {
			t.Errorf("env %q lacks %s", report.Env, kv)
		}
	}

	secret, err := clientset.CoreV1().Secrets(ns).Get(ctx, "keys", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	secret.Data["current.key"] = []byte("k2")
	if _, err := clientset.CoreV1().Secrets(ns).Update(ctx, secret, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the rotated key on disk", func() (bool, string) {
		data, err := os.ReadFile(filepath.Join(keyDir, "current.key"))
		return string(data) == "k2", fmt.Sprint(string(data), err)
	})

	deletePod(t, ns, "map-a")
	waitPodGone(t, ns, "map-a")
	waitProcessGone(t, report.PID)
	eventually(t, "the pod directory to be removed", func() (bool, string) {
		_, err := os.Stat(filepath.Join(a.cfg.workdir, ns, "map-a"))
		return errors.Is(err, os.ErrNotExist), fmt.Sprint(err)
	})
}

func fieldEnv(name, path string) corev1.EnvVar {
	return corev1.EnvVar{Name: name, ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: path}}}
}

func TestProcessExitEndsPod(t *testing.T) {
	t.Parallel()
	const node = "node-exit"
	startAgent(t, node, "127.0.13.")
	ns := newNamespace(t)
	tests := []struct {
		name, code string
		phase      corev1.PodPhase
		reason     string
	}{
		{"fails", "3", corev1.PodFailed, reasonError},
		{"succeeds", "0", corev1.PodSucceeded, reasonCompleted},
	}
	for _, tt := range tests {
		createPod(t, newPod(ns, tt.name, node, withEnv(
			corev1.EnvVar{Name: "EXIT_AFTER", Value: "300ms"}, corev1.EnvVar{Name: "EXIT_CODE", Value: tt.code})))
	}
	for _, tt := range tests {
		pod := waitPod(t, ns, tt.name, tt.name+" to end", isTerminal)
		term := pod.Status.ContainerStatuses[0].State.Terminated
		if pod.Status.Phase != tt.phase || term == nil || fmt.Sprint(term.ExitCode) != tt.code || term.Reason != tt.reason {
			t.Errorf("%s: phase %s, terminated %+v; want %s, exit code %s, reason %s",
				tt.name, pod.Status.Phase, term, tt.phase, tt.code, tt.reason)
		}
		if podCondition(pod, corev1.PodReady) != corev1.ConditionFalse {
			t.Errorf("%s: Ready is %s after exit", tt.name, podCondition(pod, corev1.PodReady))
		}
	}
}

func TestUnknownImageFailsPod(t *testing.T) {
	t.Parallel()
	const node = "node-unknown"
	startAgent(t, node, "127.0.14.")
	ns := newNamespace(t)
	createPod(t, newPod(ns, "nope", node, withImage("example.com/nope:1")))
	pod := waitPod(t, ns, "nope", "nope to fail", isTerminal)
	if pod.Status.Phase != corev1.PodFailed || !strings.Contains(pod.Status.Message, `"example.com/nope:1" is not in --image-map`) {
		t.Errorf("phase %s, message %q", pod.Status.Phase, pod.Status.Message)
	}
	deletePod(t, ns, "nope")
	waitPodGone(t, ns, "nope")
}

func TestDeletionKillsProcessIgnoringSIGTERM(t *testing.T) {
	t.Parallel()
	const node = "node-stubborn"
	startAgent(t, node, "127.0.15.")
	ns := newNamespace(t)
	reportPath := filepath.Join(t.TempDir(), "report.json")
	createPod(t, newPod(ns, "stubborn", node, withGrace(1), withReport(reportPath),
		withEnv(corev1.EnvVar{Name: "IGNORE_SIGTERM", Value: "1"})))
	waitPod(t, ns, "stubborn", "stubborn to be Ready", isRunningAndReady)
	pid := readReport(t, reportPath).PID
	deletePod(t, ns, "stubborn")
	waitPodGone(t, ns, "stubborn")
	waitProcessGone(t, pid)
}

func TestADeletedPodsLogIsKept(t *testing.T) {
	t.Parallel()
	const node = "node-logs"
	kept := t.TempDir()
	startAgentWith(t, config{
		kubeconfig: kubeconfigPath, nodeName: node, workdir: t.TempDir(), deletedLogs: kept,
		images: map[string]string{fakeImage: fakeServer}, addressPrefix: "127.0.19.", nodeIP: "127.0.0.1",
	})
	ns := newNamespace(t)
	createPod(t, newPod(ns, "talker", node))
	pod := waitPod(t, ns, "talker", "talker to be Ready", isRunningAndReady)
	deletePod(t, ns, "talker")
	waitPodGone(t, ns, "talker")
	logPath := filepath.Join(kept, fmt.Sprintf("%s_talker_%s.log", ns, pod.UID))
	eventually(t, "the deleted pod's log kept", func() (bool, string) {
		data, err := os.ReadFile(logPath)
		return strings.Contains(string(data), "SIGTERM, exiting"), fmt.Sprintf("%q %v", data, err)
	})
}

func TestShutdownStopsProcesses(t *testing.T) {
	t.Parallel()
	const node = "node-shutdown"
	a := startAgent(t, node, "127.0.16.")
	ns := newNamespace(t)
	var pids []int
	for _, name := range []string{"one", "two"} {
		reportPath := filepath.Join(t.TempDir(), name+".json")
		createPod(t, newPod(ns, name, node, withReport(reportPath)))
		waitPod(t, ns, name, name+" to be Ready", isRunningAndReady)
		pids = append(pids, readReport(t, reportPath).PID)
	}
	a.stop(t)
	for _, pid := range pids {
		if err := syscall.Kill(pid, 0); !errors.Is(err, syscall.ESRCH) {
			t.Errorf("process %d still there after shutdown: %v", pid, err)
		}
	}
	if _, err := clientset.CoreV1().Pods(ns).Get(context.Background(), "one", metav1.GetOptions{}); err != nil {
		t.Errorf("the agent's shutdown touched its pods: %v", err)
	}
}
