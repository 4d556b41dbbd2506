package controllers

import (
	"context"
	"sync/atomic"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
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
	lateHeartbeatsHeld = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "roomkeeper_late_heartbeat_holds_total",
		Help: "Reconciles that kept a map's pod though its heartbeat was late, because most maps' were (its failure waits its turn).",
	})
	keyRotations = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "roomkeeper_key_rotations_total",
		Help: "Token signing key rotations.",
	})
	idleDeletions = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "roomkeeper_idle_deletions_total",
		Help: "Objects the operator deleted because they had no players for idleTimeout, by kind (mapinstance, gameroom).",
	}, []string{"kind"})
)

// Values of the kind label of roomkeeper_idle_deletions_total.
const (
	idleKindMapInstance = "mapinstance"
	idleKindGameRoom    = "gameroom"
)

func init() {
	metrics.Registry.MustRegister(Collectors()...)
	for _, kind := range []string{idleKindMapInstance, idleKindGameRoom} {
		idleDeletions.WithLabelValues(kind) // export both series from the start, at 0
	}
}

// Collectors are the operator's own series, for tools that check what a
// dashboard or an alert names (charts/roomkeeper).
func Collectors() []prometheus.Collector {
	return []prometheus.Collector{mapFailures, quarantines, lateHeartbeatsHeld, keyRotations, idleDeletions, &clusterInventory}
}

// inventory reports, at each scrape, what the manager's cache holds:
// GameRooms and MapInstances by phase, quarantined maps, and each room's
// players. Every phase is exported, at 0 when none is in it, so that a
// dashboard's series do not come and go.
type inventory struct {
	reader atomic.Pointer[client.Reader]
}

var (
	clusterInventory = inventory{}

	quarantinedMapsDesc = prometheus.NewDesc("roomkeeper_quarantined_maps",
		"MapInstances quarantined right now.", nil, nil)
	gameRoomsDesc = prometheus.NewDesc("roomkeeper_gamerooms",
		"GameRooms by status phase.", []string{"phase"}, nil)
	mapInstancesDesc = prometheus.NewDesc("roomkeeper_mapinstances",
		"MapInstances by status phase.", []string{"phase"}, nil)
	roomPlayersDesc = prometheus.NewDesc("roomkeeper_players",
		"Players in each GameRoom, as its status reports them (from its maps' heartbeats).", []string{"namespace", "gameroom"}, nil)
	warmPoolDesc = prometheus.NewDesc("roomkeeper_warm_pool_instances",
		"Each warm pool's instances (spec.maps[].warm) as its room's status reports them, by state: warm (the pool's size), ready (unclaimed and Ready) or starting.",
		[]string{"namespace", "gameroom", "map", "state"}, nil)
	mapShardsDesc = prometheus.NewDesc("roomkeeper_map_shards",
		"Each sharded map's shards (spec.maps[].shards) as its room's status reports them, by state: running, ready, or max (the most it may have).",
		[]string{"namespace", "gameroom", "map", "state"}, nil)
	mapSeatsDesc = prometheus.NewDesc("roomkeeper_map_seats",
		"Each sharded map's seats across its shards, by state: taken (players connected) or total (its shards' seats).",
		[]string{"namespace", "gameroom", "map", "state"}, nil)
	unexposedMapsDesc = prometheus.NewDesc("roomkeeper_unexposed_maps",
		"MapInstances players cannot reach yet (condition Exposed False), by namespace and reason: HostPortShareUsed, HostPortsExhausted, GatewayNotFound, ...",
		[]string{"namespace", "reason"}, nil)
)

// The phases exported at 0 when empty; a phase not listed still shows
// when an object is in it.
var (
	gameRoomPhases = []gamev1.GameRoomPhase{gamev1.GameRoomPending, gamev1.GameRoomStarting,
		gamev1.GameRoomRunning, gamev1.GameRoomDegraded, gamev1.GameRoomTerminating}
	mapInstancePhases = []gamev1.MapInstancePhase{gamev1.MapPending, gamev1.MapStarting, gamev1.MapReady,
		gamev1.MapBackoff, gamev1.MapQuarantined, gamev1.MapDraining, gamev1.MapTerminating}
)

