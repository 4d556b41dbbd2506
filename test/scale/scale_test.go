// Package scale measures the operator against the docs/design.md section 8
// budgets: many GameRooms on the test control plane (pods are never run),
// and the time from a crash to the replacement pod. The manager runs as its
// own process (bin/manager) so its memory and CPU are its own.
//
//	make build && go test -run '^$' -bench . -benchtime=1x ./test/scale/
//	ROOMKEEPER_SCALE_ROOMS=1000 go test -run '^$' -bench Rooms -benchtime=1x -timeout 30m ./test/scale/
//
// Environment:
//
//	ROOMKEEPER_SCALE_ROOMS      rooms of 3 maps (default 300)
//	ROOMKEEPER_SCALE_SCHEDULER  1: run kube-scheduler and 10 fake Ready nodes
//	ROOMKEEPER_SCALE_QUIET      seconds watched for writes after convergence (default 30)
//	ROOMKEEPER_SCALE_MANAGER    the manager binary (default bin/manager)
//	ROOMKEEPER_SCALE_ARGS       extra manager flags, space separated (--workers=4, say)
//	ROOMKEEPER_SCALE_AUTH       admin: run the manager as the control plane's admin
//	                            (default: a ServiceAccount token with config/rbac/role.yaml)
//	ROOMKEEPER_SCALE_PROFILE    a file: write kube-apiserver's CPU profile of the
//	                            first ROOMKEEPER_SCALE_PROFILE_SECONDS (default 10) there,
//	                            and the manager's to the file + ".manager"
package scale

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	gamev1 "github.com/roomkeeper/roomkeeper/api/v1"
	"github.com/roomkeeper/roomkeeper/internal/testenv"
	"github.com/roomkeeper/roomkeeper/internal/wait"
)

// env is the control plane, clients and the manager process.
type env struct {
	c         client.WithWatch
	cfg       *rest.Config
	clientset *kubernetes.Clientset
	manager   *exec.Cmd
	scheduler bool
	// pprof is the manager's pprof address when profiling.
	pprof string
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
	cfg := rest.CopyConfig(cp.Config)
	cfg.QPS, cfg.Burst = 1000, 2000 // the 16 creators must not wait on client-side throttling
	c, err := client.NewWithWatch(cfg, client.Options{Scheme: scheme})
	if err != nil {
		b.Fatal(err)
	}
	clientset, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		b.Fatal(err)
	}
	root, err := testenv.RepoRoot()
	if err != nil {
		b.Fatal(err)
	}
	kubeconfig := filepath.Join(b.TempDir(), "kubeconfig")
	if err := testenv.WriteKubeconfig(kubeconfig, "envtest", cp.Config); err != nil {
		b.Fatal(err)
	}
	e := &env{c: c, cfg: cfg, clientset: clientset, scheduler: os.Getenv("ROOMKEEPER_SCALE_SCHEDULER") == "1"}
	if e.scheduler {
		startScheduler(b, kubeconfig)
		fakeNodes(b, c, 10)
	}
	bin := os.Getenv("ROOMKEEPER_SCALE_MANAGER")
	if bin == "" {
		bin = filepath.Join(root, "bin", "manager")
	}
	args := []string{"--kubeconfig=" + e.managerKubeconfig(b, cp.Config),
		"--metrics-bind-address=0", "--health-probe-bind-address=0", "--join-api-bind-address=0", "--admin-api-bind-address=0"}
	if os.Getenv("ROOMKEEPER_SCALE_PROFILE") != "" {
		e.pprof = testenv.MustFreeAddress(b)
		args = append(args, "--pprof-bind-address="+e.pprof)
	}
	args = append(args, strings.Fields(os.Getenv("ROOMKEEPER_SCALE_ARGS"))...)
	manager := exec.Command(bin, args...)
	logPath := filepath.Join(b.TempDir(), "manager.log")
	log, err := os.Create(logPath)
	if err != nil {
		b.Fatal(err)
	}
	manager.Stdout, manager.Stderr = log, log
	b.Cleanup(func() {
		if b.Failed() {
			tail, _ := exec.Command("tail", "-n", "20", logPath).Output()
			b.Logf("the manager's log ends:\n%s", tail)
		}
	})
	if err := manager.Start(); err != nil {
		b.Fatalf("starting %s (run make build first): %v", bin, err)
	}
	b.Cleanup(func() { _ = manager.Process.Kill(); _ = manager.Wait() })
	e.manager = manager
	return e
}

