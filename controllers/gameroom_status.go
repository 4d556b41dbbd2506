package controllers

import (
	"fmt"
	"sort"
	"strings"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	gamev1 "github.com/roomkeeper/roomkeeper/api/v1"
	"github.com/roomkeeper/roomkeeper/internal/instanced"
)

// gameRoomStatus aggregates a room's MapInstances into its status: the map
// directory, counts, Ready and Degraded conditions and the phase.
func gameRoomStatus(room *gamev1.GameRoom, instances []gamev1.MapInstance, now metav1.Time) gamev1.GameRoomStatus {
	out := *room.Status.DeepCopy()
	out.KeySecretName = keySecretName(room.Name)
	out.Maps = mapDirectory(instances)
	out.TotalMaps = int32(len(instances))
	out.ReadyMaps, out.Players, out.ActivePlayers = 0, 0, 0
	for i := range instances {
		mi := &instances[i]
		if meta.IsStatusConditionTrue(mi.Status.Conditions, gamev1.ConditionReady) {
			out.ReadyMaps++
		}
		out.Players += mi.Status.Players
		out.ActivePlayers += instanced.Playing(mi)
	}
	out.MapsReady = fmt.Sprintf("%d/%d", out.ReadyMaps, out.TotalMaps)

	notReady := notReadyMaps(room, instances)
	readyMessage := "All maps are Ready"
	if len(notReady) > 0 {
		readyMessage = "Maps not Ready: " + strings.Join(notReady, ", ")
	}
	setCondition(&out.Conditions, gamev1.ConditionReady, boolStatus(len(notReady) == 0),
		pick(len(notReady) == 0, gamev1.ReasonAllMapsReady, gamev1.ReasonMapsNotReady), readyMessage, room.Generation, now)

	failing := failingMaps(instances)
	degradedMessage := "No map is failing"
	if len(failing) > 0 {
		degradedMessage = "Maps failing: " + strings.Join(failing, ", ")
	}
	setCondition(&out.Conditions, gamev1.ConditionDegraded, boolStatus(len(failing) > 0),
		pick(len(failing) > 0, gamev1.ReasonMapsFailing, gamev1.ReasonMapsHealthy), degradedMessage, room.Generation, now)

	warmPoolStatus(room, instances, &out, now)
	shardStatus(room, instances, &out)
	out.Phase = roomPhase(room, out)
	out.EmptySince = instanced.EmptySince(out.EmptySince, out.ActivePlayers, len(notReady) == 0, now)
	out.ObservedGeneration = room.Generation
	return out
}

func mapDirectory(instances []gamev1.MapInstance) []gamev1.MapDirectoryEntry {
	entries := make([]gamev1.MapDirectoryEntry, 0, len(instances))
	for _, mi := range instances {
		entries = append(entries, gamev1.MapDirectoryEntry{
			Name:     mi.Spec.MapName,
			Instance: mi.Name,
			Phase:    mi.Status.Phase,
			Endpoint: mi.Status.Endpoint,
			Players:  mi.Status.Players,
			Shard:    shardNumber(&mi),
		})
	}
	sort.Slice(entries, func(i, j int) bool { return entries[i].Instance < entries[j].Instance })
	return entries
}

// notReadyMaps lists the non-instanced maps of the spec whose MapInstance is
// missing or not Ready. Instanced maps come and go with parties and do not
// decide whether the room is Ready.
func notReadyMaps(room *gamev1.GameRoom, instances []gamev1.MapInstance) []string {
	ready := map[string]bool{}
	for _, mi := range instances {
		if !mi.Spec.Instanced && meta.IsStatusConditionTrue(mi.Status.Conditions, gamev1.ConditionReady) {
			ready[mi.Spec.MapName] = true
		}
	}
	var names []string
	for _, m := range room.Spec.Maps {
		if !m.Instanced && !ready[m.Name] {
			names = append(names, m.Name)
		}
	}
	return names
}

// failingMaps lists the MapInstances that crashed, back off or are
// quarantined, and those whose pod cannot be made until a person acts
// (a name conflict, an invalid pod).
func failingMaps(instances []gamev1.MapInstance) []string {
	var names []string
	for i := range instances {
		mi := &instances[i]
		switch {
		case mi.Status.Phase == gamev1.MapBackoff, mi.Status.Phase == gamev1.MapQuarantined, needsAPerson(mi):
			names = append(names, mi.Name)
		}
	}
	sort.Strings(names)
	return names
}

func roomPhase(room *gamev1.GameRoom, status gamev1.GameRoomStatus) gamev1.GameRoomPhase {
	switch {
	case room.DeletionTimestamp != nil:
		return gamev1.GameRoomTerminating
	case meta.IsStatusConditionTrue(status.Conditions, gamev1.ConditionDegraded):
		return gamev1.GameRoomDegraded
	case meta.IsStatusConditionTrue(status.Conditions, gamev1.ConditionReady):
		return gamev1.GameRoomRunning
	case status.TotalMaps > 0:
		return gamev1.GameRoomStarting
	default:
		return gamev1.GameRoomPending
	}
}

func pick(cond bool, ifTrue, ifFalse string) string {
	if cond {
		return ifTrue
	}
	return ifFalse
}
