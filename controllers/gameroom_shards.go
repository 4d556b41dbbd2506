package controllers

import (
	"context"
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"

	gamev1 "github.com/roomkeeper/roomkeeper/api/v1"
	"github.com/roomkeeper/roomkeeper/internal/instanced"
	"github.com/roomkeeper/roomkeeper/internal/shards"
)

// Shards of shared maps (spec.maps[].shards; the rules are
// internal/shards'). The GameRoom controller keeps each shared map's
// shards.min, adds one when the map is nearly full (up to shards.max),
// and deletes a surplus one empty for the room's idleTimeout. Shard
// names are a function of their number, the lowest free one, so a create
// the cache has not seen yet is not made twice; a MapInstance change
// (a heartbeat's player count) wakes the room to count again.

// syncShards creates the shards each shared map lacks, and returns the
// room's instances with them.
func (r *GameRoomReconciler) syncShards(ctx context.Context, room *gamev1.GameRoom, instances []gamev1.MapInstance) ([]gamev1.MapInstance, error) {
	seats := room.Spec.Seats(false)
	for _, m := range room.Spec.Maps {
		if m.Instanced {
			continue
		}
		lo, hi := m.ShardBounds()
		current := shards.Of(m.Name, instances)
		for _, n := range shards.Add(current, lo, hi, seats) {
			mi := buildShard(room, m, n)
			found, err := r.createMapInstance(ctx, room, mi)
			if err != nil {
				return nil, err
			}
			if found != nil {
				mi = found
			} else if n > lo {
				r.Recorder.Eventf(room, mi, corev1.EventTypeNormal, EventShardAdded, "AddShard",
					"Added shard %s of map %s: %d of its %d seats free (max %d shards)",
					mi.Name, m.Name, shards.FreeSeats(current, seats), seats*int32(len(current)), hi)
			}
			instances = append(instances, *mi)
		}
	}
	return instances, nil
}

// reapSurplusShards deletes the shards above shards.min that have had no
// players for the room's idleTimeout, as shards.Remove picks them, the
// way an idle party instance goes (deleteIdleInstance: marked, then
// deleted under the resourceVersion the decision was made on). It
// returns the instances left and the time until the next would go.
func (r *GameRoomReconciler) reapSurplusShards(ctx context.Context, room *gamev1.GameRoom, instances []gamev1.MapInstance,
	now time.Time) ([]gamev1.MapInstance, time.Duration, error) {
	timeout := instanced.IdleTimeout(room)
	seats := room.Spec.Seats(false)
	var idleIn time.Duration
	for _, m := range room.Spec.Maps {
		if m.Instanced {
			continue
		}
		lo, _ := m.ShardBounds()
		remove, next := shards.Remove(shards.Of(m.Name, instances), lo, seats, timeout, now)
		idleIn = soonest(idleIn, next)
		for i := range remove {
			if err := r.deleteIdleInstance(ctx, room, &remove[i], timeout, now); err != nil {
				return nil, 0, err
			}
			instances = withoutInstance(instances, remove[i].Name)
		}
	}
	return instances, idleIn, nil
}

// shardStatus is the room's sharded maps as its status shows them: one
// entry per shared map that may have more than one shard or has, and the
// Shards column's text.
func shardStatus(room *gamev1.GameRoom, instances []gamev1.MapInstance, out *gamev1.GameRoomStatus) {
	out.ShardedMaps, out.Shards = nil, ""
	seats := room.Spec.Seats(false)
	var text []string
	for _, m := range room.Spec.Maps {
		lo, hi := m.ShardBounds()
		current := shards.Of(m.Name, instances)
		if m.Instanced || (hi <= 1 && len(current) <= 1) {
			continue
		}
		s := gamev1.MapShardsStatus{Map: m.Name, Shards: int32(len(current)), Min: lo, Max: hi, Seats: seats * int32(len(current))}
		for i := range current {
			s.Players += current[i].Status.Players
			if meta.IsStatusConditionTrue(current[i].Status.Conditions, gamev1.ConditionReady) {
				s.Ready++
			}
		}
		out.ShardedMaps = append(out.ShardedMaps, s)
		text = append(text, fmt.Sprintf("%s %d/%d", m.Name, s.Shards, s.Max))
	}
	out.Shards = strings.Join(text, ", ")
}

// shardNumber is the Shard of a directory entry: mi's number among its
// shared map's shards, 0 for an instanced map's.
func shardNumber(mi *gamev1.MapInstance) int32 {
	if mi.Spec.Instanced {
		return 0
	}
	return shards.Number(mi)
}
