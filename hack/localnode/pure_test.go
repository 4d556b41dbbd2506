package main

import (
	"errors"
	"fmt"
	"io"
	"os/exec"
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
)

func TestRewriteArgs(t *testing.T) {
	mounts := map[string]string{"/var/run/keys": "/w/ns/p/volumes/keys", "/var/run/keys/sub": "/w/sub"}
	tests := []struct{ in, want string }{
		{"--key-dir=/var/run/keys", "--key-dir=/w/ns/p/volumes/keys"},
		{"--key-file=/var/run/keys/current.key", "--key-file=/w/ns/p/volumes/keys/current.key"},
		{"--key-dir=/var/run/keys/sub/x", "--key-dir=/w/sub/x"},
		{"/var/run/keys/a", "/w/ns/p/volumes/keys/a"},
		{"--key-dir=/var/run/keys2", "--key-dir=/var/run/keys2"},
		{"--listen=:7350", "--listen=127.0.10.2:7350"},
		{"--http-listen=:8080", "--http-listen=127.0.10.2:8080"},
		{"--listen=0.0.0.0:7350", "--listen=0.0.0.0:7350"},
		{"--listen=:http", "--listen=:http"},
		{"--room=a=:1", "--room=a=:1"},
		{"plain", "plain"},
	}
	for _, tt := range tests {
		got := rewriteArgs([]string{tt.in}, mounts, "127.0.10.2")
		if got[0] != tt.want {
			t.Errorf("rewriteArgs(%q) = %q, want %q", tt.in, got[0], tt.want)
		}
	}
}

func TestResolveImage(t *testing.T) {
	images := map[string]string{"roomkeeper/roomserver": "/bin/rs", "exact:v2": "/bin/exact"}
	tests := []struct{ image, want string }{
		{"roomkeeper/roomserver", "/bin/rs"},
		{"roomkeeper/roomserver:latest", "/bin/rs"},
		{"roomkeeper/roomserver@sha256:abc", "/bin/rs"},
		{"exact:v2", "/bin/exact"},
		{"exact:v1", ""},
		{"registry:5000/roomkeeper/roomserver", ""},
	}
	for _, tt := range tests {
		got, err := resolveImage(images, tt.image)
		if got != tt.want || (tt.want == "") != errors.Is(err, errUnsupported) {
			t.Errorf("resolveImage(%q) = %q, %v; want %q", tt.image, got, err, tt.want)
		}
	}
}

func TestIPPoolReusesReleasedAddresses(t *testing.T) {
	p := newIPPool("127.0.10.")
	var got []string
	for range lastHost - firstHost + 1 {
		ip, err := p.allocate()
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, ip)
	}
	if got[0] != "127.0.10.2" || got[len(got)-1] != "127.0.10.254" {
		t.Fatalf("first and last addresses %s, %s", got[0], got[len(got)-1])
	}
	if _, err := p.allocate(); !errors.Is(err, errNoAddress) {
		t.Fatalf("allocate on a full pool: %v", err)
	}
	p.release("127.0.10.7")
	p.release("10.0.0.7")
	p.release("x")
	if ip, err := p.allocate(); ip != "127.0.10.7" || err != nil {
		t.Fatalf("allocate after release = %s, %v", ip, err)
	}
}

func TestParseFlags(t *testing.T) {
	good := []string{"--kubeconfig", "kc", "--workdir", "w", "--image-map", "a=/bin/a, b:1=/bin/b"}
	cfg, err := parseFlags(good, io.Discard)
	if err != nil || cfg.images["b:1"] != "/bin/b" || cfg.addressPrefix != "127.0.10." || cfg.nodeName != "roomkeeper-local" ||
		cfg.nodeIP != "127.0.0.1" {
		t.Fatalf("parseFlags = %+v, %v", cfg, err)
	}
	cfg, err = parseFlags(append(slices.Clone(good), "--node-ip", "127.0.11.1"), io.Discard)
	if err != nil || cfg.nodeIP != "127.0.11.1" {
		t.Fatalf("parseFlags with --node-ip = %+v, %v", cfg, err)
	}
	bad := [][]string{
		{"--workdir", "w", "--image-map", "a=/bin/a"},
		{"--kubeconfig", "kc", "--workdir", "w"},
		{"--kubeconfig", "kc", "--workdir", "w", "--image-map", "a=relative"},
		{"--kubeconfig", "kc", "--workdir", "w", "--image-map", "a=/bin/a", "--address-prefix", "127.0.10"},
		{"--kubeconfig", "kc", "--workdir", "w", "--image-map", "a=/bin/a", "--node-ip", "127.0.11"},
	}
	for _, args := range bad {
		if _, err := parseFlags(args, io.Discard); err == nil {
			t.Errorf("parseFlags(%q) accepted", args)
		}
	}
}

