// Package cluster runs Roomkeeper on a real Kubernetes: make cluster's
// control plane and two nodes, each with its own containerd, runc (with
// seccomp) and kubelet, built from source, in network and mount namespaces
// the suite makes and removes. It installs the chart as docs/install.md
// says, in namespaces that enforce the restricted Pod Security Standard,
// and plays through what the nodes run.
//
// It needs root (namespaces, cgroups, mounts) and what make test builds
// first: the images (make images, make cluster-images) and a node's parts
// (hack/node.sh, ROOMKEEPER_NODE_BIN). A missing part fails the suite; it
// never skips.
package cluster

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	goruntime "runtime"
	"strings"
	"testing"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	gamev1 "github.com/roomkeeper/roomkeeper/api/v1"
	"github.com/roomkeeper/roomkeeper/internal/netns"
	"github.com/roomkeeper/roomkeeper/internal/testenv"
)

// cgroupName keeps the suite's pods apart from a developer's make cluster.
const cgroupName = "roomkeeper-test-cluster"

// suite is what TestMain sets up.
var suite struct {
	root, dir, binary string
	kubeconfig        string
	// version is the tag of make images' archives.
	version string
	k8s     client.Client
	// dial makes connections inside the control plane's namespace, where
	// pod addresses route.
	dial func(string) (net.Conn, error)
	// nodeAddresses are the nodes' InternalIPs, in the order of their names.
	nodeAddresses []string
	err           error
}

func TestMain(m *testing.M) {
	os.Exit(run(m))
}

func run(m *testing.M) int {
	log.SetLogger(logr.Discard()) // the suite reports through its tests
	suite.err = setUp()
	code := m.Run()
	if chart.done && chart.err == nil && suite.err == nil {
		if err := uninstall(); err != nil {
			fmt.Fprintln(os.Stderr, "test/cluster: uninstalling:", err)
			code = 1
		}
	}
	if suite.binary != "" {
		if err := tearDown(); err != nil {
			fmt.Fprintln(os.Stderr, "test/cluster: tearing the cluster down:", err)
			code = 1
		}
	}
	return code
}

// installed fails the test when the cluster could not be set up, has the
// chart installed (once for the suite: chartInstalled) and returns a
// context that ends after timeout, or with the test.
func installed(t *testing.T, timeout time.Duration) context.Context {
	t.Helper()
	if suite.err != nil {
		t.Fatalf("the cluster: %v", suite.err)
	}
	chartInstalled(t)
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	t.Cleanup(cancel)
	return ctx
}

func setUp() error {
	var err error
	if suite.root, err = testenv.RepoRoot(); err != nil {
		return err
	}
	if os.Geteuid() != 0 {
		return errors.New("test/cluster runs a real node: it needs root (namespaces, cgroups, mounts)")
	}
	controlPlane, err := testenv.AssetsDir()
	if err != nil {
		return err
	}
	nodeBin := os.Getenv("ROOMKEEPER_NODE_BIN")
	if nodeBin == "" {
		return errors.New("ROOMKEEPER_NODE_BIN is not set: run `make test` (hack/node.sh builds the node's parts)")
	}
	images, err := imageArchives()
	if err != nil {
		return err
	}
	if suite.dir, err = os.MkdirTemp("", "roomkeeper-cluster-"); err != nil {
		return err
	}
	// Postgres runs as its own OS user: it must reach its directory.
	if err := os.Chmod(suite.dir, 0o755); err != nil {
		return err
	}
	suite.binary = filepath.Join(suite.dir, "cluster")
	build := exec.Command("go", "build", "-o", suite.binary, "./hack/cluster")
	build.Dir = suite.root
	if out, err := build.CombinedOutput(); err != nil {
		return fmt.Errorf("building hack/cluster: %w\n%s", err, out)
	}
	args := append([]string{"up", "--dir", filepath.Join(suite.dir, "state"), "--cgroup", cgroupName,
		"--control-plane", controlPlane, "--node-bin", nodeBin,
		"--postgres", filepath.Join(suite.root, "hack", "postgres.sh")}, images...)
	up := exec.Command(suite.binary, args...)
	up.Dir = suite.root
	out, err := up.CombinedOutput()
	if err != nil {
		return fmt.Errorf("cluster up: %w\n%s", err, out)
	}
	suite.kubeconfig = strings.TrimSpace(lastLine(string(out)))
	return connect()
}

