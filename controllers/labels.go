package controllers

import (
	gamev1 "github.com/roomkeeper/roomkeeper/api/v1"
)

// Values of the app.kubernetes.io labels on everything the operator creates.
const (
	labelName      = "app.kubernetes.io/name"
	labelInstance  = "app.kubernetes.io/instance"
	labelComponent = "app.kubernetes.io/component"
	labelManagedBy = gamev1.LabelManagedBy
	labelPartOf    = "app.kubernetes.io/part-of"

	appName   = "roomserver"
	managedBy = gamev1.ManagedBy
	partOf    = "roomkeeper"
)

// ManagedSelector selects the objects the operator created; the manager's
// cache only holds Pods and Secrets that match it.
var ManagedSelector = map[string]string{labelManagedBy: managedBy}

// sharedLabels are the labels of what the operator creates for every room
// of a namespace (the map pods' RBAC).
func sharedLabels() map[string]string {
	return map[string]string{labelManagedBy: managedBy, labelPartOf: partOf}
}

// roomLabels are the labels of everything that belongs to one room.
func roomLabels(room string) map[string]string {
	return map[string]string{
		gamev1.LabelRoom: room,
		labelManagedBy:   managedBy,
		labelPartOf:      partOf,
	}
}

// mapLabels are the labels of a MapInstance and its pod.
func mapLabels(room, mapName, instance string) map[string]string {
	labels := roomLabels(room)
	labels[gamev1.LabelMap] = mapName
	labels[labelName] = appName
	labels[labelInstance] = instance
	labels[labelComponent] = "map"
	return labels
}
