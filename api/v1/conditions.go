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

// Labels put on everything the operator creates.
const (
	// LabelRoom names the GameRoom an object belongs to.
	LabelRoom = "game.roomkeeper.dev/room"
	// LabelMap names the map (of the room's spec) an object serves.
	LabelMap = "game.roomkeeper.dev/map"
	// AnnotationInputHash holds the hash of everything a pod was built from;
	// a different hash means the pod is replaced.
	AnnotationInputHash = "game.roomkeeper.dev/input-hash"
	// LabelManagedBy, set to ManagedBy, marks what Roomkeeper made: the
	// operator's objects, and the Leases its map pods make. The
	// operator's cache holds only objects so marked.
	LabelManagedBy = "app.kubernetes.io/managed-by"
	ManagedBy      = "roomkeeper"
)

// The field managers Roomkeeper writes with (managedFields show who owns
// what): the operator, its join API included, owns every object it
// creates and every status field but the map pods' heartbeat, which the
// room servers apply under their own.
const (
	FieldManagerOperator   = "roomkeeper-manager"
	FieldManagerRoomServer = "roomkeeper-roomserver"
)

// Condition types. They are public API: dashboards and scripts read them.
const (
	// ConditionReady is True on a GameRoom when every non-instanced map is
	// Ready, and on a MapInstance when its pod passes its readiness probe.
	ConditionReady = "Ready"
	// ConditionDegraded is True on a GameRoom when a map is quarantined,
	// backing off or has failed.
	ConditionDegraded = "Degraded"
	// ConditionPodHealthy is True on a MapInstance while its pod runs and has
	// not failed.
	ConditionPodHealthy = "PodHealthy"
	// ConditionQuarantined is True on a MapInstance that crashed too often
	// and is held down until status.quarantinedUntil.
	ConditionQuarantined = "Quarantined"
	// ConditionExposed is True on a MapInstance whose exposure is in place:
	// its endpoint is what players outside the pod network use (Direct:
	// the pod network only). False says what is missing.
	ConditionExposed = "Exposed"
	// ConditionWorldCheckpointed is True on a MapInstance whose pod writes
	// the map's world checkpoints (status.world), False while they fail
	// (status.world.lastError says why: the database, mostly). Unset
	// before the first checkpoint, and for maps without a database.
	ConditionWorldCheckpointed = "WorldCheckpointed"
	// ConditionValid is True on a GameContent whose pack the operator
	// checked and found whole: its revision is what maps run. False names
	// the first bad fields (spec.items[3].slots: ...); maps keep the last
	// valid revision.
	ConditionValid = "Valid"
	// ConditionContentValid is True on a GameRoom whose maps' content packs
	// are all valid, False naming the pack and field that is not (the maps
	// run its last valid revision, or, without one, do not start).
	ConditionContentValid = "ContentValid"
	// ConditionWarmPoolsReady is True on a GameRoom whose instanced maps'
	// warm pools all hold their spec.maps[].warm Ready instances, False
	// while one refills or is exhausted (a party entering then starts an
	// instance cold). Unset on a room without warm pools.
	ConditionWarmPoolsReady = "WarmPoolsReady"
)

