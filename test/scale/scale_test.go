// Package scale measures the operator against the DESIGN.md section 8
// budgets: many GameRooms on the test control plane (no scheduler, pods are
// never run), and the time from a crash to the replacement pod. The
// manager runs as its own process (bin/manager) so its memory is its own.
//
//	make build && go test -run '^$' -bench . -benchtime=1x ./test/scale/
//	ROOMKEEPER_SCALE_ROOMS=1000 go test -run '^$' -bench Rooms -benchtime=1x ./test/scale/
package scale

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"sigs.k8s.io/controller-runtime/pkg/client"

	gamev1 "github.com/roomkeeper/roomkeeper/api/v1"
	"github.com/roomkeeper/roomkeeper/internal/testenv"
)

// env is the control plane, a client and the manager process.
type env struct {
	c       client.Client
	manager *exec.Cmd
}

func setup(b *testing.B) *env {
	b.Helper()
	cp, err := testenv.Start()
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = cp.Stop() })
	scheme := runtime.NewScheme()
	utilruntime.Must(clientgoscheme.AddToScheme(scheme))
	utilruntime.Must(gamev1.AddToScheme(scheme))
	c, err := client.New(cp.Config, client.Options{Scheme: scheme})
	if err != nil {
		b.Fatal(err)
	}
	root, err := testenv.RepoRoot()
	if err != nil {
		b.Fatal(err)
	}
	kubeconfig := filepath.Join(b.TempDir(), "kubeconfig")
	if err := writeKubeconfig(kubeconfig, cp.Config); err != nil {
		b.Fatal(err)
	}
	manager := exec.Command(filepath.Join(root, "bin", "manager"), "--kubeconfig="+kubeconfig,
		"--metrics-bind-address=0", "--health-probe-bind-address=0", "--join-api-bind-address=0")
	manager.Stderr = nil
	if err := manager.Start(); err != nil {
		b.Fatalf("starting bin/manager (run make build first): %v", err)
	}
	b.Cleanup(func() { _ = manager.Process.Kill(); _ = manager.Wait() })
	return &env{c: c, manager: manager}
}

func writeKubeconfig(path string, cfg *rest.Config) error {
	kc := clientcmdapi.NewConfig()
	kc.Clusters["envtest"] = &clientcmdapi.Cluster{Server: cfg.Host, CertificateAuthorityData: cfg.CAData}
	kc.AuthInfos["admin"] = &clientcmdapi.AuthInfo{ClientCertificateData: cfg.CertData, ClientKeyData: cfg.KeyData}
	kc.Contexts["envtest"] = &clientcmdapi.Context{Cluster: "envtest", AuthInfo: "admin"}
	kc.CurrentContext = "envtest"
	return clientcmd.WriteToFile(*kc, path)
}

func room(ns, name string) *gamev1.GameRoom {
	maps := []gamev1.GameMap{}
	for _, m := range []string{"town", "forest", "cave"} {
		maps = append(maps, gamev1.GameMap{Name: m, Config: gamev1.MapConfig{Seed: 1, Width: 256, Height: 256}})
	}
	return &gamev1.GameRoom{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: gamev1.GameRoomSpec{Image: "roomkeeper/roomserver:dev", DefaultMap: "town", Maps: maps}}
}

// BenchmarkRooms creates ROOMKEEPER_SCALE_ROOMS (default 300) rooms of 3
// maps and reports the time until every pod exists, the manager's peak RSS
// and the kube-apiserver's CPU per pod.
func BenchmarkRooms(b *testing.B) {
	n := 300
	if v, err := strconv.Atoi(os.Getenv("ROOMKEEPER_SCALE_ROOMS")); err == nil && v > 0 {
		n = v
	}
	e := setup(b)
	ctx := context.Background()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "scale"}}
	if err := e.c.Create(ctx, ns); err != nil {
		b.Fatal(err)
	}
	apiCPU := apiserverCPU(b)
	start := time.Now()
	for i := range n {
		if err := e.c.Create(ctx, room(ns.Name, fmt.Sprintf("r%d", i))); err != nil {
			b.Fatal(err)
		}
	}
	created := time.Since(start)
	for {
		pods := &metav1.PartialObjectMetadataList{}
		pods.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("PodList"))
		if err := e.c.List(ctx, pods, client.InNamespace(ns.Name)); err != nil {
			b.Fatal(err)
		}
		if len(pods.Items) == 3*n {
			break
		}
		if time.Since(start) > 10*time.Minute {
			b.Fatalf("only %d of %d pods after 10 minutes", len(pods.Items), 3*n)
		}
		time.Sleep(250 * time.Millisecond) // polling the API with a deadline
	}
	elapsed := time.Since(start)
	b.ReportMetric(elapsed.Seconds(), "s-all-pods")
	b.ReportMetric(created.Seconds(), "s-to-create-rooms")
	b.ReportMetric(float64(peakRSS(b, e.manager.Process.Pid))/(1<<20), "MiB-manager-peak-rss")
	b.ReportMetric((apiserverCPU(b)-apiCPU).Seconds()*1000/float64(3*n), "ms-apiserver-cpu/pod")
}

