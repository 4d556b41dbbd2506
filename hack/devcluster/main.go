// Command devcluster is `make dev`: it runs the whole system on this machine
// with no Docker. It starts etcd and kube-apiserver (built from source by
// hack/controlplane.sh), kube-controller-manager (owner-reference garbage
// collection) and kube-scheduler, installs the CRDs, starts bin/manager,
// applies config/samples and writes .dev/kubeconfig. Ctrl-C, SIGTERM or
// `make dev-down` stops every process it started, and nothing else.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/roomkeeper/roomkeeper/internal/testenv"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "make dev:", err)
		os.Exit(1)
	}
}

// paths are where the dev cluster keeps its state, all under one
// directory (.dev/ by default).
type paths struct {
	root, dir, logs, kubeconfig, pidFile string
}

func newPaths(root, dir string) paths {
	return paths{root: root, dir: dir, logs: filepath.Join(dir, "logs"),
		kubeconfig: filepath.Join(dir, "kubeconfig"), pidFile: filepath.Join(dir, "dev.pid")}
}

// addresses are where the manager and the local node listen; the
// end-to-end tests run a second cluster beside a developer's `make dev`.
type addresses struct {
	joinAPI, metrics, probes, admin, podPrefix, gateway string
}

// defaultAddresses stay clear of the README's standalone room server
// (127.0.0.1:7350 and :8080), which may run beside make dev.
var defaultAddresses = addresses{joinAPI: "127.0.0.1:8090", metrics: "127.0.0.1:8091",
	probes: "127.0.0.1:8092", admin: "127.0.0.1:8093", podPrefix: "127.0.10.", gateway: "127.0.0.1:8443"}

func run() error {
	root, err := testenv.RepoRoot()
	if err != nil {
		return err
	}
	var dir string
	var addr addresses
	flag.StringVar(&dir, "dir", filepath.Join(root, ".dev"), "directory for the cluster's state, logs and kubeconfig")
	flag.StringVar(&addr.joinAPI, "join-api", defaultAddresses.joinAPI, "join API address")
	flag.StringVar(&addr.metrics, "metrics", defaultAddresses.metrics, "manager metrics address (0: off)")
	flag.StringVar(&addr.probes, "probes", defaultAddresses.probes, "manager health address (0: off)")
	flag.StringVar(&addr.admin, "admin-api", defaultAddresses.admin, "the manager's admin API address (0: off)")
	flag.StringVar(&addr.podPrefix, "pod-prefix", defaultAddresses.podPrefix, "first three octets of pod addresses; the node is PREFIX1")
	flag.StringVar(&addr.gateway, "gateway", defaultAddresses.gateway, "the development gateway's TLS address (wss://localhost:PORT)")
	var pods podPlacement
	flag.IntVar(&pods.nice, "pod-nice", 10, "the nice value (0-19) the local node runs pods at (its --pod-nice)")
	flag.StringVar(&pods.cgroup, "pod-cgroup", "", "the CPU cgroup the local node runs all pods in (its --pod-cgroup; empty: its own)")
	flag.Parse()
	p := newPaths(root, dir)
	if err := claim(p); err != nil {
		return err
	}
	defer os.Remove(p.pidFile)
	if err := checkPorts(portUses(addr)); err != nil {
		return err
	}

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()

	assets, err := testenv.AssetsDir()
	if err != nil {
		return err
	}
	gatewayCRDs, err := testenv.GatewayAPICRDs()
	if err != nil {
		return err
	}
	env := &envtest.Environment{
		BinaryAssetsDirectory: assets,
		CRDDirectoryPaths:     []string{filepath.Join(root, "config", "crd", "bases"), gatewayCRDs},
		ErrorIfCRDPathMissing: true,
	}
	step("Starting etcd and kube-apiserver")
	if _, err := env.Start(); err != nil {
		return fmt.Errorf("starting the control plane: %w", err)
	}
	defer func() { _ = env.Stop() }()

	admin, err := env.AddUser(envtest.User{Name: "dev-admin", Groups: []string{"system:masters"}}, nil)
	if err != nil {
		return err
	}
	if err := testenv.WriteKubeconfig(p.kubeconfig, "roomkeeper-dev", admin.Config()); err != nil {
		return err
	}

	managerKubeconfig := filepath.Join(p.dir, "manager.kubeconfig")
	if err := managerIdentity(ctx, root, admin.Config(), managerKubeconfig); err != nil {
		return err
	}

	if err := applyPolicy(ctx, admin.Config()); err != nil {
		return err
	}

	procs := &supervisor{logs: p.logs, env: append(os.Environ(), "KUBECONFIG="+p.kubeconfig)}
	defer procs.stopAll()
	if err := startComponents(procs, p, addr, pods, assets, env.ControlPlane.APIServer.CertDir, managerKubeconfig); err != nil {
		return err
	}

	step("Starting Postgres (hack/postgres.sh)")
	dsn, stopPostgres, err := startPostgres(p)
	if err != nil {
		return err
	}
	defer stopPostgres()

	step("Applying config/content (the content packs) and config/samples")
	if err := applySamples(ctx, admin.Config(), filepath.Join(root, "config", "content")); err != nil {
		return err
	}
	if err := applySamples(ctx, admin.Config(), filepath.Join(root, "config", "samples")); err != nil {
		return err
	}
	if err := pointSamplesAt(ctx, admin.Config(), dsn); err != nil {
		return err
	}
	if err := createGateway(ctx, admin.Config(), addr); err != nil {
		return err
	}
	step("Waiting for the sample room to be Ready")
	if err := waitRoomReady(ctx, admin.Config(), 3*time.Minute); err != nil {
		return fmt.Errorf("%w (see %s)", err, p.logs)
	}
	printWelcome(p, addr)

	select {
	case <-ctx.Done():
		step("Stopping")
		return nil
	case err := <-procs.exited:
		return err
	}
}

