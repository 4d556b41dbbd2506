package roomserver

import (
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/roomkeeper/roomkeeper/internal/sim"
	"github.com/roomkeeper/roomkeeper/internal/testenv"
)

// TestEveryMetricIsDocumented: each series the room server registers is
// named in docs/operations.md, so the docs cannot fall behind the code.
func TestEveryMetricIsDocumented(t *testing.T) {
	m := newMetrics(func() sim.Stats { return sim.Stats{} }, 100)
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
	seen, missing, err := testenv.UndocumentedMetrics(m.registry)
	if err != nil {
		t.Fatal(err)
	}
	if len(missing) > 0 || seen < 19 {
		t.Fatalf("%d roomkeeper_ series gathered; not in docs/operations.md: %v", seen, missing)
	}
}
