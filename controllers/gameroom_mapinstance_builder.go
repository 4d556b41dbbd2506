package controllers

import (
	gamev1 "github.com/roomkeeper/roomkeeper/api/v1"
	"github.com/roomkeeper/roomkeeper/internal/shards"
)

// keySecretName is the Secret holding a room's token keys.
func keySecretName(room string) string {
	return gamev1.KeySecretName(room)
}

// buildShard returns shard n of one shared map of a room (n is 1 for a
// map without shards). The join API builds instanced maps' MapInstances
// on the same gamev1.NewMapInstance.
func buildShard(room *gamev1.GameRoom, m gamev1.GameMap, n int32) *gamev1.MapInstance {
	mi := shards.New(room, m, n)
	labels := mapLabels(room.Name, m.Name, mi.Name)
	if shard, ok := mi.Labels[gamev1.LabelShard]; ok {
		labels[gamev1.LabelShard] = shard
	}
	mi.Labels = labels
	return mi
}
