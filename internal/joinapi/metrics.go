package joinapi

import (
	"github.com/prometheus/client_golang/prometheus"
	"sigs.k8s.io/controller-runtime/pkg/metrics"
)

// codeOK is the code label of a join that got its ticket.
const codeOK = "ok"

// The join API's series, on controller-runtime's registry so the manager's
// metrics endpoint serves them beside the controllers'. Registered once per
// process: every Handler adds to the same series.
var (
	joinRequests = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "roomkeeper_join_requests_total",
		Help: "Join requests, by answer: ok or the error code.",
	}, []string{"code"})
	joinSeconds = prometheus.NewHistogram(prometheus.HistogramOpts{
		Name:    "roomkeeper_join_request_duration_seconds",
		Help:    "Time to answer a join request.",
		Buckets: []float64{.001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5},
	})
)

func init() {
	metrics.Registry.MustRegister(joinRequests, joinSeconds)
}