// imageArchives are make images' and make cluster-images' archives; the
// version is the tag of make images'.
func imageArchives() ([]string, error) {
	ours, _ := filepath.Glob(filepath.Join(suite.root, "bin", "images", "manager_*.oci.tar"))
	if len(ours) != 1 {
		return nil, fmt.Errorf("want one bin/images/manager_*.oci.tar, found %d: run `make images`", len(ours))
	}
	suite.version = strings.TrimSuffix(strings.TrimPrefix(filepath.Base(ours[0]), "manager_"), "_"+goruntime.GOARCH+".oci.tar")
	images, _ := filepath.Glob(filepath.Join(suite.root, "bin", "images", "*.oci.tar"))
	clusterDir := os.Getenv("ROOMKEEPER_CLUSTER_IMAGES")
	if clusterDir == "" {
		return nil, errors.New("ROOMKEEPER_CLUSTER_IMAGES is not set: run `make test` (make cluster-images builds them)")
	}
	added, _ := filepath.Glob(filepath.Join(clusterDir, "*.oci.tar"))
	if len(added) == 0 {
		return nil, fmt.Errorf("no image archives in %s: run `make cluster-images`", clusterDir)
	}
	return append(images, added...), nil
}

// connect makes the suite's API client and its dialer into the cluster.
func connect() error {
	cfg, err := clientcmd.BuildConfigFromFlags("", suite.kubeconfig)
	if err != nil {
		return err
	}
	scheme := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		return err
	}
	if err := gamev1.AddToScheme(scheme); err != nil {
		return err
	}
	if err := gatewayv1.Install(scheme); err != nil {
		return err
	}
	if suite.k8s, err = client.New(cfg, client.Options{Scheme: scheme}); err != nil {
		return err
	}
	pid, err := os.ReadFile(filepath.Join(suite.dir, "state", "pids", "ns-control-plane.pid"))
	if err != nil {
		return err
	}
	var p int
	if _, err := fmt.Sscan(string(pid), &p); err != nil {
		return err
	}
	if suite.dial, err = netns.Dialer(p); err != nil {
		return err
	}
	nodes := &corev1.NodeList{}
	if err := suite.k8s.List(context.Background(), nodes); err != nil {
		return err
	}
	for _, n := range nodes.Items {
		for _, a := range n.Status.Addresses {
			if a.Type == corev1.NodeInternalIP {
				suite.nodeAddresses = append(suite.nodeAddresses, a.Address)
			}
		}
	}
	if len(suite.nodeAddresses) == 0 {
		return errors.New("the cluster's nodes have no InternalIP")
	}
	return nil
}

// tearDown runs cluster down and checks nothing of the cluster is left:
// no process it recorded (the namespaces' holders among them), no cgroup,
// no mount of its directory on the host.
func tearDown() error {
	pids, _ := filepath.Glob(filepath.Join(suite.dir, "state", "pids", "*.pid"))
	var recorded []int
	for _, f := range pids {
		raw, _ := os.ReadFile(f)
		var pid int
		if _, err := fmt.Sscan(string(raw), &pid); err == nil {
			recorded = append(recorded, pid)
		}
	}
	down := exec.Command(suite.binary, "down", "--dir", filepath.Join(suite.dir, "state"), "--cgroup", cgroupName)
	if out, err := down.CombinedOutput(); err != nil {
		return fmt.Errorf("cluster down: %w\n%s", err, out)
	}
	var left []string
	for _, pid := range recorded {
		if raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid)); err == nil && len(raw) > 0 {
			left = append(left, fmt.Sprintf("process %d (%s)", pid, strings.ReplaceAll(string(raw), "\x00", " ")))
		}
	}
	cgroups, _ := filepath.Glob(filepath.Join("/sys/fs/cgroup/*", cgroupName))
	left = append(left, cgroups...)
	mounts, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		return err
	}
	for _, line := range strings.Split(string(mounts), "\n") {
		if strings.Contains(line, suite.dir) {
			left = append(left, "mount "+line)
		}
	}
	if len(left) > 0 {
		return fmt.Errorf("left behind: %s", strings.Join(left, ", "))
	}
	return os.RemoveAll(suite.dir)
}

func lastLine(s string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	return lines[len(lines)-1]
}

// inCluster is an HTTP client whose connections are made inside the
// cluster's network.
func inCluster() *http.Client {
	return &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{
		DialContext: func(_ context.Context, _, addr string) (net.Conn, error) { return suite.dial(addr) }}}
}

// kubectl runs kubectl against the cluster with stdin and returns its
// standard output (its warnings go to standard error, into the error).
func kubectl(stdin string, args ...string) (string, error) {
	cmd := exec.Command("kubectl", append([]string{"--kubeconfig", suite.kubeconfig}, args...)...)
	cmd.Stdin = strings.NewReader(stdin)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return string(out), fmt.Errorf("kubectl %s: %w\n%s%s", strings.Join(args, " "), err, out, stderr.String())
	}
	return string(out), nil
}
