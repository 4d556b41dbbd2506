package controllers

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	gamev1 "github.com/roomkeeper/roomkeeper/api/v1"
)

// mapInstanceName is the name of a non-instanced map's MapInstance, and so
// of its pod: <room>-<map>. The CRD bounds keep it a valid DNS label.
func mapInstanceName(room, mapName string) string {
	return room + "-" + mapName
}

// keySecretName is the Secret holding a room's token keys.
func keySecretName(room string) string {
	return room + "-token-keys"
}

// buildMapInstance returns the MapInstance that serves one map of a room.
func buildMapInstance(room *gamev1.GameRoom, m gamev1.GameMap) *gamev1.MapInstance {
	name := mapInstanceName(room.Name, m.Name)
	return &gamev1.MapInstance{
		ObjectMeta: metav1.ObjectMeta{
			Name:            name,
			Namespace:       room.Namespace,
			Labels:          mapLabels(room.Name, m.Name, name),
			OwnerReferences: []metav1.OwnerReference{*metav1.NewControllerRef(room, gamev1.GroupVersion.WithKind("GameRoom"))},
		},
		Spec: gamev1.MapInstanceSpec{
			RoomName:      room.Name,
			MapName:       m.Name,
			Instanced:     m.Instanced,
			Config:        *m.Config.DeepCopy(),
			Image:         room.Spec.Image,
			KeySecretName: keySecretName(room.Name),
			RoomSettings:  *room.Spec.RoomSettings.DeepCopy(),
		},
	}
}