// startScheduler runs the control plane's kube-scheduler as a child process.
func startScheduler(b *testing.B, kubeconfig string) {
	b.Helper()
	assets, err := testenv.AssetsDir()
	if err != nil {
		b.Fatal(err)
	}
	cmd := exec.Command(filepath.Join(assets, "kube-scheduler"), "--kubeconfig="+kubeconfig,
		"--authentication-kubeconfig="+kubeconfig, "--authorization-kubeconfig="+kubeconfig,
		"--leader-elect=false", "--bind-address=127.0.0.1", "--secure-port=0", "-v=0")
	if err := cmd.Start(); err != nil {
		b.Fatalf("starting kube-scheduler (run make controlplane): %v", err)
	}
	b.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
}

// fakeNodes registers n Ready nodes without a kubelet: the scheduler binds
// pods to them, nothing runs them.
func fakeNodes(b *testing.B, c client.Client, n int) {
	b.Helper()
	ctx := context.Background()
	for i := range n {
		node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("fake-%d", i)}}
		if err := c.Create(ctx, node); err != nil {
			b.Fatal(err)
		}
		capacity := corev1.ResourceList{
			corev1.ResourceCPU:    resource.MustParse("64"),
			corev1.ResourceMemory: resource.MustParse("256Gi"),
			corev1.ResourcePods:   resource.MustParse("1000"),
		}
		node.Status = corev1.NodeStatus{Capacity: capacity, Allocatable: capacity,
			Conditions: []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue,
				LastHeartbeatTime: metav1.Now(), LastTransitionTime: metav1.Now()}}}
		if err := c.Status().Update(ctx, node); err != nil {
			b.Fatal(err)
		}
		// The API server tainted the node not-ready when it was created;
		// no node controller is here to lift the taint.
		if err := c.Get(ctx, client.ObjectKeyFromObject(node), node); err != nil {
			b.Fatal(err)
		}
		node.Spec.Taints = nil
		if err := c.Update(ctx, node); err != nil {
			b.Fatal(err)
		}
	}
}

func room(ns, name string) *gamev1.GameRoom {
	maps := []gamev1.GameMap{}
	for _, m := range []string{"town", "forest", "cave"} {
		maps = append(maps, gamev1.GameMap{Name: m, Config: gamev1.MapConfig{Seed: 1, Width: 256, Height: 256}})
	}
	return &gamev1.GameRoom{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: gamev1.GameRoomSpec{Image: "roomkeeper/roomserver:dev", DefaultMap: "town", Maps: maps}}
}

// readyRoom creates a room of 3 maps in a new namespace and waits for its
// pods and its first status. Once it is up the manager has started and
// synced its caches, and the API server no longer holds creates back: for
// 2 s after a CRD is established it sleeps 2 s in every create of its
// kind (apiextensions-apiserver's crdHandler), which the harness, starting
// right after installing the CRDs, would otherwise count as the operator's.
func (e *env) readyRoom(b *testing.B, ns, name string) *gamev1.GameRoom {
	b.Helper()
	ctx := context.Background()
	if err := e.c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil {
		b.Fatal(err)
	}
	allPods := e.watchCount(b, corev1.SchemeGroupVersion.WithKind("PodList"), ns, 3)
	r := room(ns, name)
	if err := e.c.Create(ctx, r); err != nil {
		b.Fatal(err)
	}
	select {
	case <-allPods:
	case <-time.After(time.Minute):
		b.Fatalf("room %s/%s: its pods did not appear", ns, name)
	}
	got := &gamev1.GameRoom{}
	wait.Eventually(b, time.Minute, fmt.Sprintf("room %s/%s's status", ns, name), func() error {
		if err := e.c.Get(ctx, client.ObjectKeyFromObject(r), got); err != nil {
			return err
		}
		return wait.True(func() bool { return got.Status.ObservedGeneration > 0 }, "not written")()
	})
	return got
}

