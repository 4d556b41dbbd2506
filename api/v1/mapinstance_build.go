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
	"strconv"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// The operator creates the MapInstances of a room's non-instanced maps and
// the join API those of instanced maps, one per party. Both build them here,
// so the two kinds carry the same spec for the same room.

// LabelParty is on a MapInstance of an instanced map: a hash of the party
// that plays it (the join API's docs say how parties are told apart).
const LabelParty = "game.roomkeeper.dev/party"

// LabelPool is on a MapInstance of an instanced map's warm pool, with the
// value PoolWarm, until a party claims it (which takes the label off and
// puts LabelParty and AnnotationClaimedAt on).
const LabelPool = "game.roomkeeper.dev/pool"

// PoolWarm is LabelPool's value on an unclaimed warm instance.
const PoolWarm = "warm"

// LabelShard is on a shard of a shared map other than its first
// (spec.maps[].shards): the shard's number, 2 and up. The first shard,
// <room>-<map>, has none: it is the map's one MapInstance of rooms
// without shards.
const LabelShard = "game.roomkeeper.dev/shard"

// AnnotationClaimedAt is when a party claimed a warm instance, RFC 3339.
const AnnotationClaimedAt = "game.roomkeeper.dev/claimed-at"

// MapInstanceName is the name of a non-instanced map's MapInstance, and so
// of its pod: <room>-<map>. The CRD bounds (36 and 20 characters) keep it a
// valid DNS label.
func MapInstanceName(room, mapName string) string {
	return room + "-" + mapName
}

// ShardName is the name of shard n of a shared map: MapInstanceName for
// the first, <room>-<map>-s<n> for the others (n is at most 20, so the
// name stays a DNS label).
func ShardName(room, mapName string, n int32) string {
	if n <= 1 {
		return MapInstanceName(room, mapName)
	}
	return MapInstanceName(room, mapName) + "-s" + strconv.Itoa(int(n))
}

// KeySecretName is the Secret holding a room's token keys.
func KeySecretName(room string) string {
	return room + "-token-keys"
}

// NewMapInstance returns the MapInstance called name that runs map m of
// room: a reference to the room and map, the room and map labels, and the
// room as controller owner, so it is deleted with the room. Callers add
// their own labels.
func NewMapInstance(room *GameRoom, m GameMap, name string) *MapInstance {
	return &MapInstance{
		ObjectMeta: metav1.ObjectMeta{
			Name:            name,
			Namespace:       room.Namespace,
			Labels:          map[string]string{LabelRoom: room.Name, LabelMap: m.Name},
			OwnerReferences: []metav1.OwnerReference{*metav1.NewControllerRef(room, GroupVersion.WithKind("GameRoom"))},
		},
		Spec: MapInstanceSpec{RoomName: room.Name, MapName: m.Name, Instanced: m.Instanced},
	}
}

// Map returns the room's map called name.
func (s *GameRoomSpec) Map(name string) (GameMap, bool) {
	for _, m := range s.Maps {
		if m.Name == name {
			return m, true
		}
	}
	return GameMap{}, false
}

// ShardBounds is how many shards map m may have, min and max: its
// shards, or 1 and 1 (an instanced map has none).
func (m GameMap) ShardBounds() (lo, hi int32) {
	if m.Instanced || m.Shards == nil {
		return 1, 1
	}
	lo, hi = max(m.Shards.Min, 1), max(m.Shards.Max, 1)
	return lo, max(lo, hi)
}

// DefaultMaxPlayersPerMap is maxPlayersPerMap when unset (the CRD defaults
// it to the same; a spec built by hand may leave it 0).
const DefaultMaxPlayersPerMap = 100

// Seats is how many players one MapInstance of the room admits: the room's
// maxPlayersPerMap, and for an instanced map's party instance no more than
// parties.maxSize, the party's size limit.
func (s *GameRoomSpec) Seats(instanced bool) int32 {
	n := s.MaxPlayersPerMap
	if n <= 0 {
		n = DefaultMaxPlayersPerMap
	}
	if instanced {
		n = min(n, int32(s.Parties.MaxSizeOrDefault()))
	}
	return n
}
