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

// MapInstanceSpec is one map simulation to run: a map of a GameRoom, named,
// not copied. What the pod runs (the map's config, the room's image and
// settings) is read from the GameRoom when the pod is built, so a
// MapInstance stays small and a room's change reaches its maps without a
// write to each. MapInstances made by earlier operators carried a copy of
// all of it; the API server drops those fields, no longer in the schema,
// when it reads them.
type MapInstanceSpec struct {
	// roomName is the GameRoom this map belongs to. Immutable.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=36
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="roomName is immutable"
	RoomName string `json:"roomName"`

	// mapName is the map of that room this instance runs: one of the
	// room's spec.maps. Immutable.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=20
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="mapName is immutable"
	MapName string `json:"mapName"`

	// instanced is true for a per-party copy of an instanced map.
	// +optional
	Instanced bool `json:"instanced,omitempty"`
}

// HandsOver reports whether the map's pod is replaced by handover, as the
// operator last recorded from the room (podReplacement).
func (s MapInstanceStatus) HandsOver() bool {
	return s.PodReplacement == ReplaceByHandover
}

// MapInstancePhase summarises a map's conditions for `kubectl get mi`.
// +kubebuilder:validation:Enum=Pending;Starting;Ready;Backoff;Quarantined;Draining;Terminating
type MapInstancePhase string

// MapInstance phases, derived from conditions and restart state.
const (
	MapPending     MapInstancePhase = "Pending"
	MapStarting    MapInstancePhase = "Starting"
	MapReady       MapInstancePhase = "Ready"
	MapBackoff     MapInstancePhase = "Backoff"
	MapQuarantined MapInstancePhase = "Quarantined"
	MapDraining    MapInstancePhase = "Draining"
	MapTerminating MapInstancePhase = "Terminating"
)

// Failure records why a map pod stopped.
type Failure struct {
	// reason is a stable CamelCase word, such as PodFailed or HeartbeatTimeout.
	// +required
	Reason string `json:"reason"`

	// exitCode of the room-server container, when it exited.
	// +optional
	ExitCode *int32 `json:"exitCode,omitempty"`

	// time the failure was seen.
	// +required
	Time metav1.Time `json:"time"`

	// message is a human-readable detail.
	// +optional
	// +kubebuilder:validation:MaxLength=1024
	Message string `json:"message,omitempty"`
}

// Checkpoint identifies the last state the map wrote to Postgres.
type Checkpoint struct {
	// revision of the newest committed checkpoint.
	// +required
	Revision int64 `json:"revision"`

	// time it was committed.
	// +required
	Time metav1.Time `json:"time"`
}

// QuestPhase is a quest phase a map's world reaches.
// +kubebuilder:validation:Enum=keyRoomCleared;bossRoomCleared
type QuestPhase string

// The quest phases.
const (
	QuestPhaseKeyRoomCleared  QuestPhase = "keyRoomCleared"
	QuestPhaseBossRoomCleared QuestPhase = "bossRoomCleared"
)

// WorldCheckpoint is the newest checkpoint of a map's world (its doors,
// cleared rooms, NPCs, boss and ground), as the map's pod reports it.
type WorldCheckpoint struct {
	// revision of the newest world checkpoint the pod wrote or restored.
	// +required
	Revision int64 `json:"revision"`

	// tick of the world it holds.
	// +required
	Tick int64 `json:"tick"`

	// checkpointTime is when it was written.
	// +optional
	CheckpointTime *metav1.Time `json:"checkpointTime,omitempty"`

	// roomsCleared counts the rooms whose guards were all killed.
	// +optional
	RoomsCleared int32 `json:"roomsCleared,omitempty"`

	// bossPhase is the boss's phase, 1 at full strength and 2 once it fell
	// below its first threshold (the first boss_phase event); unset when
	// the map has no living boss.
	// +optional
	BossPhase int32 `json:"bossPhase,omitempty"`

	// bossHP is the living boss's hit points.
	// +optional
	BossHP int32 `json:"bossHP,omitempty"`

	// questPhases are the quest phases the world has reached (its key
	// room cleared, its boss room cleared): a critical item whose policy
	// names a questGate is recovered only once its phase is here.
	// +optional
	// +listType=set
	// +kubebuilder:validation:MaxItems=2
	QuestPhases []QuestPhase `json:"questPhases,omitempty"`

	// lastError is why the last world checkpoint failed; unset once one
	// succeeds. The WorldCheckpointed condition says so too.
	// +optional
	// +kubebuilder:validation:MaxLength=1024
	LastError string `json:"lastError,omitempty"`
}

// Handover is a pod replacement by handover (spec.podReplacement).
type Handover struct {
	// from is the pod being replaced.
	From string `json:"from"`
	// to is the pod replacing it.
	To string `json:"to"`
	// endpoint is to's endpoint, set once it is Ready; the old pod hands
	// its players over to it.
	// +optional
	Endpoint string `json:"endpoint,omitempty"`
	// started is when the new pod was created.
	Started metav1.Time `json:"started"`
	// hostPort, under exposure HostPort, is the port the handover holds
	// beside status.hostPort: the new pod's until it takes the map over,
	// then the old pod's until that pod is gone.
	// +optional
	HostPort int32 `json:"hostPort,omitempty"`
}