// creators is how many rooms are created at once, as a platform's tooling would.
const creators = 16

// BenchmarkRooms creates ROOMKEEPER_SCALE_ROOMS (default 300) rooms of 3
// maps with 16 concurrent creators, once a warm-up room is up, and
// reports: the time from the first create to every MapInstance and every
// pod existing; kube-apiserver, etcd, manager (and scheduler) CPU; the
// manager's peak RSS; the operator's writes per room by verb and resource
// from the apiserver's apiserver_request_total, 409s included; and the
// writes in the quiet window after convergence.
func BenchmarkRooms(b *testing.B) {
	n := envInt("ROOMKEEPER_SCALE_ROOMS", 300)
	quiet := time.Duration(envInt("ROOMKEEPER_SCALE_QUIET", 30)) * time.Second
	e := setup(b)
	// The rooms come to a running operator, as in a cluster: the clock
	// starts once one room has come up and the operator is quiet again.
	e.readyRoom(b, "warmup", "w")
	e.settle(b, e.writes(b))
	ctx := context.Background()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "scale"}}
	if err := e.c.Create(ctx, ns); err != nil {
		b.Fatal(err)
	}
	allPods := e.watchCount(b, corev1.SchemeGroupVersion.WithKind("PodList"), ns.Name, 3*n)
	allMaps := e.watchCount(b, gamev1.GroupVersion.WithKind("MapInstanceList"), ns.Name, 3*n)
	cpu0 := e.cpu(b)
	writes0, reads0 := e.writes(b), e.reads(b)

	profiled := e.profile(b)
	start := time.Now()
	e.createRooms(b, ns.Name, n)
	created := time.Since(start)
	mapsAt := time.Duration(0)
	for pending := true; pending; {
		select {
		case <-allMaps:
			mapsAt, allMaps = time.Since(start), nil
		case <-allPods:
			pending = false
		case <-time.After(15 * time.Minute):
			b.Fatalf("not all %d pods after 15 minutes", 3*n)
		}
	}
	elapsed := time.Since(start)
	if allMaps != nil { // its watch's events came after the pods'
		<-allMaps
		mapsAt = time.Since(start)
	}
	<-profiled
	settled := e.settle(b, e.writes(b))
	converged := time.Since(start)
	cpu1 := e.cpu(b)
	reads := e.reads(b).minus(reads0)
	time.Sleep(quiet) // a fixed window, watched for writes
	quietWrites := e.writes(b).minus(settled).operator(e.scheduler)

	e.requireStatuses(b, ns.Name, n)
	perRoom := settled.minus(writes0)
	perRoom[writeKey{verb: "POST", resource: "gamerooms", code: "201"}] -= float64(n) // the harness's own
	b.ReportMetric(elapsed.Seconds(), "s-all-pods")
	b.ReportMetric(created.Seconds(), "s-to-create-rooms")
	b.ReportMetric(mapsAt.Seconds(), "s-all-mapinstances")
	b.ReportMetric(converged.Seconds(), "s-converged")
	pods := float64(3 * n)
	for _, p := range []string{"kube-apiserver", "etcd", "manager", "kube-scheduler", "harness"} {
		if d, ok := cpu1[p]; ok {
			b.ReportMetric((d-cpu0[p]).Seconds()*1000/pods, "ms-"+p+"-cpu/pod")
		}
	}
	b.ReportMetric(float64(peakRSS(b, e.manager.Process.Pid))/(1<<20), "MiB-manager-peak-rss")
	op := perRoom.operator(e.scheduler)
	b.ReportMetric(op.total()/float64(n), "writes/room")
	b.ReportMetric(op.conflicts()/float64(n), "409s/room")
	b.ReportMetric(reads.total()/float64(n), "reads/room")
	b.ReportMetric(quietWrites.total(), "writes-in-quiet-window")
	b.Logf("rooms=%d scheduler=%v; operator writes per room by verb, resource and code:\n%s", n, e.scheduler, op.table(float64(n)))
	b.Logf("reads (GET, LIST) per room, everyone's:\n%s", reads.table(float64(n)))
	if e.scheduler {
		e.reportBinding(b, ns.Name)
		b.Logf("others' writes (scheduler, nodes, leases) per room:\n%s", perRoom.others(e.scheduler).table(float64(n)))
	}
	if quietWrites.total() > 0 {
		b.Logf("writes in the %s after convergence:\n%s", quiet, quietWrites.table(1))
	}
}

