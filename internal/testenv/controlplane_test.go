package testenv

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/roomkeeper/roomkeeper/internal/wait"
)

// A CRD the API server cannot take fails Start after kube-apiserver and
// etcd are up; Start must stop them, or each such run leaves both behind.
func TestStartStopsTheControlPlaneWhenACRDIsRefused(t *testing.T) {
	if _, err := AssetsDir(); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	// The API server refuses a schema of an unknown type.
	bad := `apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: things.example.com}
spec:
  group: example.com
  scope: Namespaced
  names: {plural: things, kind: Thing}
  versions:
  - name: v1
    served: true
    storage: true
    schema: {openAPIV3Schema: {type: object, properties: {spec: {type: nonsense}}}}
`
	if err := os.WriteFile(filepath.Join(dir, "bad.yaml"), []byte(bad), 0o644); err != nil {
		t.Fatal(err)
	}
	cp, err := Start(dir)
	if err == nil {
		_ = cp.Stop()
		t.Fatal("Start took a CRD with a schema of type nonsense")
	}
	if !strings.Contains(err.Error(), "CRD") {
		t.Fatalf("Start failed before the CRDs: %v", err)
	}
	for _, p := range Children() {
		if p.Name == "kube-apiserver" || p.Name == "etcd" {
			t.Errorf("after Start failed on a CRD (%v), %s (pid %d) still runs", err, p.Name, p.PID)
		}
	}
}

// Children finds a process this one started, by name and pid, with the CPU
// it used: the test above would pass on a Children that finds nothing.
func TestChildrenListsAProcessThisOneStarted(t *testing.T) {
	cmd := exec.Command("sh", "-c", "i=0; while [ $i -lt 200000 ]; do i=$((i+1)); done; exec sleep 60")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	wait.Eventually(t, 30*time.Second, "the started process in Children()", func() error {
		for _, p := range Children() {
			if p.PID == cmd.Process.Pid && p.Name == "sleep" && p.CPU > 0 {
				return nil
			}
		}
		return fmt.Errorf("Children() = %+v: no sleep with pid %d and CPU used", Children(), cmd.Process.Pid)
	})
}
