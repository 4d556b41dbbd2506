package main

import (
	"testing"

	"sigs.k8s.io/controller-runtime/pkg/metrics"

	"github.com/roomkeeper/roomkeeper/internal/testenv"
)

// TestEveryMetricIsDocumented: each roomkeeper_ series the manager
// registers (controllers and join API) is named in docs/operations.md.
func TestEveryMetricIsDocumented(t *testing.T) {
	seen, missing, err := testenv.UndocumentedMetrics(metrics.Registry)
	if err != nil {
		t.Fatal(err)
	}
	if len(missing) > 0 || seen < 5 {
		t.Fatalf("%d roomkeeper_ series gathered; not in docs/operations.md: %v", seen, missing)
	}
}