// requireStatuses fails the benchmark unless all n rooms in ns report a
// status for their spec: a write the API server refused (a permission the
// chart's ClusterRole lacks, say) is not in apiserver_request_total.
func (e *env) requireStatuses(b *testing.B, ns string, n int) {
	b.Helper()
	rooms := &gamev1.GameRoomList{}
	if err := e.c.List(context.Background(), rooms, client.InNamespace(ns)); err != nil {
		b.Fatal(err)
	}
	reported := 0
	for _, r := range rooms.Items {
		if r.Status.ObservedGeneration == r.Generation {
			reported++
		}
	}
	if reported != n {
		b.Fatalf("%d of %d rooms report a status for their spec", reported, n)
	}
}

// profile starts CPU profiles of kube-apiserver and the manager when
// ROOMKEEPER_SCALE_PROFILE names a file (go tool pprof reads them); the
// channel is closed once they are written, or at once without one.
func (e *env) profile(b *testing.B) <-chan struct{} {
	done := make(chan struct{})
	path := os.Getenv("ROOMKEEPER_SCALE_PROFILE")
	if path == "" {
		close(done)
		return done
	}
	seconds := strconv.Itoa(envInt("ROOMKEEPER_SCALE_PROFILE_SECONDS", 10))
	_ = wait.For(time.Minute, func() error { // the manager starting; profiling tries anyway
		_, err := httpGet("http://" + e.pprof + "/debug/pprof/")
		return err
	})
	api := e.profileAPIServer(b, path)
	go func() {
		raw, err := httpGet("http://" + e.pprof + "/debug/pprof/profile?seconds=" + seconds)
		writeProfile(b, path+".manager", raw, err)
		<-api
		close(done)
	}()
	return done
}

// profileAPIServer writes kube-apiserver's CPU profile of the next
// ROOMKEEPER_SCALE_PROFILE_SECONDS to path; the channel is closed once it is
// written.
func (e *env) profileAPIServer(b *testing.B, path string) <-chan struct{} {
	done := make(chan struct{})
	go func() {
		defer close(done)
		raw, err := e.clientset.RESTClient().Get().AbsPath("/debug/pprof/profile").
			Param("seconds", strconv.Itoa(envInt("ROOMKEEPER_SCALE_PROFILE_SECONDS", 10))).
			Timeout(10 * time.Minute).DoRaw(context.Background())
		writeProfile(b, path, raw, err)
	}()
	return done
}

func writeProfile(b *testing.B, path string, raw []byte, err error) {
	if err == nil {
		err = os.WriteFile(path, raw, 0o644)
	}
	if err != nil {
		b.Errorf("profiling for %s: %v", path, err)
	}
}

func httpGet(url string) ([]byte, error) {
	resp, err := http.Get(url)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("GET %s: %s", url, resp.Status)
	}
	return io.ReadAll(resp.Body)
}

// settle waits until the operator has made no write for 2 s (the status
// writes that follow the last pod's creation) and returns the counts then.
func (e *env) settle(b *testing.B, last writeCounts) writeCounts {
	b.Helper()
	quietFor := 0
	for deadline := time.Now().Add(5 * time.Minute); time.Now().Before(deadline); {
		time.Sleep(time.Second) // sampling the apiserver's counters
		now := e.writes(b)
		if now.minus(last).operator(e.scheduler).total() == 0 {
			if quietFor++; quietFor == 2 {
				return now
			}
		} else {
			quietFor = 0
		}
		last = now
	}
	b.Fatal("the operator still writes 5 minutes after the last pod")
	return nil
}

