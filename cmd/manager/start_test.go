package main

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"

	gamev1 "github.com/roomkeeper/roomkeeper/api/v1"
	"github.com/roomkeeper/roomkeeper/internal/testenv"
	"github.com/roomkeeper/roomkeeper/internal/wait"
)

// TestTheManagerRunsWithoutTheGatewayAPI: on a cluster that does not
// serve the Gateway API the manager starts, runs rooms, and tells a room
// that asks for a Gateway what is missing instead of failing.
func TestTheManagerRunsWithoutTheGatewayAPI(t *testing.T) {
	cp, err := testenv.Start() // Roomkeeper's CRDs only
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cp.Stop() })
	dir := t.TempDir()
	kubeconfig := filepath.Join(dir, "kubeconfig")
	if err := testenv.WriteKubeconfig(kubeconfig, "envtest", cp.Config); err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(dir, "manager")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	probes := testenv.MustFreeAddress(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	var logs bytes.Buffer
	manager := exec.CommandContext(ctx, bin, "--kubeconfig="+kubeconfig, "--metrics-bind-address=0",
		"--health-probe-bind-address="+probes, "--join-api-bind-address=0")
	manager.Stdout, manager.Stderr = &logs, &logs
	if err := manager.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- manager.Wait() }()
	t.Cleanup(func() {
		cancel()
		if err := <-exited; err != nil && ctx.Err() == nil {
			t.Errorf("the manager failed: %v", err)
		}
	})

	scheme := runtime.NewScheme()
	utilruntime.Must(clientgoscheme.AddToScheme(scheme))
	utilruntime.Must(gamev1.AddToScheme(scheme))
	c, err := client.New(cp.Config, client.Options{Scheme: scheme})
	if err != nil {
		t.Fatal(err)
	}
	room := &gamev1.GameRoom{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "public"},
		Spec: gamev1.GameRoomSpec{Image: "roomkeeper/roomserver:dev", DefaultMap: "plaza",
			Maps: []gamev1.GameMap{{Name: "plaza", Config: gamev1.MapConfig{Width: 64, Height: 64}}},
			RoomSettings: gamev1.RoomSettings{Exposure: gamev1.Exposure{Type: gamev1.ExposureGateway,
				Gateway: &gamev1.GatewayExposure{Name: "public", Hostname: "games.example.com"}}}}}
	if err := c.Create(ctx, room); err != nil {
		t.Fatal(err)
	}
	err = wait.Until(ctx, func() error {
		select {
		case err := <-exited:
			t.Fatalf("the manager exited (%v):\n%s", err, logs.String())
		default:
		}
		mi := &gamev1.MapInstance{}
		if err := c.Get(ctx, client.ObjectKey{Namespace: "default", Name: "public-plaza"}, mi); err != nil {
			return err
		}
		cond := meta.FindStatusCondition(mi.Status.Conditions, gamev1.ConditionExposed)
		switch {
		case cond == nil:
			return fmt.Errorf("conditions %s", fmtConditions(mi.Status.Conditions))
		case cond.Reason != gamev1.ReasonGatewayAPIMissing || !ready(probes):
			return fmt.Errorf("%s: %s; readyz %v", cond.Reason, cond.Message, ready(probes))
		}
		return nil
	})
	if err != nil {
		t.Fatalf("the map never said the Gateway API is missing (last: %v)\n%s", err, logs.String())
	}
}

// ready tells whether the manager's /readyz answers 200.
func ready(addr string) bool {
	resp, err := http.Get("http://" + addr + "/readyz")
	if err != nil {
		return false
	}
	resp.Body.Close()
	return resp.StatusCode == http.StatusOK
}

func fmtConditions(cs []metav1.Condition) string {
	var b bytes.Buffer
	for _, c := range cs {
		b.WriteString(c.Type + "=" + string(c.Status) + "/" + c.Reason + " ")
	}
	return b.String()
}