// BenchmarkCrashToReplacement fails a pod and measures the time until its
// replacement exists, with the backoff set to 1 ms so what is measured is
// the operator: seeing the crash, recording it, deleting and creating.
func BenchmarkCrashToReplacement(b *testing.B) {
	e := setup(b)
	ctx := context.Background()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "crash"}}
	if err := e.c.Create(ctx, ns); err != nil {
		b.Fatal(err)
	}
	r := room(ns.Name, "demo")
	r.Spec.Maps = r.Spec.Maps[:1]
	r.Spec.RestartPolicy.MaxRestarts = 100
	r.Spec.RestartPolicy.InitialBackoff = &metav1.Duration{Duration: time.Millisecond}
	r.Spec.RestartPolicy.MaxBackoff = &metav1.Duration{Duration: time.Millisecond}
	if err := e.c.Create(ctx, r); err != nil {
		b.Fatal(err)
	}
	var total time.Duration
	for b.Loop() {
		pod := waitPod(b, e.c, ns.Name, "")
		pod.Status.Phase = corev1.PodFailed
		start := time.Now()
		if err := e.c.Status().Update(ctx, pod); err != nil {
			b.Fatal(err)
		}
		waitPod(b, e.c, ns.Name, pod.UID)
		total += time.Since(start)
	}
	b.ReportMetric(float64(total.Milliseconds())/float64(b.N), "ms-crash-to-replacement-pod")
}

func waitPod(b *testing.B, c client.Client, ns string, not any) *corev1.Pod {
	deadline := time.Now().Add(2 * time.Minute)
	for time.Now().Before(deadline) {
		pod := &corev1.Pod{}
		if err := c.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: "demo-town"}, pod); err == nil &&
			pod.DeletionTimestamp == nil && pod.Status.Phase != corev1.PodFailed && pod.UID != not {
			return pod
		}
		time.Sleep(5 * time.Millisecond) // polling the API with a deadline
	}
	b.Fatal("no pod")
	return nil
}

// peakRSS is a process's peak resident set (VmHWM) in bytes.
func peakRSS(b *testing.B, pid int) int64 {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		b.Fatal(err)
	}
	for _, line := range strings.Split(string(data), "\n") {
		if strings.HasPrefix(line, "VmHWM:") {
			kb, _ := strconv.ParseInt(strings.Fields(line)[1], 10, 64)
			return kb << 10
		}
	}
	return 0
}

// apiserverCPU is the CPU time used so far by the kube-apiserver processes.
func apiserverCPU(b *testing.B) time.Duration {
	matches, _ := filepath.Glob("/proc/[0-9]*/cmdline")
	var ticks int64
	for _, m := range matches {
		cmd, err := os.ReadFile(m)
		if err != nil || !strings.Contains(string(cmd), "kube-apiserver") {
			continue
		}
		stat, err := os.ReadFile(filepath.Join(filepath.Dir(m), "stat"))
		if err != nil {
			continue
		}
		fields := strings.Fields(string(stat[strings.LastIndexByte(string(stat), ')')+2:]))
		u, _ := strconv.ParseInt(fields[11], 10, 64)
		s, _ := strconv.ParseInt(fields[12], 10, 64)
		ticks += u + s
	}
	return time.Duration(ticks) * time.Second / 100
}
