// Package roomserver serves one map: it runs the simulation, speaks the
// WebSocket protocol to players, and wires the simulation to the outside
// world (tickets, metrics, health).
package roomserver

import (
	"encoding/json"
	"errors"
	"time"

	"github.com/roomkeeper/roomkeeper/internal/protocol"
	"github.com/roomkeeper/roomkeeper/internal/sim"
)

// Config is one room server's settings. cmd/roomserver fills it from the
// flags and environment the operator's pod builder sets.
type Config struct {
	Room, Map, Instance string
	// MapConfig is the map's MapConfig as JSON, sent to clients in welcome
	// so they can build the same static world.
	MapConfig              json.RawMessage
	TickRate, SnapshotRate int
	MaxPlayers             int
	// ResumeGrace is how long a dropped player's seat is kept;
	// GuestResumeGrace a guest's (at most ResumeGrace). A full map also
	// releases the guest seat detached longest to admit a newcomer.
	ResumeGrace, GuestResumeGrace time.Duration
	// IdleTimeout closes a connection that sent nothing for this long.
	IdleTimeout time.Duration
	// PingInterval is how often the server pings each client.
	PingInterval time.Duration
	// HelloTimeout is how long a new connection has to say hello; nothing
	// it sends before a good hello extends it.
	HelloTimeout time.Duration
	// MaxUnseated and MaxUnseatedPerAddress bound the connections that
	// have not said hello yet, in all and from one source address; more
	// are refused at the upgrade (503 and 429).
	MaxUnseated, MaxUnseatedPerAddress int
	// AllowedOrigins lists the browser origins allowed to connect; empty
	// means same-origin and non-browser clients only, "*" allows any.
	AllowedOrigins []string
	// MessagesPerSecond and MessageBurst bound each client's message rate.
	MessagesPerSecond float64
	MessageBurst      int
	// CellSize is the AOI grid cell; a client sees the 3x3 cells around it.
	CellSize float32
	// Hysteresis is how far past a cell border a client must move before
	// its area of interest follows.
	Hysteresis float32
	// FarRefreshEvery is how often, in frames, entities more than a quarter
	// cell (or the hysteresis, if larger) outside a client's cell are
	// refreshed (1: every frame).
	FarRefreshEvery int
	// SendQueue bounds the control messages waiting for a slow client.
	SendQueue int
	// WriteTimeout bounds one write; a client that does not read is dropped.
	WriteTimeout time.Duration
	// Sim are the world's tunables (speeds, NPC behaviour). Its WakeCell,
	// when set, is replaced by CellSize: NPCs sleep out of every client's
	// sight.
	Sim sim.Tunables
	// Hibernate lets a map without players stop ticking until one comes
	// (sim.LoopConfig.Hibernate; docs/design.md, "Density").
	Hibernate bool
	// Pod names this process in authority leases.
	Pod string
	// TakesOver: the pod starts to take its map over by handover. Ready
	// once its database is, it takes the map's world when the old pod has
	// stopped and written it (or when Server.AdoptWorld says the old pod
	// is gone); hellos wait for it meanwhile.
	TakesOver bool
	// CheckpointInterval is how often dirty players, and the world, are saved.
	CheckpointInterval time.Duration
	// LeaseTTL is how long a character's authority lasts unrenewed; a map
	// that died loses its players' leases after it.
	LeaseTTL time.Duration
	// CriticalTimeout bounds one critical action's commit.
	CriticalTimeout time.Duration
	// RecoveryInterval is how often, in the world's time, the map checks
	// its critical items (recovery.go): passes run at tick boundaries of
	// this length.
	RecoveryInterval time.Duration
	// Reach is how near loot must be to pick it up, in world units.
	Reach float32
	// MaxInFlight bounds a client's critical actions waiting for commit.
	MaxInFlight int32
	// EventLogBuffer bounds the events waiting for the event log
	// (eventlog.go): past it, while the database is away, the newest are
	// dropped and counted.
	EventLogBuffer int
	// TokenTTL is the lifetime of the transfer tokens this map signs (the
	// return ticket lives twice as long).
	TokenTTL time.Duration
	// ActiveWindow is how recently a player must have played (an input
	// or a command; pings and pongs do not count) to be active: the
	// heartbeat reports active players, and an instanced map with none is
	// idle, however many connections idle there.
	ActiveWindow time.Duration
	// TransferTimeout bounds one transfer out of this map, including the
	// directory's wait for an instanced map to start.
	TransferTimeout time.Duration
	// SpawnPoints, when set, overrides the map config's spawnPoints (for
	// benchmarks: 1 starts everyone in one spot, more spread them); the
	// welcome carries the config the map was built from.
	SpawnPoints int32
	// MaxWorldActions bounds a client's attacks and door toggles waiting
	// for the world; more are refused with rate_limited.
	MaxWorldActions int
	// WorldActionTimeout bounds one attack's or door toggle's wait for the
	// tick goroutine: a map that busy answers "the map is busy".
	WorldActionTimeout time.Duration

	// marshal, when set, encodes messages instead of
	// protocol.MarshalMessage: tests make encoding fail with it.
	marshal func(kind protocol.Kind, seq uint32, payload any) ([]byte, error)
}