// Condition reasons. Stable CamelCase words; docs/operations.md explains each.
const (
	// ReasonPoolsFull: every warm pool holds its warm Ready instances.
	ReasonPoolsFull = "PoolsFull"
	// ReasonPoolRefilling: a warm pool has fewer Ready instances than it
	// keeps, and some of it is starting.
	ReasonPoolRefilling = "PoolRefilling"
	// ReasonPoolExhausted: a warm pool has no Ready instance: parties
	// entering its map start instances cold.
	ReasonPoolExhausted = "PoolExhausted"

	// ReasonAllMapsReady: every map of the room is Ready.
	ReasonAllMapsReady = "AllMapsReady"
	// ReasonMapsNotReady: at least one map is not Ready yet.
	ReasonMapsNotReady = "MapsNotReady"
	// ReasonMapsHealthy: no map is failing, backing off or quarantined.
	ReasonMapsHealthy = "MapsHealthy"
	// ReasonMapsFailing: at least one map is failing, backing off or quarantined.
	ReasonMapsFailing = "MapsFailing"

	// ReasonPackValid: the pack, or every pack a room uses, is valid.
	ReasonPackValid = "PackValid"
	// ReasonPackInvalid: the pack (or one a room uses) fails a check the
	// schema cannot make; the message names the field.
	ReasonPackInvalid = "PackInvalid"
	// ReasonPackNotFound: a map names a pack that is neither a GameContent
	// of the room's namespace nor a built-in pack.
	ReasonPackNotFound = "PackNotFound"

	// ReasonWorldCheckpointed: the newest world checkpoint was written.
	ReasonWorldCheckpointed = "WorldCheckpointed"
	// ReasonWorldCheckpointFailing: the last world checkpoint failed; the
	// pod writes the world anew at the next interval.
	ReasonWorldCheckpointFailing = "WorldCheckpointFailing"

	// ReasonPodReady: the map pod is running and passes its readiness probe.
	ReasonPodReady = "PodReady"
	// ReasonPodPending: the pod exists but has not started.
	ReasonPodPending = "PodPending"
	// ReasonPodNotReady: the pod runs but does not pass its readiness probe yet.
	ReasonPodNotReady = "PodNotReady"
	// ReasonWaitingForDatabase: the pod runs and waits for its database,
	// unreachable (status.waitingFor says what failed); it retries, and
	// waiting is not a crash.
	ReasonWaitingForDatabase = "WaitingForDatabase"
	// ReasonPodRunning: the pod's container is running.
	ReasonPodRunning = "PodRunning"
	// ReasonPodMissing: there is no pod (not created yet, or deleted).
	ReasonPodMissing = "PodMissing"
	// ReasonPodFailed: the pod ended (Failed or Succeeded).
	ReasonPodFailed = "PodFailed"
	// ReasonPodReplacing: the pod's inputs changed and it is being replaced.
	ReasonPodReplacing = "PodReplacing"
	// ReasonPodTerminating: the pod is shutting down.
	ReasonPodTerminating = "PodTerminating"
	// ReasonIdleTimeout: an instanced map had no players for its room's
	// idleTimeout and the operator is deleting it.
	ReasonIdleTimeout = "IdleTimeout"
	// ReasonWithinRestartBudget: failures inside the window are within maxRestarts.
	ReasonWithinRestartBudget = "WithinRestartBudget"
	// ReasonCrashLoop: failures inside the window exceeded maxRestarts.
	ReasonCrashLoop = "CrashLoop"

	// ReasonDirect, on Exposed=True: exposure Direct, the pod's own address.
	ReasonDirect = "Direct"
	// ReasonHostPortAssigned, on Exposed=True: the map has a node port.
	ReasonHostPortAssigned = "HostPortAssigned"
	// ReasonRouteAttached, on Exposed=True: the map's Service and HTTPRoute
	// exist and the Gateway they attach to does.
	ReasonRouteAttached = "RouteAttached"
	// ReasonHostPortsExhausted, on Exposed=False: every port of the
	// manager's --host-port-range is held by another MapInstance; the map
	// gets no pod until one is freed.
	ReasonHostPortsExhausted = "HostPortsExhausted"
	// ReasonHostPortShareUsed, on Exposed=False: the map's namespace holds
	// its share of the range (the manager's --host-ports-per-namespace);
	// the map gets no pod until one of the namespace's ports is freed.
	ReasonHostPortShareUsed = "HostPortShareUsed"
	// ReasonNodeAddressUnknown, on Exposed=False: the pod's node reports no
	// ExternalIP or InternalIP to build the endpoint from.
	ReasonNodeAddressUnknown = "NodeAddressUnknown"
	// ReasonGatewayNotFound, on Exposed=False: the Gateway the room names
	// does not exist. The map runs, but players outside the pod network
	// cannot reach it and the join API answers room_not_ready.
	ReasonGatewayNotFound = "GatewayNotFound"
	// ReasonGatewayAPIMissing, on Exposed=False: the cluster does not serve
	// the Gateway API (gateway.networking.k8s.io/v1 Gateway and HTTPRoute):
	// install its CRDs and an implementation.
	ReasonGatewayAPIMissing = "GatewayAPIMissing"
	// ReasonRoutePending, on Exposed=Unknown: the Gateway exists but its
	// implementation has not said yet whether it accepts the HTTPRoute.
	ReasonRoutePending = "RoutePending"
	// ReasonRouteNotAccepted, on Exposed=False: the Gateway's
	// implementation refused the map's HTTPRoute; the message has its
	// reason (a listener that does not allow the namespace, a hostname that
	// does not match).
	ReasonRouteNotAccepted = "RouteNotAccepted"

	// Reasons a person must act on. The operator stops retrying and waits
	// for the spec to change or the conflicting object to go.

	// ReasonNameConflict, on Ready=False: an object the operator must
	// create exists under its name but belongs to someone else. On a
	// GameRoom it is the key Secret, the map pods' ServiceAccount, Role or
	// RoleBinding, or a MapInstance; on a MapInstance, its pod. The message
	// names the object and its owner.
	ReasonNameConflict = "NameConflict"
	// ReasonInvalidPodSpec, on a MapInstance's Ready=False and PodHealthy=False:
	// the API server refused the map's pod as invalid (for instance
	// podTemplate resources whose requests exceed their limits). The message
	// has the API server's answer; the GameRoom's spec must change.
	ReasonInvalidPodSpec = "InvalidPodSpec"
	// ReasonPodForbidden, on a MapInstance's Ready=False and
	// PodHealthy=False: the API server forbade the map's pod (403): its
	// namespace's Pod Security level (a HostPort room under baseline or
	// restricted), a ResourceQuota, an admission policy. The message has
	// the API server's answer; the operator tries again with backoff, so a
	// fix to the namespace is picked up by itself.
	ReasonPodForbidden = "PodForbidden"
	// ReasonRoomNotFound, on a MapInstance's Ready=False and
	// PodHealthy=False: the MapInstance, not made by a GameRoom, names a
	// GameRoom (spec.roomName) that does not exist or has no map
	// spec.mapName (instanced as spec.instanced says). A MapInstance runs
	// what its room says; it gets a pod
	// once the room and the map exist.
	ReasonRoomNotFound = "RoomNotFound"
)
