package retention

import (
	"github.com/prometheus/client_golang/prometheus"
	"sigs.k8s.io/controller-runtime/pkg/metrics"

	"github.com/roomkeeper/roomkeeper/internal/store"
)

// The pruner's series, on controller-runtime's registry beside the
// operator's (docs/operations.md, "Data retention").
var (
	prunedRows = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "roomkeeper_retention_pruned_rows_total",
		Help: "Rows the manager deleted from the room databases for being older than their retention, by table.",
	}, []string{"table"})
	droppedPartitions = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "roomkeeper_retention_event_log_hours_dropped_total",
		Help: "Hourly partitions of event_log the manager dropped for being older than the event log's retention.",
	})
	runErrors = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "roomkeeper_retention_errors_total",
		Help: "Pruning runs of a room database that failed or stopped early (a busy lock, an unreachable database), by database (the namespace/name of its Secret; empty when the rooms could not be listed).",
	}, []string{"database"})
	tableBytes = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "roomkeeper_database_table_bytes",
		Help: "Bytes on disk of a room database's table with its indexes (event_log with its partitions), by database and table, as of the last pruning run.",
	}, []string{"database", "table"})
	tableRows = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "roomkeeper_database_table_rows",
		Help: "Rows of a room database's table as Postgres estimates them (as of its last vacuum or analyze), by database and table.",
	}, []string{"database", "table"})
)

func init() {
	metrics.Registry.MustRegister(prunedRows, droppedPartitions, runErrors, tableBytes, tableRows)
	for _, table := range []string{store.TableTransfers, store.TableCriticalEvents, store.TableRecoveryAudit, store.TableAdminActions, store.TableBans,
		store.TableCheckpointHistory, store.TableItemOwnership, store.TableMapState} {
		prunedRows.WithLabelValues(table) // every table's series from the start, at 0
	}
}