// DefaultConfig has the protocol's limits (docs/design.md section 4).
func DefaultConfig() Config {
	return Config{
		TickRate: 30, SnapshotRate: 10, MaxPlayers: 100,
		ResumeGrace: 30 * time.Second, GuestResumeGrace: 10 * time.Second, IdleTimeout: 60 * time.Second, PingInterval: 15 * time.Second,
		HelloTimeout: 10 * time.Second, MaxUnseated: 4096, MaxUnseatedPerAddress: 256, MessagesPerSecond: 60, MessageBurst: 120,
		CellSize: 64, Hysteresis: 8, FarRefreshEvery: 2, SendQueue: 256, WriteTimeout: 5 * time.Second,
		Sim: sim.Defaults(), Hibernate: true, Pod: "roomserver", CheckpointInterval: 5 * time.Second, LeaseTTL: 30 * time.Second,
		CriticalTimeout: 3 * time.Second, RecoveryInterval: 10 * time.Second, Reach: 24, MaxInFlight: 8, EventLogBuffer: 65536, MaxWorldActions: 8, WorldActionTimeout: time.Second,
		TokenTTL: 10 * time.Second, TransferTimeout: 40 * time.Second, ActiveWindow: 5 * time.Minute,
	}
}

func (c Config) validate() error {
	switch {
	case c.Room == "" || c.Map == "" || c.Instance == "":
		return errors.New("room, map and instance are required")
	case c.TickRate < 1 || c.SnapshotRate < 1 || c.SnapshotRate > c.TickRate:
		return errors.New("need 1 <= snapshot rate <= tick rate")
	case c.MaxPlayers < 1:
		return errors.New("max players must be positive")
	case c.CellSize <= 0 || c.Hysteresis < 0 || c.Hysteresis >= c.CellSize:
		return errors.New("need cell size > hysteresis >= 0")
	case c.FarRefreshEvery < 1:
		return errors.New("the far refresh divisor must be at least 1")
	case c.MaxUnseated < 1 || c.MaxUnseatedPerAddress < 1:
		return errors.New("the limits of connections before hello must be positive")
	case c.HelloTimeout <= 0 || c.ResumeGrace <= 0:
		return errors.New("the hello timeout and the resume grace must be positive")
	case c.TokenTTL < time.Second:
		return errors.New("token ttl must be at least a second")
	case c.MaxWorldActions < 1 || c.WorldActionTimeout <= 0:
		return errors.New("max world actions and their timeout must be positive")
	case c.RecoveryInterval <= 0:
		return errors.New("the recovery interval must be positive")
	}
	return nil
}