func TestApplyStatus(t *testing.T) {
	start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	running := runState{podIP: "127.0.10.2", pid: 7, binary: "/bin/rs", started: start}
	tests := []struct {
		name       string
		state      runState
		phase      corev1.PodPhase
		ready      bool
		exitCode   int32
		terminated bool
	}{
		{"pending", runState{waitReason: reasonConfigError, message: "no Secret"}, corev1.PodPending, false, 0, false},
		{"running", running, corev1.PodRunning, false, 0, false},
		{"ready", with(running, func(s *runState) { s.ready = true }), corev1.PodRunning, true, 0, false},
		{"failed", with(running, func(s *runState) { s.exited, s.exitCode, s.ready = true, 3, true }), corev1.PodFailed, false, 3, true},
		{"succeeded", with(running, func(s *runState) { s.exited = true }), corev1.PodSucceeded, false, 0, true},
		{"cannot run", runState{failed: true, waitReason: reasonUnsupported, message: "no image"}, corev1.PodFailed, false, cannotRunExitCode, true},
	}
	for _, tt := range tests {
		pod := &corev1.Pod{Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "i"}}}}
		applyStatus(pod, tt.state, "127.0.11.1", start)
		if pod.Status.HostIP != "127.0.11.1" || len(pod.Status.HostIPs) != 1 || pod.Status.HostIPs[0].IP != "127.0.11.1" {
			t.Errorf("%s: hostIP %q, hostIPs %v", tt.name, pod.Status.HostIP, pod.Status.HostIPs)
		}
		cs := pod.Status.ContainerStatuses[0]
		term := cs.State.Terminated
		if pod.Status.Phase != tt.phase || cs.Ready != tt.ready || (term != nil) != tt.terminated ||
			(term != nil && term.ExitCode != tt.exitCode) {
			t.Errorf("%s: phase %s, container %+v", tt.name, pod.Status.Phase, cs)
		}
		want := corev1.ConditionFalse
		if tt.ready {
			want = corev1.ConditionTrue
		}
		if podCondition(pod, corev1.PodReady) != want || podCondition(pod, corev1.ContainersReady) != want {
			t.Errorf("%s: conditions %+v", tt.name, pod.Status.Conditions)
		}
	}
}

func with(s runState, f func(*runState)) runState {
	f(&s)
	return s
}

func TestSetConditionKeepsTransitionTime(t *testing.T) {
	t0, t1 := time.Unix(100, 0), time.Unix(200, 0)
	var st corev1.PodStatus
	setCondition(&st, corev1.PodReady, false, reasonNotReady, t0)
	setCondition(&st, corev1.PodReady, false, reasonNotReady, t1)
	if got := st.Conditions[0].LastTransitionTime.Time; !got.Equal(t0) {
		t.Errorf("unchanged status moved the transition time to %v", got)
	}
	setCondition(&st, corev1.PodReady, true, reasonNotReady, t1)
	if c := st.Conditions[0]; !c.LastTransitionTime.Time.Equal(t1) || c.Reason != "" || len(st.Conditions) != 1 {
		t.Errorf("after becoming ready: %+v", st.Conditions)
	}
}

func TestExitCodeOfSignal(t *testing.T) {
	cmd := exec.Command("sh", "-c", "kill -KILL $$")
	_ = cmd.Run()
	if got := exitCodeOf(cmd.ProcessState); got != 128+9 {
		t.Errorf("exit code of a SIGKILLed process = %d, want 137", got)
	}
	cmd = exec.Command("sh", "-c", "exit 4")
	_ = cmd.Run()
	if got := exitCodeOf(cmd.ProcessState); got != 4 {
		t.Errorf("exit code = %d, want 4", got)
	}
}