// reportBinding reports how many pods the scheduler bound to a node, and
// why it could not bind one, if it could not.
func (e *env) reportBinding(b *testing.B, ns string) {
	b.Helper()
	var pods corev1.PodList
	if err := e.c.List(context.Background(), &pods, client.InNamespace(ns)); err != nil {
		b.Fatal(err)
	}
	bound := 0
	for i := range pods.Items {
		if pods.Items[i].Spec.NodeName != "" {
			bound++
		}
	}
	b.ReportMetric(float64(bound), "pods-bound")
	var events eventsv1.EventList
	if err := e.c.List(context.Background(), &events, client.InNamespace(ns), client.Limit(50)); err != nil {
		b.Fatal(err)
	}
	for _, ev := range events.Items {
		if ev.Reason == "FailedScheduling" {
			b.Logf("not scheduled: %s", ev.Note)
			return
		}
	}
}

func envInt(name string, def int) int {
	if v, err := strconv.Atoi(os.Getenv(name)); err == nil && v > 0 {
		return v
	}
	return def
}

// createRooms creates rooms r0..r<n-1> with 16 concurrent creators.
func (e *env) createRooms(b *testing.B, ns string, n int) {
	var next atomic.Int64
	var wg sync.WaitGroup
	errs := make(chan error, creators)
	for range creators {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := int(next.Add(1)) - 1; i < n; i = int(next.Add(1)) - 1 {
				if err := e.c.Create(context.Background(), room(ns, fmt.Sprintf("r%d", i))); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		b.Fatal(err)
	}
}

// watchCount returns a channel closed once want objects of a kind (its
// list's GroupVersionKind) exist in ns, counted from one watch (polling a
// list would add its own load on the API server).
func (e *env) watchCount(b *testing.B, listGVK schema.GroupVersionKind, ns string, want int) <-chan struct{} {
	list := &metav1.PartialObjectMetadataList{}
	list.SetGroupVersionKind(listGVK)
	w, err := e.c.Watch(context.Background(), list, client.InNamespace(ns))
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(w.Stop)
	done := make(chan struct{})
	go func() {
		seen := map[string]bool{}
		for ev := range w.ResultChan() {
			if ev.Type != watch.Added {
				continue
			}
			if obj, ok := ev.Object.(client.Object); ok {
				seen[obj.GetName()] = true
			}
			if len(seen) == want {
				w.Stop() // no more events to send
				close(done)
				return
			}
		}
	}()
	return done
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
	var pod *corev1.Pod
	wait.Eventually(b, 2*time.Minute, "a running pod demo-town other than the crashed one", func() error {
		pod = &corev1.Pod{}
		if err := c.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: "demo-town"}, pod); err != nil {
			return err
		}
		if pod.DeletionTimestamp != nil || pod.Status.Phase == corev1.PodFailed || pod.UID == not {
			return fmt.Errorf("pod %s is the old one or ending (%s)", pod.UID, pod.Status.Phase)
		}
		return nil
	})
	return pod
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

// cpu is the CPU time used so far by this benchmark's child processes
// (kube-apiserver, etcd, the manager, kube-scheduler), by program name,
// and by this process ("harness"). Only children count: other control
// planes on the machine are not ours.
func (e *env) cpu(b *testing.B) map[string]time.Duration {
	b.Helper()
	out := map[string]time.Duration{"harness": testenv.Self().CPU} // its creators and watches share the 2 cores
	for _, p := range testenv.Children() {
		name := p.Name
		if p.PID == e.manager.Process.Pid {
			name = "manager" // whatever ROOMKEEPER_SCALE_MANAGER calls it
		}
		out[name] += p.CPU
	}
	return out
}

// writeKey is one series of apiserver_request_total that changes state.
type writeKey struct{ verb, resource, subresource, code string }