// claim refuses to start a second dev cluster and records this one's pid.
func claim(p paths) error {
	if err := os.MkdirAll(p.logs, 0o755); err != nil {
		return err
	}
	if raw, err := os.ReadFile(p.pidFile); err == nil {
		if pid, _ := strconv.Atoi(strings.TrimSpace(string(raw))); pid > 0 && syscall.Kill(pid, 0) == nil {
			return fmt.Errorf("a dev cluster is already running (pid %d): use it, or stop it with `make dev-down`", pid)
		}
	}
	return os.WriteFile(p.pidFile, []byte(strconv.Itoa(os.Getpid())+"\n"), 0o644)
}

// podPlacement is where the local node runs pods: their nice value and
// CPU cgroup.
type podPlacement struct {
	nice   int
	cgroup string
}

func startComponents(procs *supervisor, p paths, addr addresses, pods podPlacement, assets, certDir, managerKubeconfig string) error {
	step("Starting kube-controller-manager and kube-scheduler")
	common := []string{"--kubeconfig=" + p.kubeconfig, "--leader-elect=false", "--secure-port=0"}
	if err := procs.start("kube-controller-manager", filepath.Join(assets, "kube-controller-manager"), append(common,
		"--controllers=*,-bootstrapsigner,-tokencleaner",
		"--service-account-private-key-file="+filepath.Join(certDir, "sa-signer.key"),
		"--use-service-account-credentials=false")...); err != nil {
		return err
	}
	if err := procs.start("kube-scheduler", filepath.Join(assets, "kube-scheduler"), common...); err != nil {
		return err
	}
	step("Starting the local node (bin/localnode: pods run as processes)")
	if err := procs.start("localnode", filepath.Join(p.root, "bin", "localnode"), "--kubeconfig="+p.kubeconfig,
		"--node-name=roomkeeper-local", "--workdir="+filepath.Join(p.dir, "node"), "--address-prefix="+addr.podPrefix,
		"--node-ip="+addr.podPrefix+"1", "--deleted-pod-logs="+filepath.Join(p.dir, "logs", "pods"), fmt.Sprintf("--pod-nice=%d", pods.nice),
		"--pod-cgroup="+pods.cgroup, "--image-map=roomkeeper/roomserver="+filepath.Join(p.root, "bin", "roomserver")); err != nil {
		return err
	}
	if err := startGateway(procs, p, addr); err != nil {
		return err
	}
	step("Starting the manager (bin/manager, as ServiceAccount " + managerNamespace + "/" + managerServiceAccount + ")")
	// Pods are local processes: they reach the join API where the manager
	// listens. The page the manager serves there may open the maps'
	// WebSockets.
	// The manager is restarted when it exits, as its Deployment would be:
	// `roomload soak --chaos` kills it on purpose.
	procs.restartable = map[string]bool{"manager": true}
	return procs.startWithEnv("manager", filepath.Join(p.root, "bin", "manager"), []string{"KUBECONFIG=" + managerKubeconfig},
		"--metrics-bind-address="+addr.metrics, "--health-probe-bind-address="+addr.probes, "--admin-api-bind-address="+addr.admin,
		"--join-api-bind-address="+addr.joinAPI, "--join-api-url=http://"+addr.joinAPI,
		"--join-api-allowed-origins=http://"+addr.joinAPI)
}

// startPostgres runs the dev database under .dev/pg and returns its DSN.
func startPostgres(p paths) (string, func(), error) {
	script := filepath.Join(p.root, "hack", "postgres.sh")
	dir := filepath.Join(p.dir, "pg")
	cmd := exec.Command(script, "start", dir)
	logFile, err := os.Create(filepath.Join(p.logs, "postgres-start.log"))
	if err != nil {
		return "", nil, err
	}
	defer logFile.Close()
	cmd.Stderr = logFile
	out, err := cmd.Output()
	if err != nil {
		return "", nil, fmt.Errorf("starting Postgres (see %s): %w", logFile.Name(), err)
	}
	stop := func() { _ = exec.Command(script, "stop", dir).Run() }
	return strings.TrimSpace(string(out)), stop, nil
}