func TestProbeURL(t *testing.T) {
	c := corev1.Container{Name: "c", Ports: []corev1.ContainerPort{{Name: "http", ContainerPort: 8080}}}
	tests := []struct {
		get  corev1.HTTPGetAction
		want string
	}{
		{corev1.HTTPGetAction{Path: "/readyz", Port: intstr.FromString("http")}, "http://127.0.10.2:8080/readyz"},
		{corev1.HTTPGetAction{Path: "healthz", Port: intstr.FromInt32(9000), Scheme: corev1.URISchemeHTTPS}, "https://127.0.10.2:9000/healthz"},
		{corev1.HTTPGetAction{Port: intstr.FromString("nope")}, ""},
		{corev1.HTTPGetAction{Port: intstr.FromInt32(0)}, ""},
	}
	for _, tt := range tests {
		got, err := probeURL(&tt.get, c, "127.0.10.2")
		if got != tt.want || (err != nil) != (tt.want == "") {
			t.Errorf("probeURL(%+v) = %q, %v; want %q", tt.get, got, err, tt.want)
		}
	}
}

func TestCheckRunnable(t *testing.T) {
	one := []corev1.Container{{Name: "a"}}
	tests := []struct {
		name string
		spec corev1.PodSpec
		ok   bool
	}{
		{"one container", corev1.PodSpec{Containers: one}, true},
		{"no containers", corev1.PodSpec{}, false},
		{"two containers", corev1.PodSpec{Containers: append(slices.Clone(one), corev1.Container{Name: "b"})}, false},
		{"init container", corev1.PodSpec{Containers: one, InitContainers: one}, false},
		{"command", corev1.PodSpec{Containers: []corev1.Container{{Name: "a", Command: []string{"x"}}}}, false},
		{"TCP host port", corev1.PodSpec{Containers: []corev1.Container{{Name: "a", Ports: []corev1.ContainerPort{
			{ContainerPort: 80, HostPort: 8080}, {ContainerPort: 81, HostPort: 8081, Protocol: corev1.ProtocolTCP},
			{ContainerPort: 53, Protocol: corev1.ProtocolUDP},
		}}}}, true},
		{"UDP host port", corev1.PodSpec{Containers: []corev1.Container{{Name: "a", Ports: []corev1.ContainerPort{
			{ContainerPort: 53, HostPort: 53, Protocol: corev1.ProtocolUDP},
		}}}}, false},
	}
	for _, tt := range tests {
		err := checkRunnable(&corev1.Pod{Spec: tt.spec})
		if (err == nil) != tt.ok || (err != nil && !errors.Is(err, errUnsupported)) {
			t.Errorf("%s: %v", tt.name, err)
		}
	}
}

func TestHostPorts(t *testing.T) {
	c := corev1.Container{Ports: []corev1.ContainerPort{
		{Name: "http", ContainerPort: 8080},
		{Name: "game", ContainerPort: 7350, HostPort: 30001},
		{Name: "pinned", ContainerPort: 7351, HostPort: 30002, HostIP: "127.0.0.1"},
	}}
	want := []hostPort{
		{port: 30001, listen: "127.0.11.1:30001", target: "127.0.10.2:7350"},
		{port: 30002, listen: "127.0.0.1:30002", target: "127.0.10.2:7351"},
	}
	if got := hostPorts(c, "127.0.11.1", "127.0.10.2"); !slices.Equal(got, want) {
		t.Errorf("hostPorts = %+v, want %+v", got, want)
	}
}

func TestWaitReasonOf(t *testing.T) {
	tests := []struct {
		err  error
		want string
	}{
		{errors.New("reading Secret keys: not found"), reasonConfigError},
		{creating(errors.New("hostPort 30001: address already in use")), reasonCreating},
		{fmt.Errorf("wrapped: %w", creating(errors.New("ServiceAccount robot: not found"))), reasonCreating},
	}
	for _, tt := range tests {
		if got := waitReasonOf(tt.err); got != tt.want {
			t.Errorf("waitReasonOf(%v) = %q, want %q", tt.err, got, tt.want)
		}
	}
}

