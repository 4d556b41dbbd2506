package controllers

import (
	"github.com/prometheus/client_golang/prometheus"
	"sigs.k8s.io/controller-runtime/pkg/metrics"
)

// The operator's Prometheus series, on controller-runtime's registry next
// to its reconcile metrics (reconcile errors are
// controller_runtime_reconcile_errors_total).
var (
	mapFailures = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "roomkeeper_map_failures_total",
		Help: "Map pod failures the operator recorded, by reason; each leads to a restart or a quarantine.",
	}, []string{"reason"})
	quarantines = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "roomkeeper_quarantines_total",
		Help: "Times a crash-looping map was quarantined.",
	})
	keyRotations = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "roomkeeper_key_rotations_total",
		Help: "Token signing key rotations.",
	})
)

func init() {
	metrics.Registry.MustRegister(mapFailures, quarantines, keyRotations)
}
