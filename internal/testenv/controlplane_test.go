package testenv

import (
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
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
	if left := children(t, "kube-apiserver", "etcd"); len(left) > 0 {
		t.Fatalf("after Start failed on a CRD (%v), still running: %v", err, left)
	}
}

// children lists this process's child processes with one of names.
func children(t *testing.T, names ...string) []string {
	t.Helper()
	stats, err := filepath.Glob("/proc/[0-9]*/stat")
	if err != nil {
		t.Fatal(err)
	}
	self := strconv.Itoa(os.Getpid())
	var found []string
	for _, path := range stats {
		raw, err := os.ReadFile(path)
		if err != nil {
			continue // the process ended since the glob
		}
		// pid (comm) state ppid ...: comm may hold spaces, so split after ')'.
		stat := string(raw)
		open, end := strings.IndexByte(stat, '('), strings.LastIndexByte(stat, ')')
		if open < 0 || end < open {
			continue
		}
		fields := strings.Fields(stat[end+1:])
		comm := stat[open+1 : end]
		if len(fields) > 1 && fields[1] == self && slices.Contains(names, comm) {
			found = append(found, comm+" "+filepath.Base(filepath.Dir(path)))
		}
	}
	return found
}
