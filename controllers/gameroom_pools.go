package controllers

import (
	"context"
	"fmt"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	gamev1 "github.com/roomkeeper/roomkeeper/api/v1"
	"github.com/roomkeeper/roomkeeper/internal/instanced"
)

// Warm pools (spec.maps[].warm; the rules are internal/instanced's
// pool.go). The GameRoom controller keeps each instanced map's pool at
// its size: it starts what a claim took, within the map's
// parties.maxInstancesPerMap, and deletes what a smaller warm leaves over.
// The pool is counted from the cluster's objects (their LabelPool), so a
// restarted manager finds the pool it left, and a claim (a party's label
// change) wakes the room like any change of its MapInstances. Warm names
// come from a counter (instanced.WarmNames), so a create the cache has
// not seen yet is not made twice.

// syncWarmPools starts and deletes warm instances so that each instanced
// map's pool holds spec.maps[].warm, and returns the room's instances
// with those changes.
func (r *GameRoomReconciler) syncWarmPools(ctx context.Context, room *gamev1.GameRoom, instances []gamev1.MapInstance) ([]gamev1.MapInstance, error) {
	perMap := room.Spec.Parties.MaxInstancesPerMapOrDefault()
	for _, m := range room.Spec.Maps {
		if !m.Instanced {
			continue
		}
		pool := instanced.PoolOf(m.Name, instances)
		for _, mi := range pool.Surplus(int(m.Warm)) {
			claimed, err := r.deleteWarm(ctx, &mi)
			if err != nil {
				return nil, err
			}
			if !claimed {
				instances = withoutInstance(instances, mi.Name)
			}
		}
		for _, name := range instanced.WarmNames(room.Name, m.Name, instances, pool.Refill(int(m.Warm), perMap)) {
			mi := instanced.NewWarm(room, m, name)
			if _, err := r.createMapInstance(ctx, room, mi); err != nil {
				return nil, err
			}
			instances = append(instances, *mi)
		}
	}
	return instances, nil
}

// deleteWarm deletes an unclaimed warm instance, unless a party claimed
// it meanwhile (claimed): the delete carries the resourceVersion the pool
// was counted from, so a claim since (an update) makes it a conflict, and
// the claim's change wakes the room to count the pool again.
func (r *GameRoomReconciler) deleteWarm(ctx context.Context, mi *gamev1.MapInstance) (claimed bool, err error) {
	rv := mi.ResourceVersion
	err = r.Delete(ctx, mi, &client.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &mi.UID, ResourceVersion: &rv}})
	switch {
	case apierrors.IsConflict(err):
		return true, nil
	case client.IgnoreNotFound(err) != nil:
		return false, fmt.Errorf("deleting warm map instance %s: %w", mi.Name, err)
	}
	return false, nil
}

func withoutInstance(instances []gamev1.MapInstance, name string) []gamev1.MapInstance {
	out := instances[:0:0]
	for _, mi := range instances {
		if mi.Name != name {
			out = append(out, mi)
		}
	}
	return out
}

// warmPoolStatus is the rooms' warm pools as its status shows them: one
// entry per instanced map with warm set (or warm instances left), the
// Warm column's text and the WarmPoolsReady condition; a room without
// warm pools has neither.
func warmPoolStatus(room *gamev1.GameRoom, instances []gamev1.MapInstance, out *gamev1.GameRoomStatus, now metav1.Time) {
	out.WarmPools, out.Warm = nil, ""
	var text, refilling, exhausted []string
	for _, m := range room.Spec.Maps {
		if !m.Instanced {
			continue
		}
		pool := instanced.PoolOf(m.Name, instances)
		if m.Warm == 0 && pool.Unclaimed() == 0 {
			continue
		}
		s := gamev1.WarmPoolStatus{Map: m.Name, Warm: m.Warm, Ready: int32(len(pool.Ready)), Starting: int32(len(pool.Starting))}
		out.WarmPools = append(out.WarmPools, s)
		text = append(text, fmt.Sprintf("%s %d/%d", m.Name, s.Ready, s.Warm))
		switch {
		case s.Ready >= s.Warm:
		case s.Ready == 0:
			exhausted = append(exhausted, m.Name)
		default:
			refilling = append(refilling, m.Name)
		}
	}
	if len(out.WarmPools) == 0 {
		meta.RemoveStatusCondition(&out.Conditions, gamev1.ConditionWarmPoolsReady)
		return
	}
	out.Warm = strings.Join(text, ", ")
	status, reason, message := metav1.ConditionTrue, gamev1.ReasonPoolsFull, "Every warm pool holds its Ready instances: "+out.Warm
	switch {
	case len(exhausted) > 0:
		status, reason = metav1.ConditionFalse, gamev1.ReasonPoolExhausted
		message = "No Ready warm instance of " + strings.Join(exhausted, ", ") + ": parties entering start one cold; " + out.Warm
	case len(refilling) > 0:
		status, reason = metav1.ConditionFalse, gamev1.ReasonPoolRefilling
		message = "Warm pools refilling: " + out.Warm
	}
	setCondition(&out.Conditions, gamev1.ConditionWarmPoolsReady, status, reason, message, room.Generation, now)
}
