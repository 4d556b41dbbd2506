// Package controllers holds the operator's two reconcilers. A file named
// gameroom_* belongs to the GameRoom controller (a room's key Secret, its
// maps' RBAC and MapInstances, its status, idle rooms), one named
// mapinstance_* to the MapInstance controller (a map's pod, restarts and
// quarantine, exposure, handover); the rest serves both: blocked.go
// (problems a person must fix), conditions.go, events.go (status writes
// and events), memory.go (all the reconcilers keep in memory, and why
// losing it is safe), idle.go (when a map or room counts as empty), labels.go,
// metrics.go and setup.go (wiring into the manager).
package controllers
