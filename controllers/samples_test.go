package controllers

import (
	"os"
	"path/filepath"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"

	"github.com/roomkeeper/roomkeeper/internal/testenv"
)

// TestSamplesAreAccepted applies config/samples as a user would, so the
// examples in the README and `make dev` never drift from the schema.
func TestSamplesAreAccepted(t *testing.T) {
	ctx, ns := envtestNamespace(t)
	root, err := testenv.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	files, err := filepath.Glob(filepath.Join(root, "config", "samples", "*.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	applied := 0
	for _, file := range files {
		if filepath.Base(file) == "kustomization.yaml" {
			continue
		}
		f, err := os.Open(file)
		if err != nil {
			t.Fatal(err)
		}
		decoder := utilyaml.NewYAMLOrJSONDecoder(f, 4096)
		for {
			obj := &unstructured.Unstructured{}
			if err := decoder.Decode(&obj.Object); err != nil {
				break
			}
			if obj.Object == nil {
				continue
			}
			obj.SetNamespace(ns)
			if err := k8s.Create(ctx, obj); err != nil {
				t.Errorf("%s: %s %s refused: %v", filepath.Base(file), obj.GetKind(), obj.GetName(), err)
			}
			applied++
		}
		_ = f.Close()
	}
	if applied < 2 {
		t.Fatalf("applied %d sample objects, want the GameRoom and its Secret", applied)
	}
}
