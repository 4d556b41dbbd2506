package roomserver

import (
	"os"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/roomkeeper/roomkeeper/internal/sim"
	"github.com/roomkeeper/roomkeeper/internal/testenv"
)

// TestEveryMetricIsDocumented: each series the room server registers is
// named in docs/operations.md, so the docs cannot fall behind the code.
func TestEveryMetricIsDocumented(t *testing.T) {
	root, err := testenv.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	doc, err := os.ReadFile(root + "/docs/operations.md")
	if err != nil {
		t.Fatal(err)
	}
	m := newMetrics(func() sim.Stats { return sim.Stats{} })
	// Vectors only gather once they have a child.
	for _, v := range []interface {
		WithLabelValues(...string) prometheus.Observer
	}{m.snapshotBytes, m.hello, m.criticalSeconds, m.transferSeconds} {
		v.WithLabelValues("x")
	}
	for _, v := range []*prometheus.CounterVec{m.sentBytes, m.sentMessages, m.disconnects, m.refused} {
		v.WithLabelValues("x")
	}
	m.transfers.WithLabelValues("x", "y")
	families, err := m.registry.Gather()
	if err != nil {
		t.Fatal(err)
	}
	seen := 0
	for _, f := range families {
		name := f.GetName()
		if !strings.HasPrefix(name, "roomkeeper_") {
			continue // go_* and process_*: the standard collectors
		}
		seen++
		if !strings.Contains(string(doc), "`"+name) {
			t.Errorf("%s is not in docs/operations.md", name)
		}
	}
	if seen < 19 {
		t.Fatalf("only %d roomkeeper_ series gathered", seen)
	}
}
