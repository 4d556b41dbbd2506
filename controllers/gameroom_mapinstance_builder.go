package controllers

import (
	gamev1 "github.com/roomkeeper/roomkeeper/api/v1"
)

// mapInstanceName is the name of a non-instanced map's MapInstance, and so
// of its pod: <room>-<map>. The CRD bounds keep it a valid DNS label.
func mapInstanceName(room, mapName string) string {
	return gamev1.MapInstanceName(room, mapName)
}

// keySecretName is the Secret holding a room's token keys.
func keySecretName(room string) string {
	return gamev1.KeySecretName(room)
}

// buildMapInstance returns the MapInstance that serves one map of a room.
// The join API builds instanced maps' MapInstances with the same
// gamev1.NewMapInstance.
func buildMapInstance(room *gamev1.GameRoom, m gamev1.GameMap) *gamev1.MapInstance {
	mi := gamev1.NewMapInstance(room, m, mapInstanceName(room.Name, m.Name))
	mi.Labels = mapLabels(room.Name, m.Name, mi.Name)
	return mi
}