func (k writeKey) String() string {
	r := k.resource
	if k.subresource != "" {
		r += "/" + k.subresource
	}
	return fmt.Sprintf("%-7s %-26s %s", k.verb, r, k.code)
}

type writeCounts map[writeKey]float64

// writes reads the apiserver's apiserver_request_total for every verb that
// changes state.
func (e *env) writes(b *testing.B) writeCounts {
	b.Helper()
	return e.requests(b, "POST", "PUT", "PATCH", "DELETE", "APPLY", "DELETECOLLECTION")
}

// reads reads the apiserver_request_total of the verbs that read once (not
// WATCH, which stays open): every request costs the API server its
// authentication, authorization and encoding.
func (e *env) reads(b *testing.B) writeCounts {
	b.Helper()
	return e.requests(b, "GET", "LIST")
}

// requests reads the apiserver's apiserver_request_total for verbs.
func (e *env) requests(b *testing.B, verbs ...string) writeCounts {
	b.Helper()
	raw, err := e.clientset.RESTClient().Get().AbsPath("/metrics").DoRaw(context.Background())
	if err != nil {
		b.Fatalf("reading the apiserver's metrics: %v", err)
	}
	out := writeCounts{}
	for _, line := range strings.Split(string(raw), "\n") {
		if !strings.HasPrefix(line, "apiserver_request_total{") {
			continue
		}
		end := strings.LastIndexByte(line, '}')
		labels := parseLabels(line[len("apiserver_request_total{"):end])
		if !slices.Contains(verbs, labels["verb"]) {
			continue
		}
		v, err := strconv.ParseFloat(strings.TrimSpace(line[end+1:]), 64)
		if err != nil {
			continue
		}
		out[writeKey{labels["verb"], labels["resource"], labels["subresource"], labels["code"]}] += v
	}
	return out
}

func parseLabels(s string) map[string]string {
	out := map[string]string{}
	for s != "" {
		eq := strings.IndexByte(s, '=')
		if eq < 0 {
			break
		}
		name := s[:eq]
		rest := s[eq+2:] // past ="
		end := strings.IndexByte(rest, '"')
		out[name] = rest[:end]
		s = strings.TrimPrefix(rest[end+1:], ",")
	}
	return out
}

func (w writeCounts) minus(base writeCounts) writeCounts {
	out := writeCounts{}
	for k, v := range w {
		if d := v - base[k]; d != 0 {
			out[k] = d
		}
	}
	return out
}

// notOperator are the resources only others write here: the scheduler
// (bindings, pod status, its events), the fake nodes and leader leases.
func notOperator(k writeKey, scheduler bool) bool {
	switch {
	case k.resource == "leases", k.resource == "nodes", k.resource == "namespaces", k.subresource == "binding":
		return true
	case scheduler && (k.resource == "events" || (k.resource == "pods" && k.subresource == "status")):
		return true
	}
	return false
}

func (w writeCounts) operator(scheduler bool) writeCounts {
	out := writeCounts{}
	for k, v := range w {
		if !notOperator(k, scheduler) {
			out[k] = v
		}
	}
	return out
}

func (w writeCounts) others(scheduler bool) writeCounts {
	out := writeCounts{}
	for k, v := range w {
		if notOperator(k, scheduler) {
			out[k] = v
		}
	}
	return out
}

func (w writeCounts) total() float64 {
	var sum float64
	for _, v := range w {
		sum += v
	}
	return sum
}

func (w writeCounts) conflicts() float64 {
	var sum float64
	for k, v := range w {
		if k.code == "409" {
			sum += v
		}
	}
	return sum
}

// table lists the counts divided by per, one series a line.
func (w writeCounts) table(per float64) string {
	keys := make([]writeKey, 0, len(w))
	for k := range w {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool { return keys[i].String() < keys[j].String() })
	var sb strings.Builder
	for _, k := range keys {
		fmt.Fprintf(&sb, "  %s  %.2f\n", k, w[k]/per)
	}
	fmt.Fprintf(&sb, "  total %.2f", w.total()/per)
	return sb.String()
}
