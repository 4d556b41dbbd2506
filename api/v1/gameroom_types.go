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
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// GameMap is one map of a room.
// +kubebuilder:validation:XValidation:rule="!has(self.warm) || self.warm == 0 || (has(self.instanced) && self.instanced)",message="warm pools are for instanced maps: set instanced: true or drop warm",fieldPath=".warm"
// +kubebuilder:validation:XValidation:rule="!has(self.shards) || !has(self.instanced) || !self.instanced",message="shards are for shared maps: an instanced map already gets an instance per party",fieldPath=".shards"
type GameMap struct {
	// name identifies the map inside its room; a DNS label of at most 20 characters.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=20
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`
	Name string `json:"name"`

	// instanced maps get one MapInstance per party, created when a party
	// enters and deleted after idleTimeout (30m when unset) without players.
	// +optional
	Instanced bool `json:"instanced,omitempty"`

	// warm is how many Ready, empty MapInstances of an instanced map the
	// operator keeps started, 0 to 50: a party entering takes one (no
	// pod to wait for) and the operator starts a replacement. Warm
	// instances count in parties.maxInstancesPerMap.
	// +optional
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=50
	Warm int32 `json:"warm,omitempty"`

	// shards bounds how many MapInstances serve a shared (non-instanced)
	// map, each a copy of it with its own players and world: the
	// operator keeps min, adds one (up to max) when the map's shards are
	// nearly full, and removes a surplus one after idleTimeout without
	// players. Unset, one (min 1, max 1).
	// +optional
	Shards *ShardRange `json:"shards,omitempty"`

	// config generates the map's static world.
	// +required
	Config MapConfig `json:"config"`
}

// ShardRange is how many shards a shared map may have.
// +kubebuilder:validation:XValidation:rule="self.min <= self.max",message="shards.min must not exceed shards.max",fieldPath=".min"
type ShardRange struct {
	// min is how many shards the operator always keeps, 1 to 20.
	// +optional
	// +kubebuilder:default=1
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=20
	Min int32 `json:"min,omitempty"`

	// max is how many shards the operator may run, 1 to 20.
	// +optional
	// +kubebuilder:default=1
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=20
	Max int32 `json:"max,omitempty"`
}

// GameRoomSpec is what a platform team asks for: the maps of one game world
// and how their servers run.
// +kubebuilder:validation:XValidation:rule="self.maps.exists(m, m.name == self.defaultMap)",message="defaultMap must name one of maps",fieldPath=".defaultMap"
// +kubebuilder:validation:XValidation:rule="!self.maps.exists(m, m.name == self.defaultMap && has(m.instanced) && m.instanced)",message="defaultMap must not be an instanced map",fieldPath=".defaultMap"
// +kubebuilder:validation:XValidation:rule="self.maps.all(m, !has(m.config.portals) || m.config.portals.all(p, self.maps.exists(t, t.name == p.to)))",message="every portal's to must name one of maps",fieldPath=".maps"
// +kubebuilder:validation:XValidation:rule="self.maps.all(m, !has(m.shards) || m.shards.max <= 1 || !self.maps.exists(o, o.name.startsWith(m.name + '-s')))",message="a map's name must not start with a sharded map's name and -s: shards are named <room>-<map>-s<n>",fieldPath=".maps"
// +kubebuilder:validation:XValidation:rule="self.snapshotRate <= self.tickRate",message="snapshotRate must not exceed tickRate",fieldPath=".snapshotRate"
type GameRoomSpec struct {
	// image is the room-server container image.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=512
	Image string `json:"image"`

	// defaultMap is where joining players land; it must name a non-instanced map.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=20
	DefaultMap string `json:"defaultMap"`

	// maps are the room's maps; names are unique.
	// +required
	// +listType=map
	// +listMapKey=name
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=32
	Maps []GameMap `json:"maps"`

	RoomSettings `json:",inline"`
}

// GameRoomPhase summarises a room's conditions for `kubectl get gr`.
// +kubebuilder:validation:Enum=Pending;Starting;Running;Degraded;Terminating
type GameRoomPhase string

// GameRoom phases, derived from conditions.
const (
	GameRoomPending     GameRoomPhase = "Pending"
	GameRoomStarting    GameRoomPhase = "Starting"
	GameRoomRunning     GameRoomPhase = "Running"
	GameRoomDegraded    GameRoomPhase = "Degraded"
	GameRoomTerminating GameRoomPhase = "Terminating"
)

// MapDirectoryEntry tells clients and operators where one map is served.
type MapDirectoryEntry struct {
	// name of the map in the room's spec.
	// +required
	Name string `json:"name"`

	// instance is the MapInstance serving the map.
	// +required
	Instance string `json:"instance"`

	// phase of that MapInstance.
	// +optional
	Phase MapInstancePhase `json:"phase,omitempty"`

	// endpoint is the WebSocket URL of the map's server, once it has one.
	// +optional
	Endpoint string `json:"endpoint,omitempty"`

	// players connected to that map.
	// +optional
	// +kubebuilder:default=0
	Players int32 `json:"players"`

	// shard is the instance's number among its shared map's shards (1
	// is <room>-<map>, n > 1 <room>-<map>-s<n>); unset for an instanced
	// map's.
	// +optional
	Shard int32 `json:"shard,omitempty"`
}

// GameRoomStatus is what the operator observed of the room.
type GameRoomStatus struct {
	// phase summarises the conditions in one word.
	// +optional
	Phase GameRoomPhase `json:"phase,omitempty"`

	// readyMaps counts the MapInstances that are Ready.
	// +optional
	// +kubebuilder:default=0
	ReadyMaps int32 `json:"readyMaps"`

	// totalMaps counts the room's MapInstances.
	// +optional
	// +kubebuilder:default=0
	TotalMaps int32 `json:"totalMaps"`

	// mapsReady is readyMaps/totalMaps as text, for the Maps printer column.
	// +optional
	MapsReady string `json:"mapsReady,omitempty"`

	// players connected across all maps.
	// +optional
	// +kubebuilder:default=0
	Players int32 `json:"players"`

	// activePlayers counts the players across all maps who played (an
	// input or a command) in the last 5 minutes; a map whose pod does not
	// report activity counts its connected players. The idle clock counts
	// these: a connection kept open without playing keeps no room.
	// +optional
	ActivePlayers int32 `json:"activePlayers,omitempty"`

	// emptySince is when the operator first saw the room Ready with no
	// active players in any of its maps; unset while one is reported, or
	// before the room was first Ready. When spec.idleTimeout is set the
	// room is deleted at emptySince + idleTimeout.
	// +optional
	EmptySince *metav1.Time `json:"emptySince,omitempty"`

	// keySecretName is the Secret holding the room's token signing keys.
	// +optional
	KeySecretName string `json:"keySecretName,omitempty"`

	// warmPools are the instanced maps' warm pools (spec.maps[].warm),
	// by map.
	// +optional
	// +listType=map
	// +listMapKey=map
	WarmPools []WarmPoolStatus `json:"warmPools,omitempty"`

	// warm is the warm pools as text, map ready/warm (crypt 2/3), for the
	// Warm printer column; empty without warm pools.
	// +optional
	Warm string `json:"warm,omitempty"`

	// shardedMaps are the shared maps with shards (spec.maps[].shards
	// max above 1, or more than one shard running), by map.
	// +optional
	// +listType=map
	// +listMapKey=map
	ShardedMaps []MapShardsStatus `json:"shardedMaps,omitempty"`

	// shards is the sharded maps as text, map shards/max (town 2/4), for
	// the Shards printer column; empty without sharded maps.
	// +optional
	Shards string `json:"shards,omitempty"`

	// maps is the directory of running maps, sorted by instance name.
	// +optional
	// +listType=atomic
	Maps []MapDirectoryEntry `json:"maps,omitempty"`

	// conditions are Ready and Degraded.
	// +optional
	// +listType=map
	// +listMapKey=type
	Conditions []metav1.Condition `json:"conditions,omitempty"`

	// observedGeneration is the spec generation this status describes.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`
}

