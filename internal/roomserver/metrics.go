package roomserver

import (
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"

	"github.com/roomkeeper/roomkeeper/internal/protocol"
	"github.com/roomkeeper/roomkeeper/internal/sim"
)

// metrics are the room server's Prometheus series, on their own registry
// so tests can run several servers in one process.
type metrics struct {
	registry *prometheus.Registry
	// own are the series this package defines, all registered.
	own           []prometheus.Collector
	tickSeconds   prometheus.Histogram
	snapshotBytes *prometheus.HistogramVec
	sentBytes     *prometheus.CounterVec
	sentMessages  *prometheus.CounterVec
	// sent and the snapshot sizes are the children of the vectors above
	// that every write updates, looked up once instead of by label each
	// time.
	sent                                 [sentKinds]sentSeries
	binarySnapshotSize, jsonSnapshotSize prometheus.Observer
	disconnects                          *prometheus.CounterVec
	refused                              *prometheus.CounterVec
	// attacksRefused counts refused attacks by reason (cheating or lag).
	attacksRefused *prometheus.CounterVec
	// events counts the map's events, each once (what clients get of them
	// is in sentMessages{kind="event"}).
	events prometheus.Counter
	// eventLogWritten and eventLogDropped count the events written to the
	// database's event log, and those dropped (eventlog.go).
	eventLogWritten, eventLogDropped prometheus.Counter
	hello                            *prometheus.HistogramVec
	// persistence
	checkpointSeconds  prometheus.Histogram
	checkpointFailures prometheus.Counter
	// The world's checkpoints (world.go).
	worldCheckpointSeconds  prometheus.Histogram
	worldCheckpointFailures prometheus.Counter
	worldCheckpointBytes    prometheus.Gauge
	criticalSeconds         *prometheus.HistogramVec
	criticalGroup           prometheus.Histogram
	recoveries              *prometheus.CounterVec
	recoveryPasses          prometheus.Counter
	guestsWithoutDatabase   prometheus.Counter
	// leaseRenewalFailures counts renewals the database did not answer.
	leaseRenewalFailures prometheus.Counter
	// backgroundFailures counts failed background work by op
	// (background.go, noteFailure).
	backgroundFailures *prometheus.CounterVec
	// transfers
	transfers         *prometheus.CounterVec
	transferSeconds   *prometheus.HistogramVec
	transfersInFlight prometheus.Gauge
}

// sentKind is what a message sent to a client is, for the kind label.
type sentKind int

const (
	sentSnapshot sentKind = iota
	sentEvent
	sentControl
	sentKinds
)

var sentKindLabels = [sentKinds]string{sentSnapshot: "snapshot", sentEvent: "event", sentControl: "control"}

// sentSeries counts the messages of one kind and their bytes.
type sentSeries struct{ bytes, messages prometheus.Counter }

// The sides of a transfer, for the transfer metrics' side label.
const (
	sideSource      = "source"
	sideDestination = "destination"
)