// welcomeLine is printed once everything runs; tests wait for it.
const welcomeLine = "Roomkeeper is running."

func printWelcome(p paths, addr addresses) {
	metrics := "the manager's metrics are off (--metrics=0)"
	if addr.metrics != "0" {
		metrics = "curl -s http://" + addr.metrics + "/metrics | grep roomkeeper_    # the manager's metrics"
	}
	fmt.Printf(`
%s In another shell:

  open http://%s/play/    # play in a browser (the demo room; two tabs see each other)
  export KUBECONFIG=%s
  kubectl get gr,mi
  kubectl describe gr demo
  %s
  bin/roomctl join --join-api http://%s --room demo --auth-key my-secret
  bin/roomctl bots --join-api http://%s --room demo --count 50 --duration 30s
  bin/roomctl bots --join-api http://%s --room demo --count 10 --duration 60s --portal-rate 4 --party raid-1 --auth-key-prefix raider
  kubectl get mi    # the party's crypt appears while the bots go through the portal

Logs are in %s. Stop with Ctrl-C or `+"`make dev-down`"+`.
`, welcomeLine, addr.joinAPI, p.kubeconfig, metrics, addr.joinAPI, addr.joinAPI, addr.joinAPI, p.logs)
}

func step(msg string) {
	fmt.Printf("%s  %s\n", time.Now().Format("15:04:05"), msg)
}

// supervisor runs the dev cluster's child processes, each logging to its own
// file, and stops them all on the way out.
type supervisor struct {
	logs   string
	env    []string
	procs  []*exec.Cmd
	exited chan error
	// restartable names the processes started again when they exit (at
	// most maxRestarts times each), instead of ending the dev cluster.
	restartable map[string]bool
	mu          sync.Mutex
	stopping    bool
}

// maxRestarts bounds the restarts of a restartable process.
const maxRestarts = 50

func (s *supervisor) start(name, binary string, args ...string) error {
	return s.startWithEnv(name, binary, nil, args...)
}

// startWithEnv starts a process with env added to (and overriding) the
// supervisor's environment.
func (s *supervisor) startWithEnv(name, binary string, env []string, args ...string) error {
	if s.exited == nil {
		s.exited = make(chan error, 8)
	}
	return s.run(name, binary, env, args, 0)
}

// run starts one incarnation of a process; restarts counts the earlier.
func (s *supervisor) run(name, binary string, env, args []string, restarts int) error {
	mode := os.O_TRUNC // a new dev cluster starts its logs afresh; a restart adds to them
	if restarts > 0 {
		mode = os.O_APPEND
	}
	logFile, err := os.OpenFile(filepath.Join(s.logs, name+".log"), os.O_CREATE|os.O_WRONLY|mode, 0o644)
	if err != nil {
		return err
	}
	cmd := exec.Command(binary, args...)
	cmd.Stdout, cmd.Stderr, cmd.Env = logFile, logFile, append(append([]string(nil), s.env...), env...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.stopping {
		_ = logFile.Close()
		return nil
	}
	if err := cmd.Start(); err != nil {
		_ = logFile.Close()
		return fmt.Errorf("starting %s: %w", name, err)
	}
	s.procs = append(s.procs, cmd)
	go func() {
		err := cmd.Wait()
		_ = logFile.Close()
		s.mu.Lock()
		again := s.restartable[name] && !s.stopping && restarts < maxRestarts
		s.mu.Unlock()
		if again {
			fmt.Fprintf(os.Stderr, "devcluster: %s exited (%v): starting it again\n", name, err)
			if err := s.run(name, binary, env, args, restarts+1); err == nil {
				return
			}
		}
		s.exited <- fmt.Errorf("%s exited (%w): see %s", name, err, logFile.Name())
	}()
	return nil
}

// stopAll sends SIGTERM to each process group, newest first, and SIGKILL to
// whatever is left after a grace period.
func (s *supervisor) stopAll() {
	s.mu.Lock()
	s.stopping = true
	procs := slices.Clone(s.procs)
	s.mu.Unlock()
	for i := len(procs) - 1; i >= 0; i-- {
		_ = syscall.Kill(-procs[i].Process.Pid, syscall.SIGTERM)
	}
	deadline := time.Now().Add(10 * time.Second)
	for _, cmd := range procs {
		for syscall.Kill(cmd.Process.Pid, 0) == nil && time.Now().Before(deadline) {
			time.Sleep(100 * time.Millisecond)
		}
		if !errors.Is(syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL), syscall.ESRCH) {
			_ = syscall.Kill(cmd.Process.Pid, syscall.SIGKILL)
		}
	}
}