func (inv *inventory) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{quarantinedMapsDesc, gameRoomsDesc, mapInstancesDesc, roomPlayersDesc, warmPoolDesc, mapShardsDesc, mapSeatsDesc, unexposedMapsDesc} {
		ch <- d
	}
}

func (inv *inventory) Collect(ch chan<- prometheus.Metric) {
	var rooms gamev1.GameRoomList
	var maps gamev1.MapInstanceList
	if r := inv.reader.Load(); r != nil {
		ctx := context.Background()
		// Read only: the cache's own objects, not a copy of each per scrape.
		if (*r).List(ctx, &rooms, client.UnsafeDisableDeepCopy) != nil || (*r).List(ctx, &maps, client.UnsafeDisableDeepCopy) != nil {
			rooms.Items, maps.Items = nil, nil
		}
	}
	roomsByPhase := map[string]float64{}
	for _, phase := range gameRoomPhases {
		roomsByPhase[string(phase)] = 0
	}
	for i := range rooms.Items {
		room := &rooms.Items[i]
		roomsByPhase[string(room.Status.Phase)]++
		ch <- prometheus.MustNewConstMetric(roomPlayersDesc, prometheus.GaugeValue, float64(room.Status.Players), room.Namespace, room.Name)
		collectWarmPools(ch, room)
		collectShards(ch, room)
	}
	mapsByPhase := map[string]float64{}
	for _, phase := range mapInstancePhases {
		mapsByPhase[string(phase)] = 0
	}
	quarantined := 0.0
	type namespaceReason struct{ namespace, reason string }
	unexposed := map[namespaceReason]float64{}
	for i := range maps.Items {
		mi := &maps.Items[i]
		mapsByPhase[string(mi.Status.Phase)]++
		if meta.IsStatusConditionTrue(mi.Status.Conditions, gamev1.ConditionQuarantined) {
			quarantined++
		}
		if c := meta.FindStatusCondition(mi.Status.Conditions, gamev1.ConditionExposed); c != nil && c.Status == metav1.ConditionFalse {
			unexposed[namespaceReason{mi.Namespace, c.Reason}]++
		}
	}
	for k, n := range unexposed {
		ch <- prometheus.MustNewConstMetric(unexposedMapsDesc, prometheus.GaugeValue, n, k.namespace, k.reason)
	}
	ch <- prometheus.MustNewConstMetric(quarantinedMapsDesc, prometheus.GaugeValue, quarantined)
	for phase, n := range roomsByPhase {
		ch <- prometheus.MustNewConstMetric(gameRoomsDesc, prometheus.GaugeValue, n, phase)
	}
	for phase, n := range mapsByPhase {
		ch <- prometheus.MustNewConstMetric(mapInstancesDesc, prometheus.GaugeValue, n, phase)
	}
}

// collectWarmPools sends the room's warm pools' series.
func collectWarmPools(ch chan<- prometheus.Metric, room *gamev1.GameRoom) {
	for _, p := range room.Status.WarmPools {
		for state, n := range map[string]int32{"warm": p.Warm, "ready": p.Ready, "starting": p.Starting} {
			ch <- prometheus.MustNewConstMetric(warmPoolDesc, prometheus.GaugeValue, float64(n), room.Namespace, room.Name, p.Map, state)
		}
	}
}

// collectShards sends the room's sharded maps' series.
func collectShards(ch chan<- prometheus.Metric, room *gamev1.GameRoom) {
	for _, s := range room.Status.ShardedMaps {
		for state, n := range map[string]int32{"running": s.Shards, "ready": s.Ready, "max": s.Max} {
			ch <- prometheus.MustNewConstMetric(mapShardsDesc, prometheus.GaugeValue, float64(n), room.Namespace, room.Name, s.Map, state)
		}
		for state, n := range map[string]int32{"taken": s.Players, "total": s.Seats} {
			ch <- prometheus.MustNewConstMetric(mapSeatsDesc, prometheus.GaugeValue, float64(n), room.Namespace, room.Name, s.Map, state)
		}
	}
}

// watchInventory makes the inventory series count what c (the manager's
// cache) holds.
func watchInventory(c client.Reader) {
	clusterInventory.reader.Store(&c)
}