func newMetrics(stats func() sim.Stats, seats int) *metrics {
	m := &metrics{
		registry: prometheus.NewRegistry(),
		tickSeconds: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "roomkeeper_roomserver_tick_duration_seconds",
			Help:    "Work done in one simulation step.",
			Buckets: []float64{.00025, .0005, .001, .002, .004, .008, .016, .033, .066},
		}),
		snapshotBytes: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "roomkeeper_roomserver_snapshot_bytes",
			Help:    "Size of one encoded snapshot.",
			Buckets: prometheus.ExponentialBuckets(32, 2, 10),
		}, []string{"codec"}),
		sentBytes: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "roomkeeper_roomserver_sent_bytes_total", Help: "Bytes sent to clients.",
		}, []string{"kind"}),
		sentMessages: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "roomkeeper_roomserver_sent_messages_total", Help: "Messages sent to clients.",
		}, []string{"kind"}),
		disconnects: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "roomkeeper_roomserver_disconnects_total", Help: "Connections closed, by reason.",
		}, []string{"reason"}),
		hello: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "roomkeeper_roomserver_hello_duration_seconds",
			Help:    "Server time from a hello to its welcome, by mode (join or resume).",
			Buckets: []float64{.0001, .00025, .0005, .001, .002, .004, .008, .016, .05},
		}, []string{"mode"}),
		checkpointSeconds: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name: "roomkeeper_roomserver_checkpoint_duration_seconds", Help: "Time to write one checkpoint batch.",
			Buckets: prometheus.ExponentialBuckets(.001, 2, 12),
		}),
		checkpointFailures: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "roomkeeper_roomserver_checkpoint_failures_total", Help: "Checkpoint batches that failed and were queued for retry.",
		}),
		worldCheckpointSeconds: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name: "roomkeeper_roomserver_world_checkpoint_duration_seconds", Help: "Time to write one world checkpoint, off the tick.",
			Buckets: prometheus.ExponentialBuckets(.001, 2, 12),
		}),
		worldCheckpointFailures: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "roomkeeper_roomserver_world_checkpoint_failures_total", Help: "World checkpoints that failed (the next interval writes the world anew).",
		}),
		worldCheckpointBytes: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "roomkeeper_roomserver_world_checkpoint_bytes", Help: "Size of the last world checkpoint written.",
		}),
		criticalGroup: prometheus.NewHistogram(prometheus.HistogramOpts{Name: "roomkeeper_roomserver_critical_group_actions",
			Help:    "Critical actions committed together in one transaction (group commit).",
			Buckets: []float64{1, 2, 4, 8, 16, 32, 64}}),
		criticalSeconds: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "roomkeeper_roomserver_critical_ack_seconds", Help: "Critical action from command to durable ack, by result code.",
			Buckets: prometheus.ExponentialBuckets(.0005, 2, 12),
		}, []string{"code"}),
		recoveries: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "roomkeeper_roomserver_item_recoveries_total",
			Help: "Critical items this map recovered to their anchors, by reason: missing, destroyed, unreachable, holder_offline, quota_short.",
		}, []string{"reason"}),
		recoveryPasses: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "roomkeeper_roomserver_recovery_passes_total",
			Help: "Critical-item recovery passes this map completed (one per tick boundary while the database answers).",
		}),
		guestsWithoutDatabase: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "roomkeeper_roomserver_guest_joins_without_database_total",
			Help: "Guests admitted while the database was down, their ticket spent in this pod's memory only.",
		}),
		leaseRenewalFailures: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "roomkeeper_roomserver_lease_renewal_failures_total",
			Help: "Renewals of this map's authority leases that failed for another reason than a lost lease (the database away).",
		}),
		backgroundFailures: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "roomkeeper_roomserver_background_failures_total",
			Help: "Background work that failed and that no client waits for (lease releases, sweeps, prunes, the world steps after a decision), by op.",
		}, []string{"op"}),
		transfers: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "roomkeeper_transfers_total",
			Help: "Portal transfers by side and result: on the source ok or the refusal's code, and expired; on the destination arrived or returned, or the refusal's code.",
		}, []string{"side", "result"}),
		transferSeconds: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "roomkeeper_transfer_duration_seconds",
			Help:    "Server time of a transfer: on the source from portal.enter to the transfer message, on the destination from hello to welcome.",
			Buckets: prometheus.ExponentialBuckets(.0005, 2, 14),
		}, []string{"side"}),
		transfersInFlight: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "roomkeeper_transfers_in_flight", Help: "Transfers out of this map between portal.enter and the transfer message.",
		}),
		refused: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "roomkeeper_roomserver_refused_total", Help: "Hellos and commands refused, by error code.",
		}, []string{"code"}),
		attacksRefused: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "roomkeeper_roomserver_attacks_refused_total",
			Help: "combat.attack commands refused, by reason: cooldown, out_of_range, no_line_of_sight, not_a_target, dead, other.",
		}, []string{"reason"}),
		events: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "roomkeeper_roomserver_events_total",
			Help: "Events of the map (joins, leaves, deaths, loot taken, doors, rooms cleared, boss phases), each counted once.",
		}),
		eventLogWritten: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "roomkeeper_roomserver_event_log_written_total",
			Help: "Events written to the database's event log (those clients get, hits, drops and transfers out).",
		}),
		eventLogDropped: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "roomkeeper_roomserver_event_log_dropped_total",
			Help: "Events the event log dropped because its buffer was full: the database was away or too slow for longer than the buffer lasts.",
		}),
	}
	for kind, label := range sentKindLabels {
		m.sent[kind] = sentSeries{bytes: m.sentBytes.WithLabelValues(label), messages: m.sentMessages.WithLabelValues(label)}
	}
	m.binarySnapshotSize = m.snapshotBytes.WithLabelValues(protocol.CodecBinary)
	m.jsonSnapshotSize = m.snapshotBytes.WithLabelValues(protocol.CodecJSON)
	m.own = []prometheus.Collector{
		m.transfers, m.transferSeconds, m.transfersInFlight, m.tickSeconds, m.hello, m.checkpointSeconds, m.checkpointFailures, m.worldCheckpointSeconds, m.worldCheckpointFailures, m.worldCheckpointBytes, m.criticalSeconds, m.criticalGroup, m.recoveries, m.recoveryPasses, m.guestsWithoutDatabase, m.leaseRenewalFailures, m.backgroundFailures, m.snapshotBytes, m.sentBytes, m.sentMessages, m.disconnects, m.refused, m.attacksRefused, m.events, m.eventLogWritten, m.eventLogDropped,
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "roomkeeper_roomserver_players", Help: "Players in the world."},
			func() float64 { return float64(stats().Players) }),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "roomkeeper_roomserver_seats",
			Help: "Players the map admits at most (the room's maxPlayersPerMap)."},
			func() float64 { return float64(seats) }),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "roomkeeper_roomserver_entities", Help: "Entities in the world."},
			func() float64 { return float64(stats().Entities) }),
		prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "roomkeeper_roomserver_dropped_inputs_total", Help: "Inputs dropped by full queues."},
			func() float64 { return float64(stats().DroppedInputs) }),
		prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "roomkeeper_roomserver_rejected_inputs_total", Help: "Inputs refused as invalid."},
			func() float64 { return float64(stats().RejectedInputs) }),
		prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "roomkeeper_roomserver_skipped_inputs_total", Help: "Inputs skipped because they stood in a player's backlog for a whole input window."},
			func() float64 { return float64(stats().SkippedInputs) }),
		prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "roomkeeper_roomserver_skipped_steps_total", Help: "Steps dropped after a stall."},
			func() float64 { return float64(stats().SkippedSteps) }),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "roomkeeper_roomserver_tick", Help: "Current simulation tick."},
			func() float64 { return float64(stats().Tick) }),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "roomkeeper_roomserver_hibernating",
			Help: "1 while the map has no player and its world takes no steps (it catches up when one comes), else 0."},
			func() float64 { return b2f(stats().Hibernating) }),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "roomkeeper_roomserver_world_jobs_queued",
			Help: "Jobs waiting for the tick goroutine between two steps (joins, resumes, reservations, transfers, world actions)."},
			func() float64 { return float64(stats().QueuedJobs) }),
	}
	m.registry.MustRegister(append([]prometheus.Collector{collectors.NewGoCollector(),
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{})}, m.own...)...)
	return m
}

// Collectors are a room server's own series (the Go runtime's and the
// process's aside), for tools that check what a dashboard or an alert
// names (charts/roomkeeper).
func Collectors() []prometheus.Collector {
	return newMetrics(func() sim.Stats { return sim.Stats{} }, 0).own
}

// b2f is 1 for true, 0 for false.
func b2f(b bool) float64 {
	if b {
		return 1
	}
	return 0
}
