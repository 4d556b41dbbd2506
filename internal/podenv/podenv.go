// Package podenv is the room-server pod's contract: the command-line flags,
// environment variables, ports and HTTP paths through which the operator
// (controllers/mapinstance_pod_builder.go) starts a map and cmd/roomserver reads it.
// Both sides use these names, so neither can rename one alone; the tests in
// cmd/roomserver build a pod with the operator's builder and start the room
// server's flag parsing on it.
//
// The package imports nothing of the project: the room server links it
// without pulling in the operator, and the operator without pulling in the
// room server.
package podenv

import "strings"

// DatabaseURL is the DSN a database Secret's value holds. A Secret made
// from a file (kubectl create secret --from-file) keeps the file's final
// newline, which no DSN has: every reader of the Secret trims it.
func DatabaseURL(secretValue string) string { return strings.TrimSpace(secretValue) }

// Flags the operator passes to the room server, as --name=value.
const (
	// FlagRoom is the GameRoom's name.
	FlagRoom = "room"
	// FlagMap is the map's name in the room's spec.
	FlagMap = "map"
	// FlagInstance is the MapInstance's name, which tickets name.
	FlagInstance = "instance"
	// FlagTickRate is the simulation's steps per second.
	FlagTickRate = "tick-rate"
	// FlagSnapshotRate is the snapshots per second sent to each client.
	FlagSnapshotRate = "snapshot-rate"
	// FlagMaxPlayers is how many players the map admits.
	FlagMaxPlayers = "max-players"
	// FlagCheckpointInterval is how often dirty state is saved, a Go duration.
	FlagCheckpointInterval = "checkpoint-interval"
	// FlagTokenTTL is the lifetime of the transfer tokens the map mints, a Go duration.
	FlagTokenTTL = "token-ttl"
	// FlagShutdownGrace is how long the map has after SIGTERM to hand its
	// players over or say goodbye, a Go duration within the pod's
	// termination grace period.
	FlagShutdownGrace = "shutdown-grace"
	// FlagKeyDir is the directory the token-key Secret is mounted at.
	FlagKeyDir = "key-dir"
	// FlagListen is the game (WebSocket) address.
	FlagListen = "listen"
	// FlagHTTPListen is the health, readiness and metrics address.
	FlagHTTPListen = "http-listen"
	// FlagJoinAPI is the manager's join API URL, for portal destinations.
	FlagJoinAPI = "join-api"
	// FlagAllowedOrigins lists the browser origins whose pages may connect.
	FlagAllowedOrigins = "allowed-origins"
	// FlagDatabaseMaxConnections caps the pod's pool of database
	// connections (the room's spec.database.maxConnectionsPerPod).
	FlagDatabaseMaxConnections = "database-max-connections"
	// FlagContentFile is the content pack's JSON form (a GameContent
	// revision); without it the map runs the built-in pack its config
	// names.
	FlagContentFile = "content-file"
	// FlagHeartbeatInterval is how often the pod writes its heartbeat: a
	// third of the room's restartPolicy.heartbeatTimeout, passed only when
	// that is not the default's (then the pod's default, 5 s, is it).
	FlagHeartbeatInterval = "heartbeat-interval"
)

// Environment variables the operator sets in the room-server container.
const (
	// EnvMapConfig holds the map's MapConfig as JSON.
	EnvMapConfig = "ROOMKEEPER_MAP_CONFIG"
	// EnvDatabaseURL holds the Postgres DSN, from the room's database Secret.
	EnvDatabaseURL = "ROOMKEEPER_DATABASE_URL"
	// EnvPodName is the pod's name (downward API).
	EnvPodName = "POD_NAME"
	// EnvPodUID is the pod's UID (downward API): its Lease's owner.
	EnvPodUID = "POD_UID"
	// EnvPodNamespace is the pod's namespace (downward API).
	EnvPodNamespace = "POD_NAMESPACE"
	// EnvPodIP is the pod's IP address (downward API), the host of its endpoint.
	EnvPodIP = "POD_IP"
)

// Ports and HTTP paths of the room-server container.
const (
	// GamePort serves the WebSocket at GamePath.
	GamePort = 7350
	// HTTPPort serves HealthPath, ReadyPath and MetricsPath.
	HTTPPort = 8080
	// GamePath is the WebSocket's path on GamePort.
	GamePath = "/ws"
	// HealthPath is the liveness probe's path on HTTPPort.
	HealthPath = "/healthz"
	// ReadyPath is the readiness probe's path on HTTPPort.
	ReadyPath = "/readyz"
	// MetricsPath is where Prometheus scrapes the room server on HTTPPort.
	MetricsPath = "/metrics"
)

// Arg is flag name with value as one command-line argument: --name=value.
func Arg(name, value string) string {
	return "--" + name + "=" + value
}

// ArgValue is the value of flag name in args as Arg wrote it.
func ArgValue(args []string, name string) (string, bool) {
	for _, a := range args {
		if v, ok := strings.CutPrefix(a, "--"+name+"="); ok {
			return v, true
		}
	}
	return "", false
}
