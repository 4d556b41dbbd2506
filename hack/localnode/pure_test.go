package main

import (
	"errors"
	"io"
	"os/exec"
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
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
	if err != nil || cfg.images["b:1"] != "/bin/b" || cfg.addressPrefix != "127.0.10." || cfg.nodeName != "roomkeeper-local" {
		t.Fatalf("parseFlags = %+v, %v", cfg, err)
	}
	bad := [][]string{
		{"--workdir", "w", "--image-map", "a=/bin/a"},
		{"--kubeconfig", "kc", "--workdir", "w"},
		{"--kubeconfig", "kc", "--workdir", "w", "--image-map", "a=relative"},
		{"--kubeconfig", "kc", "--workdir", "w", "--image-map", "a=/bin/a", "--address-prefix", "127.0.10"},
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
		applyStatus(pod, tt.state, start)
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
	}
	for _, tt := range tests {
		err := checkRunnable(&corev1.Pod{Spec: tt.spec})
		if (err == nil) != tt.ok || (err != nil && !errors.Is(err, errUnsupported)) {
			t.Errorf("%s: %v", tt.name, err)
		}
	}
}
