package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"sigs.k8s.io/controller-runtime/pkg/metrics"
)

// TestEveryMetricIsDocumented: each roomkeeper_ series the manager
// registers (controllers and join API) is named in docs/operations.md.
func TestEveryMetricIsDocumented(t *testing.T) {
	doc, err := os.ReadFile(filepath.Join("..", "..", "docs", "operations.md"))
	if err != nil {
		t.Fatal(err)
	}
	families, err := metrics.Registry.Gather()
	if err != nil {
		t.Fatal(err)
	}
	seen := 0
	for _, f := range families {
		name := f.GetName()
		if !strings.HasPrefix(name, "roomkeeper_") {
			continue
		}
		seen++
		if !strings.Contains(string(doc), "`"+name) {
			t.Errorf("%s is not in docs/operations.md", name)
		}
	}
	if seen < 5 {
		t.Fatalf("only %d roomkeeper_ series gathered", seen)
	}
	t.Logf("%d roomkeeper_ series, all documented", seen)
}
