package controllers

import (
	"context"
	"fmt"
	"os"
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
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

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
	ctrl.SetLogger(zap.New(zap.WriteTo(os.Stderr), zap.Level(zapcore.Level(zapLevel()))))

	cp, err := testenv.Start()
	if err != nil {
		startErr = err
		os.Exit(m.Run())
	}
	ctx, cancel := context.WithCancel(context.Background())
	done, err := startManager(ctx, cp.Config)
	if err != nil {
		startErr = err
	}
	code := m.Run()
	cancel()
	<-done
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

func startManager(ctx context.Context, cfg *rest.Config) (<-chan struct{}, error) {
	restConfig = cfg
	mgr, err := ctrl.NewManager(cfg, ctrl.Options{
		Scheme:                 testScheme,
		Metrics:                metricsserver.Options{BindAddress: "0"},
		HealthProbeBindAddress: "0",
		Cache:                  CacheOptions(),
	})
	if err != nil {
		return nil, err
	}
	if err := SetupWithManager(mgr, clock.RealClock{}); err != nil {
		return nil, err
	}
	k8s, err = client.New(cfg, client.Options{Scheme: testScheme})
	if err != nil {
		return nil, err
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		if err := mgr.Start(ctx); err != nil {
			fmt.Fprintln(os.Stderr, "manager:", err)
		}
	}()
	return done, nil
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
