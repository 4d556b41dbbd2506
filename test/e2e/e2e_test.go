// Package e2e runs the whole system as `make dev` does (control plane,
// local node running pods as processes, Postgres, the manager with its
// join API, config/samples) and drives it as a platform team and players
// would: through the API server and the join API.
package e2e

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/runtime"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"

	gamev1 "github.com/roomkeeper/roomkeeper/api/v1"
	"github.com/roomkeeper/roomkeeper/internal/testenv"
	"github.com/roomkeeper/roomkeeper/internal/wait"
	pkgclient "github.com/roomkeeper/roomkeeper/pkg/client"
)

// podPrefix keeps this cluster's pods off a developer's `make dev` ones.
const podPrefix = "127.0.20."

var (
	// devDir is the cluster's state directory (make dev's .dev), gatewayAddr
	// where its development gateway serves TLS.
	devDir, gatewayAddr string
	// adminAddr is the manager's admin API (docs/operations.md, Moderation).
	adminAddr string

	k8s      client.Client
	restCfg  *rest.Config
	joinAPI  *pkgclient.JoinAPI
	startErr error
)

func TestMain(m *testing.M) {
	stop, err := startCluster()
	if err != nil {
		startErr = err
	}
	code := m.Run()
	if startErr == nil {
		if forbidden := forbiddenLines(devDir); len(forbidden) > 0 {
			fmt.Fprintf(os.Stderr, "the manager or a room server was refused by RBAC (its role lacks a permission the code uses):\n  %s\n",
				strings.Join(forbidden, "\n  "))
			code = 1
		}
	}
	if stop != nil {
		stop()
	}
	os.Exit(code)
}

// forbiddenLines are the log lines of the manager and of every pod that
// say RBAC refused them: both run under their own ServiceAccounts, with
// exactly the roles the project ships. The room servers' status policy
// (config/policy) refusing a pod the map has let go of (a successor whose
// handover was abandoned, stopping) is no missing permission;
// TestAMapPodWritesOnlyItsOwnMapsStatus checks that policy.
func forbiddenLines(dir string) []string {
	logs, _ := filepath.Glob(filepath.Join(dir, "node", "*", "*", "log"))
	logs = append(logs, filepath.Join(dir, "logs", "manager.log"))
	var found []string
	for _, path := range logs {
		raw, err := os.ReadFile(path)
		if err != nil {
			continue
		}
		for _, line := range strings.Split(string(raw), "\n") {
			if strings.Contains(strings.ToLower(line), "forbidden") && !strings.Contains(line, "ValidatingAdmissionPolicy") {
				found = append(found, filepath.Base(filepath.Dir(path))+": "+line)
			}
		}
	}
	return found
}

// startCluster builds and runs hack/devcluster in a temporary directory
// and waits until it says it is running.
func startCluster() (func(), error) {
	root, err := testenv.RepoRoot()
	if err != nil {
		return nil, err
	}
	for _, bin := range []string{"manager", "roomserver", "localnode"} {
		if _, err := os.Stat(filepath.Join(root, "bin", bin)); err != nil {
			return nil, fmt.Errorf("bin/%s is missing: run `make build` (make test does)", bin)
		}
	}
	dir, err := os.MkdirTemp("", "roomkeeper-e2e-")
	if err != nil {
		return nil, err
	}
	if err := os.Chmod(dir, 0o755); err != nil { // the postgres user must reach dir/pg
		return nil, err
	}
	devcluster := filepath.Join(dir, "devcluster")
	build := exec.Command("go", "build", "-o", devcluster, "./hack/devcluster")
	build.Dir = root
	if out, err := build.CombinedOutput(); err != nil {
		return nil, fmt.Errorf("building hack/devcluster: %w\n%s", err, out)
	}
	joinAddr, err := testenv.FreeAddress()
	if err != nil {
		return nil, err
	}
	if gatewayAddr, err = testenv.FreeAddress(); err != nil {
		return nil, err
	}
	if adminAddr, err = testenv.FreeAddress(); err != nil {
		return nil, err
	}
	devDir = filepath.Join(dir, "dev")
	cmd := exec.Command(devcluster, "--dir", devDir, "--join-api", joinAddr,
		"--metrics", "0", "--probes", "0", "--admin-api", adminAddr, "--pod-prefix", podPrefix, "--gateway", gatewayAddr)
	cmd.Dir = root
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	stop := func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		done := make(chan struct{})
		go func() { _ = cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(60 * time.Second):
			_ = cmd.Process.Kill()
		}
		_ = os.RemoveAll(dir)
	}
	if err := waitRunning(out); err != nil {
		stop()
		return nil, err
	}
	cfg, err := clientcmd.BuildConfigFromFlags("", filepath.Join(dir, "dev", "kubeconfig"))
	if err != nil {
		stop()
		return nil, err
	}
	scheme := runtime.NewScheme()
	utilruntime.Must(clientgoscheme.AddToScheme(scheme))
	utilruntime.Must(gamev1.AddToScheme(scheme))
	restCfg = cfg
	if k8s, err = client.New(cfg, client.Options{Scheme: scheme}); err != nil {
		stop()
		return nil, err
	}
	joinAPI = &pkgclient.JoinAPI{BaseURL: "http://" + joinAddr}
	return stop, nil
}

// waitRunning reads the dev cluster's output until its welcome line.
func waitRunning(out interface{ Read([]byte) (int, error) }) error {
	found := make(chan error, 1)
	go func() {
		lines := bufio.NewScanner(out)
		for lines.Scan() {
			fmt.Fprintln(os.Stderr, "devcluster:", lines.Text())
			if strings.Contains(lines.Text(), "Roomkeeper is running.") {
				found <- nil
				for lines.Scan() { // keep draining
				}
				return
			}
		}
		found <- errors.New("the dev cluster exited before it was running")
	}()
	select {
	case err := <-found:
		return err
	case <-time.After(5 * time.Minute):
		return errors.New("the dev cluster did not start within 5 minutes")
	}
}

// cluster fails the test when the cluster is not running and returns a
// context bounded for one test.
func cluster(t *testing.T) context.Context {
	t.Helper()
	if startErr != nil {
		t.Fatalf("the end-to-end cluster is not running: %v", startErr)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	t.Cleanup(cancel)
	return ctx
}

// eventually waits until cond holds, failing the test with cond's last
// error when ctx ends first.
func eventually(t *testing.T, ctx context.Context, what string, cond func() error) {
	t.Helper()
	if err := wait.Until(ctx, cond); err != nil {
		t.Fatalf("%s: %v", what, err)
	}
}
