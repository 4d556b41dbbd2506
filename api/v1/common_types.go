/*
Copyright 2026 The Roomkeeper Authors.

Licensed under the Apache License, Version 2.0 (the "License");
you may not use this file except in compliance with the License.
You may obtain a copy of the License at

    http://www.apache.org/licenses/LICENSE-2.0

Unless required by applicable law or agreed to in writing, software
distributed under the License is distributed on an "AS IS" BASIS,
WITHOUT WARRANTIES OR CONDITIONS OF ANY KIND, either express or implied.
See the License for the specific language governing permissions and
limitations under the License.
*/

package v1

import (
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Biome names the look and content table a map is generated with.
// +kubebuilder:validation:Enum=meadow;forest;desert;dungeon
type Biome string

// Biomes known to the map generator.
const (
	BiomeMeadow  Biome = "meadow"
	BiomeForest  Biome = "forest"
	BiomeDesert  Biome = "desert"
	BiomeDungeon Biome = "dungeon"
)

// MapConfig is the deterministic input of the map generator: the same config
// builds the same static world on the server and in every client.
// +kubebuilder:validation:XValidation:rule="!has(self.portals) || self.portals.all(p, p.x < self.width && p.y < self.height)",message="every portal must lie inside the map (x < width, y < height)",fieldPath=".portals"
type MapConfig struct {
	// seed feeds the map generator's PRNG.
	// +optional
	Seed int64 `json:"seed,omitempty"`

	// width of the map in world units.
	// +required
	// +kubebuilder:validation:Minimum=32
	// +kubebuilder:validation:Maximum=4096
	Width int32 `json:"width"`

	// height of the map in world units.
	// +required
	// +kubebuilder:validation:Minimum=32
	// +kubebuilder:validation:Maximum=4096
	Height int32 `json:"height"`

	// biome selects terrain, props and the NPC table.
	// +optional
	// +kubebuilder:default=meadow
	Biome Biome `json:"biome,omitempty"`

	// npcDensity is the fraction of walkable cells that spawn an NPC, 0 to 1.
	// +optional
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=1
	NPCDensity float64 `json:"npcDensity,omitempty"`

	// lootDensity is the fraction of walkable cells that hold loot, 0 to 1.
	// +optional
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=1
	LootDensity float64 `json:"lootDensity,omitempty"`

	// portals lead from this map to other maps of the same room.
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=16
	Portals []Portal `json:"portals,omitempty"`

	// spawnPoints is how many places new players start at, 1 to 64 (0
	// means 1, near the centre). Each new player starts at the least
	// crowded one, so a crowd that joins at once spreads over the map.
	// +optional
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=64
	SpawnPoints int32 `json:"spawnPoints,omitempty"`

	// playerSpeed is how fast players walk, in world units per second, 1
	// to 256 (0 means 48). Clients learn it in welcome and predict with it.
	// +optional
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=256
	PlayerSpeed int32 `json:"playerSpeed,omitempty"`

	// content names the map's content pack: a GameContent of the room's
	// namespace (docs/content.md), or, when the namespace has none of that
	// name, a built-in pack: "wilds" (neutral beasts), "crypt" (hostile
	// undead, a boss and its key) or "arena" (training dummies that fall at
	// one hit and stand up again at once: a load for combat benchmarks),
	// the same packs config/content ships as GameContents. Unset, the
	// biome's built-in pack: crypt for dungeons, wilds elsewhere.
	// +optional
	// +kubebuilder:validation:MaxLength=40
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`
	Content string `json:"content,omitempty"`
}

// Portal is a spot on a map that transfers a player to another map.
type Portal struct {
	// to is the name of the destination map in the same GameRoom.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=20
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`
	To string `json:"to"`

	// x is the portal's position along the map's width.
	// +required
	// +kubebuilder:validation:Minimum=0
	X int32 `json:"x"`

	// y is the portal's position along the map's height.
	// +required
	// +kubebuilder:validation:Minimum=0
	Y int32 `json:"y"`
}

// RoomSettings are the runtime settings a GameRoom gives each of its maps.
// GameRoomSpec embeds them; a MapInstance names its room and map, and the
// operator reads them from the room when it builds the map's pod.
type RoomSettings struct {
	// tickRate is the simulation's fixed step rate in Hz.
	// +optional
	// +kubebuilder:default=30
	// +kubebuilder:validation:Minimum=10
	// +kubebuilder:validation:Maximum=120
	TickRate int32 `json:"tickRate,omitempty"`

	// snapshotRate is how often each client gets a snapshot, in Hz, at most tickRate.
	// +optional
	// +kubebuilder:default=10
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=120
	SnapshotRate int32 `json:"snapshotRate,omitempty"`

	// maxPlayersPerMap is the number of players one map pod admits.
	// +optional
	// +kubebuilder:default=100
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=5000
	MaxPlayersPerMap int32 `json:"maxPlayersPerMap,omitempty"`

	// database points at the Secret holding the Postgres DSN. Without it the
	// maps run without persistence: only disposable guests can play.
	// +optional
	Database *DatabaseRef `json:"database,omitempty"`

	// checkpointInterval is how often dirty player state is written to Postgres.
	// +optional
	// +kubebuilder:default="5s"
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:Pattern=`^([0-9]+(\.[0-9]+)?(ns|us|ms|s|m|h))+$`
	// +kubebuilder:validation:MaxLength=32
	// +kubebuilder:validation:XValidation:rule="duration(self) > duration('0s')",message="checkpointInterval must be positive"
	CheckpointInterval *metav1.Duration `json:"checkpointInterval,omitempty"`

	// restartPolicy decides how crashed map pods come back.
	// +optional
	// +kubebuilder:default={}
	RestartPolicy RestartPolicy `json:"restartPolicy,omitempty"`

	// tokens sets join-ticket lifetime and signing-key rotation.
	// +optional
	// +kubebuilder:default={}
	Tokens TokenPolicy `json:"tokens,omitempty"`

	// parties bound the party instances of the room's instanced maps.
	// +optional
	// +kubebuilder:default={}
	Parties PartyPolicy `json:"parties,omitempty"`

	// idleTimeout is how long maps may go without players before the
	// operator deletes them. It has two uses. An instanced map's MapInstance
	// (one per party) is deleted after idleTimeout without players, or after
	// 30m when idleTimeout is unset. When idleTimeout is set, the whole
	// GameRoom is deleted after idleTimeout without a player in any of its
	// maps; unset, the room never expires. Non-instanced maps are never
	// deleted for idleness. Only players who play count (an input or a
	// command in the last 5 minutes, status.activePlayers): a connection
	// kept open without playing does not. The time counts from when the
	// operator first sees the instance, or the room, Ready with none
	// (status.emptySince); a reported active player resets it.
	// +optional
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:Pattern=`^([0-9]+(\.[0-9]+)?(ns|us|ms|s|m|h))+$`
	// +kubebuilder:validation:MaxLength=32
	// +kubebuilder:validation:XValidation:rule="duration(self) > duration('0s')",message="idleTimeout must be positive"
	IdleTimeout *metav1.Duration `json:"idleTimeout,omitempty"`

	// podTemplate adds scheduling and metadata to every map pod.
	// +optional
	PodTemplate PodTemplate `json:"podTemplate,omitempty"`

	// exposure is how players reach the maps: Direct (the pod's IP, for
	// clients inside the cluster network), HostPort (a port of the pod's
	// node) or Gateway (an HTTPRoute on a Gateway API Gateway, wss://). The
	// join API and portal transfers hand out the endpoint it gives.
	// +optional
	// +kubebuilder:default={type: Direct}
	Exposure Exposure `json:"exposure,omitempty"`

	// podReplacement is how a map's pod is replaced when what it runs
	// changes (image, settings, template) or when the pod is deleted
	// (kubectl delete pod, a node drain): Handover starts the new pod
	// first and, once it is Ready, has the old one hand every connected
	// player over to it (a transfer to the same map: a pause, not a
	// disconnect); Recreate stops the old pod first (its players are told
	// server_shutdown and resume on the new pod once it is up). Every
	// exposure hands over: a new Direct pod has an address of its own, a
	// new HostPort pod a host port of its own from the range, a new pod
	// behind a Gateway a route of its own.
	// +optional
	// +kubebuilder:default=Handover
	PodReplacement PodReplacement `json:"podReplacement,omitempty"`
}

// HandsOver reports whether a map's pod is replaced by handover: unless
// Recreate is asked for.
func (s RoomSettings) HandsOver() bool {
	return s.PodReplacement != ReplaceByRecreate
}

// Replacement is how the maps' pods are replaced: Handover when HandsOver,
// else Recreate (a MapInstance's status.podReplacement).
func (s RoomSettings) Replacement() PodReplacement {
	if s.HandsOver() {
		return ReplaceByHandover
	}
	return ReplaceByRecreate
}

// PodReplacement names how a map's pod is replaced.
// +kubebuilder:validation:Enum=Handover;Recreate
type PodReplacement string

// Pod replacements.
const (
	// ReplaceByHandover: the new pod first, then the players handed over.
	ReplaceByHandover PodReplacement = "Handover"
	// ReplaceByRecreate: the old pod stops first.
	ReplaceByRecreate PodReplacement = "Recreate"
)

// ExposureType names how a room's maps are reached.
// +kubebuilder:validation:Enum=Direct;HostPort;Gateway
type ExposureType string

// Exposure types.
const (
	// ExposureDirect: ws://<pod IP>:7350/ws, for clients in the pod network.
	ExposureDirect ExposureType = "Direct"
	// ExposureHostPort: ws://<node address>:<port>/ws, the port taken from
	// the manager's --host-port-range and kept in the MapInstance's status.
	ExposureHostPort ExposureType = "HostPort"
	// ExposureGateway: wss://<hostname>/<namespace>/<room>/<map>/ws through
	// a Service and an HTTPRoute per MapInstance on the named Gateway.
	ExposureGateway ExposureType = "Gateway"
)

// Exposure is how players outside the pod network reach a room's maps.
// +kubebuilder:validation:XValidation:rule="self.type != 'Gateway' || has(self.gateway)",message="exposure.gateway is required when type is Gateway",fieldPath=".gateway"
// +kubebuilder:validation:XValidation:rule="self.type == 'Gateway' || !has(self.gateway)",message="exposure.gateway applies only to type Gateway",fieldPath=".gateway"
type Exposure struct {
	// type is Direct, HostPort or Gateway.
	// +optional
	// +kubebuilder:default=Direct
	Type ExposureType `json:"type,omitempty"`

	// gateway is the Gateway the maps' HTTPRoutes attach to; required with
	// type Gateway. Its HTTPS listener terminates TLS.
	// +optional
	Gateway *GatewayExposure `json:"gateway,omitempty"`
}

// GatewayExposure names a Gateway API Gateway and the public name players
// use to reach it.
type GatewayExposure struct {
	// name of the Gateway.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$`
	Name string `json:"name"`

	// namespace of the Gateway; the room's namespace when empty. A Gateway
	// in another namespace must allow routes from the room's namespace.
	// +optional
	// +kubebuilder:validation:MaxLength=63
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`
	Namespace string `json:"namespace,omitempty"`

	// sectionName is the Gateway listener to attach to; any listener that
	// allows the routes when empty.
	// +optional
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$`
	SectionName string `json:"sectionName,omitempty"`

	// hostname players connect to: the HTTPRoute's hostname and the host of
	// the wss:// endpoint. A DNS name, no wildcard.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$`
	Hostname string `json:"hostname"`

	// port of the Gateway's HTTPS listener as players reach it; written in
	// the endpoint when it is not 443.
	// +optional
	// +kubebuilder:default=443
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=65535
	Port int32 `json:"port,omitempty"`
}

// DefaultInstanceIdleTimeout is how long an instanced map may have no players
// before its MapInstance is deleted, when the room leaves idleTimeout unset.
const DefaultInstanceIdleTimeout = 30 * time.Minute

// DatabaseRef names where the Postgres connection string comes from.
type DatabaseRef struct {
	// secretRef selects the key of a Secret in the room's namespace that holds the DSN.
	// +required
	SecretRef SecretKeyRef `json:"secretRef"`

	// maxConnectionsPerPod caps each map pod's connections to the
	// database. Every map pod of the room (party instances included) has
	// its own pool, so plan the room's maps times this within the
	// database's share of its max_connections. A pod opens connections
	// only as it needs them; past the cap its statements wait, and a
	// player's action that waits too long is told persistence_unavailable.
	// +optional
	// +kubebuilder:default=4
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=64
	MaxConnectionsPerPod int32 `json:"maxConnectionsPerPod,omitempty"`

	// retention is how long the database keeps what grows with play; the
	// manager prunes the rest (docs/operations.md, "Data retention"). Rooms
	// that share a database keep each kind of row as long as the longest
	// of their retentions.
	// +optional
	// +kubebuilder:default={}
	Retention DataRetention `json:"retention,omitempty"`
}

// DurationOr is *d, or def when the field is unset (the CRD defaults it,
// but a client reading an object written before a default existed sees
// nil).
func DurationOr(d *metav1.Duration, def time.Duration) time.Duration {
	if d == nil {
		return def
	}
	return d.Duration
}

// DataRetention is how long each kind of row is kept, 0s for ever.
type DataRetention struct {
	// transfers: portal crossings, once settled.
	// +optional
	// +kubebuilder:default="168h"
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:Pattern=`^([0-9]+(\.[0-9]+)?(ns|us|ms|s|m|h))+$`
	// +kubebuilder:validation:MaxLength=32
	Transfers *metav1.Duration `json:"transfers,omitempty"`

	// criticalEvents: acknowledged critical actions (pickups, drops, uses,
	// equips, recoveries) and the recovery audit. Keep them well past any
	// dispute window: a support ticket about an item needs them.
	// +optional
	// +kubebuilder:default="720h"
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:Pattern=`^([0-9]+(\.[0-9]+)?(ns|us|ms|s|m|h))+$`
	// +kubebuilder:validation:MaxLength=32
	CriticalEvents *metav1.Duration `json:"criticalEvents,omitempty"`

	// eventLog: every map event (hits, deaths, loot, doors, rooms cleared,
	// boss phases, joins, leaves, transfers), kept by the hour: an hour
	// goes once all of it is older.
	// +optional
	// +kubebuilder:default="24h"
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:Pattern=`^([0-9]+(\.[0-9]+)?(ns|us|ms|s|m|h))+$`
	// +kubebuilder:validation:MaxLength=32
	EventLog *metav1.Duration `json:"eventLog,omitempty"`

	// checkpointHistory: every checkpoint of every character, with the
	// items it held, for replay checks; a character's newest stays
	// whatever its age.
	// +optional
	// +kubebuilder:default="24h"
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:Pattern=`^([0-9]+(\.[0-9]+)?(ns|us|ms|s|m|h))+$`
	// +kubebuilder:validation:MaxLength=32
	CheckpointHistory *metav1.Duration `json:"checkpointHistory,omitempty"`

	// deletedInstances: what a map instance that no longer exists (a
	// party's instance, a removed shard, a deleted room's maps) left in
	// the database, the items lying on it and its world, counted from its
	// last change.
	// +optional
	// +kubebuilder:default="168h"
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:Pattern=`^([0-9]+(\.[0-9]+)?(ns|us|ms|s|m|h))+$`
	// +kubebuilder:validation:MaxLength=32
	DeletedInstances *metav1.Duration `json:"deletedInstances,omitempty"`
}

// DefaultDatabaseKey is the key of a database Secret that holds the DSN
// when secretRef.key is unset.
const DefaultDatabaseKey = "dsn"

// SecretKeyRef selects one key of a Secret in the same namespace.
type SecretKeyRef struct {
	// name of the Secret.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	Name string `json:"name"`

	// key inside the Secret's data.
	// +optional
	// +kubebuilder:default=dsn
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	Key string `json:"key,omitempty"`
}

// RestartPolicy is the operator's crash handling: exponential backoff between
// restarts, and quarantine when a map fails too often.
// +kubebuilder:validation:XValidation:rule="!has(self.initialBackoff) || !has(self.maxBackoff) || duration(self.initialBackoff) <= duration(self.maxBackoff)",message="initialBackoff must not exceed maxBackoff",fieldPath=".initialBackoff"
type RestartPolicy struct {
	// maxRestarts is how many failures inside window are tolerated before quarantine.
	// +optional
	// +kubebuilder:default=3
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=100
	MaxRestarts int32 `json:"maxRestarts,omitempty"`

	// window is the sliding period in which failures are counted.
	// +optional
	// +kubebuilder:default="60s"
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:Pattern=`^([0-9]+(\.[0-9]+)?(ns|us|ms|s|m|h))+$`
	// +kubebuilder:validation:MaxLength=32
	// +kubebuilder:validation:XValidation:rule="duration(self) > duration('0s')",message="window must be positive"
	Window *metav1.Duration `json:"window,omitempty"`

	// quarantine is how long a crash-looping map stays down before it is tried again.
	// +optional
	// +kubebuilder:default="60s"
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:Pattern=`^([0-9]+(\.[0-9]+)?(ns|us|ms|s|m|h))+$`
	// +kubebuilder:validation:MaxLength=32
	// +kubebuilder:validation:XValidation:rule="duration(self) > duration('0s')",message="quarantine must be positive"
	Quarantine *metav1.Duration `json:"quarantine,omitempty"`

	// initialBackoff is the wait before the first restart; it doubles per failure.
	// +optional
	// +kubebuilder:default="1s"
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:Pattern=`^([0-9]+(\.[0-9]+)?(ns|us|ms|s|m|h))+$`
	// +kubebuilder:validation:MaxLength=32
	// +kubebuilder:validation:XValidation:rule="duration(self) > duration('0s')",message="initialBackoff must be positive"
	InitialBackoff *metav1.Duration `json:"initialBackoff,omitempty"`

	// maxBackoff caps the wait between restarts.
	// +optional
	// +kubebuilder:default="30s"
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:Pattern=`^([0-9]+(\.[0-9]+)?(ns|us|ms|s|m|h))+$`
	// +kubebuilder:validation:MaxLength=32
	// +kubebuilder:validation:XValidation:rule="duration(self) > duration('0s')",message="maxBackoff must be positive"
	MaxBackoff *metav1.Duration `json:"maxBackoff,omitempty"`

	// heartbeatTimeout is how long a running map pod may go without a
	// heartbeat before it counts as failed and is replaced, 10s to 10m.
	// The room server sends one every third of it (every 5s at the
	// default): a longer timeout notices a silent map later and costs the
	// API server fewer writes a map.
	// +optional
	// +kubebuilder:default="15s"
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:Pattern=`^([0-9]+(\.[0-9]+)?(ns|us|ms|s|m|h))+$`
	// +kubebuilder:validation:MaxLength=32
	// +kubebuilder:validation:XValidation:rule="duration(self) >= duration('10s') && duration(self) <= duration('10m')",message="heartbeatTimeout must be between 10s and 10m: the room server sends a heartbeat every third of it"
	HeartbeatTimeout *metav1.Duration `json:"heartbeatTimeout,omitempty"`
}

// DefaultHeartbeatTimeout is restartPolicy.heartbeatTimeout when unset.
const DefaultHeartbeatTimeout = 15 * time.Second

// HeartbeatTimeoutOrDefault is the policy's heartbeat timeout, or the
// default for a policy built by hand without one.
func (p RestartPolicy) HeartbeatTimeoutOrDefault() time.Duration {
	if p.HeartbeatTimeout == nil || p.HeartbeatTimeout.Duration <= 0 {
		return DefaultHeartbeatTimeout
	}
	return p.HeartbeatTimeout.Duration
}

// HeartbeatsPerTimeout is how many heartbeats a map pod sends in one
// heartbeat timeout: two may be lost before the map is failed.
const HeartbeatsPerTimeout = 3

// HeartbeatIntervalOrDefault is how often a map pod writes its
// heartbeat: a third of the heartbeat timeout (5 s at the default 15 s).
// A longer timeout is the knob for fewer API-server writes a map
// (docs/benchmarks.md, "Density").
func (p RestartPolicy) HeartbeatIntervalOrDefault() time.Duration {
	return p.HeartbeatTimeoutOrDefault() / HeartbeatsPerTimeout
}

// PartyPolicy bounds the party instances of a room's instanced maps: each
// is a pod, started on demand by whoever enters (docs/operations.md,
// "Multi-tenancy and limits").
type PartyPolicy struct {
	// maxInstancesPerMap is how many party MapInstances one instanced map
	// may run at once, 1 to 1000; past it, entering a new party's instance
	// is refused with room_full.
	// +optional
	// +kubebuilder:default=100
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=1000
	MaxInstancesPerMap int32 `json:"maxInstancesPerMap,omitempty"`

	// maxSize is how many players one party instance seats, 1 to 100
	// (maxPlayersPerMap still caps it): the party's size limit where it
	// plays together. A player entering its party's full instance is
	// refused with room_full and stays where it was.
	// +optional
	// +kubebuilder:default=10
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=100
	MaxSize int32 `json:"maxSize,omitempty"`
}

// DefaultMaxPartySize is parties.maxSize when unset.
const DefaultMaxPartySize = 10

// MaxSizeOrDefault is the policy's party size, or the default for a policy
// built by hand without one.
func (p PartyPolicy) MaxSizeOrDefault() int {
	if p.MaxSize <= 0 {
		return DefaultMaxPartySize
	}
	return int(p.MaxSize)
}

// DefaultMaxInstancesPerMap is parties.maxInstancesPerMap when unset.
const DefaultMaxInstancesPerMap = 100

// MaxInstancesPerMapOrDefault is the policy's cap, or the default for a
// policy built by hand without one.
func (p PartyPolicy) MaxInstancesPerMapOrDefault() int {
	if p.MaxInstancesPerMap <= 0 {
		return DefaultMaxInstancesPerMap
	}
	return int(p.MaxInstancesPerMap)
}

// TokenPolicy sets the lifetime of join tickets and transfer tokens and how
// often the HMAC key that signs them is rotated.
// +kubebuilder:validation:XValidation:rule="!has(self.rotationInterval) || !has(self.ttl) || duration(self.rotationInterval) > duration(self.ttl)",message="rotationInterval must be longer than ttl",fieldPath=".rotationInterval"
type TokenPolicy struct {
	// ttl is how long a join ticket or transfer token stays valid after it
	// is issued, 1s to 5m (a transfer's return ticket lives twice as long).
	// +optional
	// +kubebuilder:default="10s"
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:Pattern=`^([0-9]+(\.[0-9]+)?(ns|us|ms|s|m|h))+$`
	// +kubebuilder:validation:MaxLength=32
	// +kubebuilder:validation:XValidation:rule="duration(self) >= duration('1s') && duration(self) <= duration('5m')",message="ttl must be between 1s and 5m: tokens carry whole seconds"
	TTL *metav1.Duration `json:"ttl,omitempty"`

	// rotationInterval is how often the signing key is replaced.
	// +optional
	// +kubebuilder:default="24h"
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:Pattern=`^([0-9]+(\.[0-9]+)?(ns|us|ms|s|m|h))+$`
	// +kubebuilder:validation:MaxLength=32
	// +kubebuilder:validation:XValidation:rule="duration(self) > duration('0s')",message="rotationInterval must be positive"
	RotationInterval *metav1.Duration `json:"rotationInterval,omitempty"`
}

// PodTemplate is what a platform team may add to every map pod.
type PodTemplate struct {
	// labels are added to each pod; Roomkeeper's own labels win on conflict.
	// +optional
	// +kubebuilder:validation:MaxProperties=32
	Labels map[string]string `json:"labels,omitempty"`

	// annotations are added to each pod.
	// +optional
	// +kubebuilder:validation:MaxProperties=32
	Annotations map[string]string `json:"annotations,omitempty"`

	// resources of the room-server container.
	// +optional
	Resources corev1.ResourceRequirements `json:"resources,omitempty"`

	// nodeSelector constrains which nodes run map pods.
	// +optional
	// +kubebuilder:validation:MaxProperties=32
	NodeSelector map[string]string `json:"nodeSelector,omitempty"`

	// tolerations let map pods run on tainted nodes.
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=32
	Tolerations []corev1.Toleration `json:"tolerations,omitempty"`
}
