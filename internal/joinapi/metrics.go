package joinapi

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"sigs.k8s.io/controller-runtime/pkg/metrics"
)

// codeOK is the code label of a request answered without an error.
const codeOK = "ok"

// requestMetrics count one kind of request: answers by code, and the time
// to answer.
type requestMetrics struct {
	requests *prometheus.CounterVec
	seconds  prometheus.Histogram
}

func (m *requestMetrics) observe(code string, took time.Duration) {
	m.requests.WithLabelValues(code).Inc()
	m.seconds.Observe(took.Seconds())
}

// The join API's series, on controller-runtime's registry so the manager's
// metrics endpoint serves them beside the controllers'. Registered once per
// process: every Handler adds to the same series. Players' joins and room
// servers' destination requests are counted apart.
var (
	joinSeries = &requestMetrics{
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "roomkeeper_join_requests_total",
			Help: "Join requests, by answer: ok or the error code.",
		}, []string{"code"}),
		seconds: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "roomkeeper_join_request_duration_seconds",
			Help:    "Time to answer a join request.",
			Buckets: []float64{.001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5},
		}),
	}
	destinationSeries = &requestMetrics{
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "roomkeeper_destination_requests_total",
			Help: "Room servers' portal destination requests, by answer: ok or the error code.",
		}, []string{"code"}),
		seconds: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name: "roomkeeper_destination_request_duration_seconds",
			Help: "Time to answer a portal destination request, waits for a party's map to start included.",
			// Up to destinationReadyTimeout: a new party map takes seconds.
			Buckets: []float64{.001, .005, .025, .1, .25, .5, 1, 2.5, 5, 10, 20, 30},
		}),
	}
)

// charactersRefused counts the characters not made because the room's
// database held its maximum (room_full): a room that reaches its cap, or
// someone making up authKeys to fill it.
var charactersRefused = prometheus.NewCounter(prometheus.CounterOpts{
	Name: "roomkeeper_join_characters_refused_total",
	Help: "Characters the join API did not create because the room's database holds its maximum number (room_full).",
})

// The budgets a party instance is refused by (instanced.Budget).
const (
	budgetMap     = "map"
	budgetGuests  = "guests"
	budgetAddress = "address"
	budgetUser    = "user"
)

// partyInstancesRefused counts the party instances not started, by the
// budget that was spent.
var partyInstancesRefused = prometheus.NewCounterVec(prometheus.CounterOpts{
	Name: "roomkeeper_join_party_instances_refused_total",
	Help: "Party instances of instanced maps the join API did not start (room_full), by the budget spent: map, guests, address or user.",
}, []string{"budget"})

// warmClaims counts parties entering an instanced map with a warm pool:
// claimed (a Ready warm instance) or cold (none was left: one started).
var warmClaims = prometheus.NewCounterVec(prometheus.CounterOpts{
	Name: "roomkeeper_join_warm_claims_total",
	Help: "Parties entering an instanced map with a warm pool, by result: claimed (a Ready warm instance) or cold (the pool had none: an instance was started).",
}, []string{"result"})

// Where a seat was refused (room_full): every shard of a shared map
// full, the shard a join asked for, the party's shard, or a party's
// instance of an instanced map.
const (
	seatsMap           = "map"
	seatsAskedShard    = "asked_shard"
	seatsPartyShard    = "party_shard"
	seatsPartyInstance = "party_instance"
)

// seatsRefused counts joins and portal arrivals refused for want of a
// seat, by where.
var seatsRefused = prometheus.NewCounterVec(prometheus.CounterOpts{
	Name: "roomkeeper_join_seats_refused_total",
	Help: "Joins and portal arrivals refused room_full for want of a seat, by where: map (every shard of a shared map), asked_shard, party_shard or party_instance.",
}, []string{"where"})

func init() {
	metrics.Registry.MustRegister(Collectors()...)
	for _, result := range []string{claimWarm, claimCold} {
		warmClaims.WithLabelValues(result) // both series from the start, at 0
	}
	for _, where := range []string{seatsMap, seatsAskedShard, seatsPartyShard, seatsPartyInstance} {
		seatsRefused.WithLabelValues(where)
	}
}

// Collectors are the join API's series, for tools that check what a
// dashboard or an alert names (charts/roomkeeper).
func Collectors() []prometheus.Collector {
	return []prometheus.Collector{joinSeries.requests, joinSeries.seconds,
		destinationSeries.requests, destinationSeries.seconds, charactersRefused, partyInstancesRefused, warmClaims, seatsRefused}
}