func TestAutomount(t *testing.T) {
	pod := func(v *bool) *corev1.Pod {
		return &corev1.Pod{Spec: corev1.PodSpec{AutomountServiceAccountToken: v}}
	}
	sa := func(v *bool) *corev1.ServiceAccount { return &corev1.ServiceAccount{AutomountServiceAccountToken: v} }
	yes, no := ptr.To(true), ptr.To(false)
	tests := []struct {
		name string
		pod  *corev1.Pod
		sa   *corev1.ServiceAccount
		want bool
	}{
		{"both unset", pod(nil), sa(nil), true},
		{"not read yet", pod(nil), nil, true},
		{"pod says no", pod(no), sa(yes), false},
		{"ServiceAccount says no", pod(nil), sa(no), false},
		{"pod wins over ServiceAccount", pod(yes), sa(no), true},
	}
	for _, tt := range tests {
		if got := automount(tt.pod, tt.sa); got != tt.want {
			t.Errorf("%s: automount = %v, want %v", tt.name, got, tt.want)
		}
	}
}

func TestRenewTime(t *testing.T) {
	issued := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	got := renewTime(issued, issued.Add(time.Hour))
	if want := issued.Add(48 * time.Minute); !got.Equal(want) {
		t.Errorf("renewTime for a one-hour token = %v, want %v", got, want)
	}
}

func TestServiceEnvAndPodKubeconfig(t *testing.T) {
	api, err := newAPIServer(&rest.Config{Host: "https://127.0.0.1:6443", TLSClientConfig: rest.TLSClientConfig{CAData: []byte("ca")}})
	if err != nil {
		t.Fatal(err)
	}
	wantEnv := []string{"KUBERNETES_SERVICE_HOST=127.0.0.1", "KUBERNETES_SERVICE_PORT=6443"}
	if got := api.serviceEnv(); !slices.Equal(got, wantEnv) {
		t.Errorf("serviceEnv = %q, want %q", got, wantEnv)
	}
	bare, err := newAPIServer(&rest.Config{Host: "api.example.com", TLSClientConfig: rest.TLSClientConfig{Insecure: true}})
	if err != nil {
		t.Fatal(err)
	}
	if got := bare.serviceEnv(); !slices.Equal(got, []string{"KUBERNETES_SERVICE_HOST=api.example.com", "KUBERNETES_SERVICE_PORT=443"}) {
		t.Errorf("serviceEnv without a port = %q", got)
	}
	if c := bare.podKubeconfig("games", "/d").Clusters[kubeconfigEntryName]; !c.InsecureSkipTLSVerify {
		t.Errorf("an insecure agent gave its pods a cluster that verifies TLS: %+v", c)
	}
	kc := api.podKubeconfig("games", "/w/games/p/serviceaccount")
	ctx := kc.Contexts[kc.CurrentContext]
	cluster, user := kc.Clusters[ctx.Cluster], kc.AuthInfos[ctx.AuthInfo]
	if ctx.Namespace != "games" || cluster.Server != "https://127.0.0.1:6443" ||
		cluster.CertificateAuthority != "/w/games/p/serviceaccount/ca.crt" || user.TokenFile != "/w/games/p/serviceaccount/token" {
		t.Errorf("pod kubeconfig: context %+v, cluster %+v, user %+v", ctx, cluster, user)
	}
	if c := bare.podKubeconfig("games", "/d").Clusters[kubeconfigEntryName]; c.CertificateAuthority != "" {
		t.Errorf("a kubeconfig without a known CA names %q", c.CertificateAuthority)
	}
}

func TestTokenRequestIsBoundToANamedServiceAccount(t *testing.T) {
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", UID: "u1"}, Spec: corev1.PodSpec{ServiceAccountName: "robot"}}
	ref := tokenRequest(pod).Spec.BoundObjectRef
	if ref == nil || ref.Kind != "Pod" || ref.Name != "p" || ref.UID != "u1" {
		t.Errorf("bound object %+v, want the pod", ref)
	}
	if got := ptr.Deref(tokenRequest(pod).Spec.ExpirationSeconds, 0); got != 3600 {
		t.Errorf("expiration %d s, want 3600", got)
	}
	pod.Spec.ServiceAccountName = ""
	if ref := tokenRequest(pod).Spec.BoundObjectRef; ref != nil || serviceAccountName(pod) != "default" {
		t.Errorf("a pod naming no ServiceAccount: bound to %+v, ServiceAccount %q", ref, serviceAccountName(pod))
	}
}