// MapInstanceStatus is what the operator and the map's own pod report.
// The pod owns players, activePlayers, tick, lastCheckpoint, lastHeartbeat
// and waitingFor (config/policy holds it to them); the operator owns the rest.
type MapInstanceStatus struct {
	// phase summarises the conditions in one word.
	// +optional
	Phase MapInstancePhase `json:"phase,omitempty"`

	// podName is the current room-server pod.
	// +optional
	PodName string `json:"podName,omitempty"`

	// endpoint is the WebSocket URL players connect to, as the room's
	// exposure makes it: ws://<pod IP>:7350/ws (Direct),
	// ws://<node address>:<hostPort>/ws (HostPort) or
	// wss://<hostname>/<namespace>/<room>/<map>/ws (Gateway). Empty until
	// the pod is running and the exposure is in place.
	// +optional
	Endpoint string `json:"endpoint,omitempty"`

	// handover is a pod replacement by handover in progress: the pod
	// leaving (from), the pod taking over (to), and, once that one is
	// Ready, its endpoint, where the leaving pod hands its players over
	// when it is told to stop (it reads this in its heartbeat's answer).
	// +optional
	Handover *Handover `json:"handover,omitempty"`

	// podReplacement is how this map's pod is replaced, from its room's
	// spec.podReplacement and exposure: Handover only when the room asks
	// for it and its exposure allows it. The room server reads it when it
	// is told to stop, to know whether to wait for a handover.
	// +optional
	PodReplacement PodReplacement `json:"podReplacement,omitempty"`

	// hostPort is the node port this map was given (exposure HostPort),
	// from the manager's --host-port-range; no two MapInstances hold the
	// same one. Kept while the MapInstance exists, across pod restarts.
	// +optional
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=65535
	HostPort int32 `json:"hostPort,omitempty"`

	// restartCount counts every restart since the MapInstance was created.
	// +optional
	// +kubebuilder:default=0
	RestartCount int32 `json:"restartCount"`

	// recentRestarts are the failure times inside the restart window.
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=128
	RecentRestarts []metav1.Time `json:"recentRestarts,omitempty"`

	// lastFailure is the most recent pod failure.
	// +optional
	LastFailure *Failure `json:"lastFailure,omitempty"`

	// nextRestartAt is when the backoff ends and a new pod is created.
	// +optional
	NextRestartAt *metav1.Time `json:"nextRestartAt,omitempty"`

	// quarantinedUntil is when a crash-looping map is tried again.
	// +optional
	QuarantinedUntil *metav1.Time `json:"quarantinedUntil,omitempty"`

	// players connected, reported by the pod.
	// +optional
	// +kubebuilder:default=0
	Players int32 `json:"players"`

	// activePlayers, reported by the pod, counts the players who played
	// (an input or a command) in the last 5 minutes: an instanced map is
	// idle when it has none, whatever idle connections it keeps. Unset
	// by pods that do not report it; players counts then.
	// +optional
	ActivePlayers *int32 `json:"activePlayers,omitempty"`

	// tick is the simulation tick, reported by the pod.
	// +optional
	Tick int64 `json:"tick,omitempty"`

	// lastCheckpoint is the newest checkpoint, reported by the pod.
	// +optional
	LastCheckpoint *Checkpoint `json:"lastCheckpoint,omitempty"`

	// world, reported by the pod with its heartbeat, is the newest
	// checkpoint of the map's world: what a replacement pod restores.
	// +optional
	World *WorldCheckpoint `json:"world,omitempty"`

	// lastHeartbeat is when the pod last reported, at most every 5s.
	// +optional
	LastHeartbeat *metav1.Time `json:"lastHeartbeat,omitempty"`

	// waitingFor, reported by the pod, is what it waits for before it is
	// ready, when that is its database (unreachable at start: the pod
	// retries and does not exit); unset otherwise. The Ready condition
	// says WaitingForDatabase meanwhile.
	// +optional
	// +kubebuilder:validation:MaxLength=1024
	WaitingFor string `json:"waitingFor,omitempty"`

	// emptySince, on an instanced MapInstance, is when the operator first
	// saw it Ready with no players; unset while a player is reported. The
	// operator deletes the instance at emptySince plus its room's idleTimeout
	// (30m when unset). Never set on non-instanced maps.
	// +optional
	EmptySince *metav1.Time `json:"emptySince,omitempty"`

	// conditions are Ready, PodHealthy, Quarantined and Exposed.
	// +optional
	// +listType=map
	// +listMapKey=type
	Conditions []metav1.Condition `json:"conditions,omitempty"`

	// observedGeneration is the spec generation this status describes.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`
}

// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:shortName=mi,categories=roomkeeper
// +kubebuilder:printcolumn:name="Room",type=string,JSONPath=`.spec.roomName`
// +kubebuilder:printcolumn:name="Map",type=string,JSONPath=`.spec.mapName`
// +kubebuilder:printcolumn:name="Ready",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].status`
// +kubebuilder:printcolumn:name="Players",type=integer,JSONPath=`.status.players`
// +kubebuilder:printcolumn:name="Restarts",type=integer,JSONPath=`.status.restartCount`
// +kubebuilder:printcolumn:name="Phase",type=string,JSONPath=`.status.phase`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
// +kubebuilder:printcolumn:name="Endpoint",type=string,JSONPath=`.status.endpoint`,priority=1

// MapInstance is one authoritative map simulation, run as one room-server pod.
type MapInstance struct {
	metav1.TypeMeta `json:",inline"`

	// metadata is the standard object metadata.
	// +optional
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// spec is the desired map server.
	// +required
	Spec MapInstanceSpec `json:"spec"`

	// status is the observed map server.
	// +optional
	Status MapInstanceStatus `json:"status,omitempty"`
}

// +kubebuilder:object:root=true

// MapInstanceList contains a list of MapInstance.
type MapInstanceList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []MapInstance `json:"items"`
}