// WarmPoolStatus is one instanced map's warm pool.
type WarmPoolStatus struct {
	// map is the instanced map's name.
	// +required
	Map string `json:"map"`
	// warm is how many the pool keeps (spec.maps[].warm).
	Warm int32 `json:"warm"`
	// ready counts the unclaimed instances that are Ready: what parties
	// take at once.
	Ready int32 `json:"ready"`
	// starting counts the unclaimed instances not Ready yet.
	Starting int32 `json:"starting"`
}

// MapShardsStatus is one shared map's shards.
type MapShardsStatus struct {
	// map is the shared map's name.
	// +required
	Map string `json:"map"`
	// shards counts its MapInstances; ready, those Ready.
	Shards int32 `json:"shards"`
	Ready  int32 `json:"ready"`
	// min and max are spec.maps[].shards.
	Min int32 `json:"min"`
	Max int32 `json:"max"`
	// players are connected across its shards, of seats (each shard
	// seats maxPlayersPerMap).
	Players int32 `json:"players"`
	Seats   int32 `json:"seats"`
}

// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:shortName=gr,categories=roomkeeper
// +kubebuilder:printcolumn:name="Ready",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].status`
// +kubebuilder:printcolumn:name="Maps",type=string,JSONPath=`.status.mapsReady`
// +kubebuilder:printcolumn:name="Players",type=integer,JSONPath=`.status.players`
// +kubebuilder:printcolumn:name="Warm",type=string,JSONPath=`.status.warm`
// +kubebuilder:printcolumn:name="Shards",type=string,JSONPath=`.status.shards`
// +kubebuilder:printcolumn:name="Phase",type=string,JSONPath=`.status.phase`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
// +kubebuilder:validation:XValidation:rule="self.metadata.name.size() <= 36",message="metadata.name must be at most 36 characters: map pods are named <room>-<map>"

// GameRoom is a game world of one or more maps, each served by its own
// authoritative room-server pod.
type GameRoom struct {
	metav1.TypeMeta `json:",inline"`

	// metadata is the standard object metadata.
	// +optional
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// spec is the desired room.
	// +required
	Spec GameRoomSpec `json:"spec"`

	// status is the observed room.
	// +optional
	Status GameRoomStatus `json:"status,omitempty"`
}

// +kubebuilder:object:root=true

// GameRoomList contains a list of GameRoom.
type GameRoomList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []GameRoom `json:"items"`
}
