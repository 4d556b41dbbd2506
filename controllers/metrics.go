package controllers

import (
	"context"
	"sync/atomic"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/apimachinery/pkg/api/meta"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/metrics"

	gamev1 "github.com/roomkeeper/roomkeeper/api/v1"
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
	idleDeletions = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "roomkeeper_idle_deletions_total",
		Help: "Objects the operator deleted because they had no players for idleTimeout, by kind (mapinstance, gameroom).",
	}, []string{"kind"})
	// countQuarantined is set by SetupWithManager to count from the cache.
	countQuarantined atomic.Pointer[func() float64]
	quarantinedMaps  = prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Name: "roomkeeper_quarantined_maps",
		Help: "MapInstances quarantined right now.",
	}, func() float64 {
		if count := countQuarantined.Load(); count != nil {
			return (*count)()
		}
		return 0
	})
)

// Values of the kind label of roomkeeper_idle_deletions_total.
const (
	idleKindMapInstance = "mapinstance"
	idleKindGameRoom    = "gameroom"
)

func init() {
	metrics.Registry.MustRegister(mapFailures, quarantines, keyRotations, idleDeletions, quarantinedMaps)
	for _, kind := range []string{idleKindMapInstance, idleKindGameRoom} {
		idleDeletions.WithLabelValues(kind) // export both series from the start, at 0
	}
}

// watchQuarantined makes roomkeeper_quarantined_maps count the
// MapInstances in c (the manager's cache) whose Quarantined condition is True.
func watchQuarantined(c client.Reader) {
	count := func() float64 {
		var list gamev1.MapInstanceList
		if c.List(context.Background(), &list) != nil {
			return 0
		}
		n := 0
		for i := range list.Items {
			if meta.IsStatusConditionTrue(list.Items[i].Status.Conditions, gamev1.ConditionQuarantined) {
				n++
			}
		}
		return float64(n)
	}
	countQuarantined.Store(&count)
}
