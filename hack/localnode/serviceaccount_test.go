package main

import (
	"context"
	"errors"
	"net/url"
	"os"
	"path/filepath"
	"testing"

	authenticationv1 "k8s.io/api/authentication/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/utils/ptr"
)

// podClient is a client built from the kubeconfig the pod's process got.
func podClient(t *testing.T, report fakeReport) kubernetes.Interface {
	t.Helper()
	path, ok := envOf(report.Env, "KUBECONFIG")
	if !ok {
		t.Fatalf("the process got no KUBECONFIG: env %q", report.Env)
	}
	cfg, err := clientcmd.BuildConfigFromFlags("", path)
	if err != nil {
		t.Fatal(err)
	}
	c, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func TestPodActsAsItsServiceAccount(t *testing.T) {
	t.Parallel()
	const node = "node-sa"
	a := startAgent(t, node, "127.0.22.")
	ns := newNamespace(t)
	createServiceAccount(t, ns, "robot", nil)
	reportPath := filepath.Join(t.TempDir(), "report.json")
	createPod(t, newPod(ns, "acting", node, withServiceAccount("robot"), withReport(reportPath)))
	waitPod(t, ns, "acting", "acting to be Ready", isRunningAndReady)
	report := readReport(t, reportPath)

	podDir := filepath.Join(a.cfg.workdir, ns, "acting")
	if path, _ := envOf(report.Env, "KUBECONFIG"); path != filepath.Join(podDir, "kubeconfig") {
		t.Errorf("KUBECONFIG %q, want the pod's own in %s", path, podDir)
	}
	expectServiceEnv(t, report.Env)
	expectFile(t, filepath.Join(podDir, "serviceaccount", "namespace"), ns)
	expectFile(t, filepath.Join(podDir, "serviceaccount", "ca.crt"), string(apiConfig.CAData))

	ctx := context.Background()
	c := podClient(t, report)
	review, err := c.AuthenticationV1().SelfSubjectReviews().Create(ctx, &authenticationv1.SelfSubjectReview{}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if want := "system:serviceaccount:" + ns + ":robot"; review.Status.UserInfo.Username != want {
		t.Errorf("the pod's kubeconfig authenticates as %q, want %q", review.Status.UserInfo.Username, want)
	}
	if _, err := c.CoreV1().Secrets(ns).List(ctx, metav1.ListOptions{}); !apierrors.IsForbidden(err) {
		t.Errorf("listing Secrets without RBAC: %v, want 403 Forbidden", err)
	}
}

// expectServiceEnv checks the variables a kubelet sets for the API server.
func expectServiceEnv(t *testing.T, env []string) {
	t.Helper()
	u, err := url.Parse(apiConfig.Host)
	if err != nil {
		t.Fatal(err)
	}
	host, _ := envOf(env, "KUBERNETES_SERVICE_HOST")
	port, _ := envOf(env, "KUBERNETES_SERVICE_PORT")
	if host != u.Hostname() || port != u.Port() {
		t.Errorf("KUBERNETES_SERVICE_HOST=%q KUBERNETES_SERVICE_PORT=%q, want the API server %s", host, port, apiConfig.Host)
	}
}

func expectFile(t *testing.T, path, want string) {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil || string(data) != want {
		t.Errorf("%s holds %q, %v; want %q", path, data, err, want)
	}
}

func TestPodWaitsForItsServiceAccount(t *testing.T) {
	t.Parallel()
	const node = "node-sa-wait"
	startAgent(t, node, "127.0.23.")
	ns := newNamespace(t)
	createPod(t, newPod(ns, "early", node, withServiceAccount("ghost")))
	waitPod(t, ns, "early", "early to wait for its ServiceAccount", waitingWith(reasonCreating, "ServiceAccount ghost"))
	createServiceAccount(t, ns, "ghost", nil)
	waitPod(t, ns, "early", "early to run once its ServiceAccount exists", isRunningAndReady)
}

func TestNoCredentialsWithoutAutomount(t *testing.T) {
	t.Parallel()
	const node = "node-sa-none"
	a := startAgent(t, node, "127.0.24.")
	ns := newNamespace(t)
	createServiceAccount(t, ns, "quiet", ptr.To(false))
	pods := map[string]podOption{
		"pod-says-no":            withAutomount(false),
		"serviceaccount-says-no": withServiceAccount("quiet"),
	}
	reports := map[string]string{}
	for name, opt := range pods {
		reports[name] = filepath.Join(t.TempDir(), name+".json")
		createPod(t, newPod(ns, name, node, opt, withReport(reports[name])))
	}
	for name := range pods {
		waitPod(t, ns, name, name+" to be Ready", isRunningAndReady)
		report := readReport(t, reports[name])
		if v, ok := envOf(report.Env, "KUBECONFIG"); ok {
			t.Errorf("%s: the process got KUBECONFIG=%s", name, v)
		}
		expectServiceEnv(t, report.Env)
		_, err := os.Stat(filepath.Join(a.cfg.workdir, ns, name, "serviceaccount"))
		if !errors.Is(err, os.ErrNotExist) {
			t.Errorf("%s: the pod has a credentials directory (stat: %v)", name, err)
		}
	}
}
