package controllers

import (
	"context"
	"fmt"
	"os"
	"sync/atomic"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	"go.uber.org/zap/zapcore"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	crconfig "sigs.k8s.io/controller-runtime/pkg/config"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	gamev1 "github.com/roomkeeper/roomkeeper/api/v1"
	"github.com/roomkeeper/roomkeeper/internal/testenv"
)

// The envtest suite: a real kube-apiserver and etcd, the manager running
// both controllers, and a namespace per test.
var (
	testScheme = runtime.NewScheme()
	restConfig *rest.Config
	k8s        client.Client
	// startErr is why the control plane did not start; envtest tests fail with it.
	startErr error
)

func TestMain(m *testing.M) {
	utilruntime.Must(clientgoscheme.AddToScheme(testScheme))
	utilruntime.Must(gamev1.AddToScheme(testScheme))
	utilruntime.Must(gatewayv1.Install(testScheme))
	ctrl.SetLogger(zap.New(zap.WriteTo(os.Stderr), zap.Level(zapcore.Level(zapLevel()))))

	gatewayCRDs, err := testenv.GatewayAPICRDs()
	if err != nil {
		startErr = err
		os.Exit(m.Run())
	}
	cp, err := testenv.Start(gatewayCRDs)
	if err != nil {
		startErr = err
		os.Exit(m.Run())
	}
	restConfig = cp.Config
	if k8s, err = client.New(cp.Config, client.Options{Scheme: testScheme}); err != nil {
		startErr = err
	}
	if err := startManager(); err != nil {
		startErr = err
	}
	code := m.Run()
	stopManager()
	if err := cp.Stop(); err != nil {
		fmt.Fprintln(os.Stderr, "stopping control plane:", err)
	}
	os.Exit(code)
}

// zapLevel keeps the manager quiet unless ROOMKEEPER_TEST_VERBOSE is set.
func zapLevel() int8 {
	if os.Getenv("ROOMKEEPER_TEST_VERBOSE") != "" {
		return -1
	}
	return 2 // errors only
}

// testClock is the controllers' clock: real time plus an offset tests move
// forward, so backoffs and quarantines of minutes pass in milliseconds.
var testClock = &offsetClock{}

type offsetClock struct{ offset atomic.Int64 }

func (c *offsetClock) Now() time.Time                  { return time.Now().Add(time.Duration(c.offset.Load())) }
func (c *offsetClock) Since(t time.Time) time.Duration { return c.Now().Sub(t) }
func (c *offsetClock) Advance(d time.Duration)         { c.offset.Add(int64(d)) }

// The running manager; restartManager replaces it, as an operator restart
// (a new process with nothing in memory) would.
var (
	stopCurrent func()
)

// testHostPorts is the suite's --host-port-range: small, so a test can
// exhaust it; testHostPortsPerNamespace its --host-ports-per-namespace.
var testHostPorts = PortRange{Min: 31000, Max: 31002}

const testHostPortsPerNamespace = 2

// testRoomCountsDelay is the suite's Options.RoomCountsDelay: short, so
// that tests waiting for a room's player counts do not wait 15 s each.
const testRoomCountsDelay = 2 * time.Second

// suiteOptions are the operator's options in the suite.
func suiteOptions() Options {
	return Options{Clock: testClock, MaxRequeue: 200 * time.Millisecond, RoomCountsDelay: testRoomCountsDelay, HostPortRange: testHostPorts,
		HostPortsPerNamespace: testHostPortsPerNamespace, GatewayAPI: true}
}

func startManager() error { return startManagerWith(suiteOptions()) }

func startManagerWith(opts Options) error {
	mgr, err := ctrl.NewManager(restConfig, ctrl.Options{
		Scheme:                 testScheme,
		Metrics:                metricsserver.Options{BindAddress: "0"},
		HealthProbeBindAddress: "0",
		Cache:                  CacheOptions(true),
		NewClient:              newCountingClient,
		Controller:             crconfig.Controller{SkipNameValidation: ptr.To(true)},
	})
	if err != nil {
		return err
	}
	if err := SetupWithManager(mgr, opts); err != nil {
		return err
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		if err := mgr.Start(ctx); err != nil {
			fmt.Fprintln(os.Stderr, "manager:", err)
		}
	}()
	stopCurrent = func() { cancel(); <-done }
	return nil
}

func stopManager() {
	if stopCurrent != nil {
		stopCurrent()
	}
}

// restartManager stops the operator and starts a fresh one.
func restartManager(t *testing.T) {
	t.Helper()
	stopManager()
	if err := startManager(); err != nil {
		t.Fatalf("restarting the manager: %v", err)
	}
}

// restartManagerWith restarts the operator with the suite's options as
// change leaves them, for the rest of the test; the suite's own come back
// after it.
func restartManagerWith(t *testing.T, change func(*Options)) {
	t.Helper()
	opts := suiteOptions()
	change(&opts)
	stopManager()
	if err := startManagerWith(opts); err != nil {
		t.Fatalf("restarting the manager: %v", err)
	}
	t.Cleanup(func() { restartManager(t) })
}

// envtestNamespace fails the test when the control plane is not running and
// returns a fresh namespace for it.
func envtestNamespace(t *testing.T) (context.Context, string) {
	t.Helper()
	if startErr != nil {
		t.Fatalf("the envtest control plane is not running: %v", startErr)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	t.Cleanup(cancel)
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "test-"}}
	if err := k8s.Create(ctx, ns); err != nil {
		t.Fatalf("creating namespace: %v", err)
	}
	return ctx, ns.Name
}

// wait is gomega with the suite's timeouts: poll until the assertion holds.
func wait(t *testing.T) Gomega {
	g := NewWithT(t)
	g.SetDefaultEventuallyTimeout(30 * time.Second)
	g.SetDefaultEventuallyPollingInterval(50 * time.Millisecond)
	g.SetDefaultConsistentlyDuration(time.Second)
	return g
}

func key(ns, name string) client.ObjectKey { return client.ObjectKey{Namespace: ns, Name: name} }
