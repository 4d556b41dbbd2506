// Package install_test checks what a platform team installs: the Helm
// chart and the kustomize output apply to a real kube-apiserver, the chart
// carries the generated CRDs and roles, its values are documented, and its
// alerts and dashboard name series the binaries export.
package install_test

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/roomkeeper/roomkeeper/internal/testenv"
)

var (
	root       string
	kubeconfig string
)

func TestMain(m *testing.M) {
	os.Exit(run(m))
}

func run(m *testing.M) int {
	var err error
	if root, err = testenv.RepoRoot(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	gatewayCRDs, err := testenv.GatewayAPICRDs()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	cp, err := testenv.Start(gatewayCRDs)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer func() { _ = cp.Stop() }()
	dir, err := os.MkdirTemp("", "roomkeeper-install-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(dir)
	kubeconfig = filepath.Join(dir, "kubeconfig")
	if err := testenv.WriteKubeconfig(kubeconfig, "envtest", cp.Config); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	if err := prepareCluster(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return m.Run()
}

// installNamespace is where the chart and the kustomize output go; it must
// exist for a dry run of what lives in it.
const installNamespace = "roomkeeper-system"

// prepareCluster creates the namespace and the stand-ins for the
// prometheus-operator CRDs.
func prepareCluster() error {
	if _, err := kubectl(nil, "create", "namespace", installNamespace); err != nil {
		return err
	}
	if _, err := kubectl(nil, "apply", "-f", filepath.Join(root, "test", "install", "testdata", "monitoring-crds.yaml")); err != nil {
		return err
	}
	_, err := kubectl(nil, "wait", "--for=condition=Established", "--timeout=60s",
		"crd/servicemonitors.monitoring.coreos.com", "crd/podmonitors.monitoring.coreos.com", "crd/prometheusrules.monitoring.coreos.com")
	return err
}

// kubectl runs kubectl against the test's control plane with stdin.
func kubectl(stdin []byte, args ...string) (string, error) {
	return runTool(stdin, "kubectl", append([]string{"--kubeconfig", kubeconfig}, args...)...)
}

// tool is the path make test passes in env for a tool it built; a run
// without it fails and says how to get it.
func tool(t *testing.T, env, makeTarget string) string {
	t.Helper()
	path := os.Getenv(env)
	if path == "" {
		t.Fatalf("%s is not set: run `make test` (it builds %s and passes its path)", env, makeTarget)
	}
	if _, err := os.Stat(path); err != nil {
		t.Fatalf("%s=%s: %v", env, path, err)
	}
	return path
}

func runTool(stdin []byte, name string, args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Dir = root
	if stdin != nil {
		cmd.Stdin = bytes.NewReader(stdin)
	}
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return stdout.String(), fmt.Errorf("%s %s: %w\n%s", name, strings.Join(args, " "), err, stderr.String())
	}
	return stdout.String(), nil
}

// dryRunApply applies manifests with a server-side dry run: the API server
// validates every object (schemas, CRD structure, RBAC rules) and writes
// nothing.
func dryRunApply(t *testing.T, manifests string) string {
	t.Helper()
	out, err := kubectl([]byte(manifests), "apply", "--dry-run=server", "-f", "-")
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// applied reports whether kubectl's output names kind/name as applied.
func applied(out, kindName string) bool {
	for _, line := range strings.Split(out, "\n") {
		if strings.HasPrefix(line, kindName+" ") && strings.HasSuffix(line, "(server dry run)") {
			return true
		}
	}
	return false
}

// appliesAny reports whether kubectl's output applied anything whose
// kind/name starts with prefix.
func appliesAny(out, prefix string) bool {
	for _, line := range strings.Split(out, "\n") {
		if strings.HasPrefix(line, prefix) {
			return true
		}
	}
	return false
}
