package main

import (
	"testing"

	"github.com/roomkeeper/roomkeeper/pkg/client"
)

// TestMapsLine: what `roomctl rooms` prints of a room's maps: a shared
// map's seats, a sharded map's shards with each one's players (the
// names a friend joins with --instance), an instanced map's copies.
func TestMapsLine(t *testing.T) {
	r := client.RoomSummary{Maps: []client.MapSummary{
		{Name: "town", Players: 130, Capacity: 100, Shards: 2, MaxShards: 4, Instances: []client.InstanceSummary{
			{Name: "demo-town", Players: 80, Shard: 1}, {Name: "demo-town-s2", Players: 50, Shard: 2}}},
		{Name: "forest", Players: 3, Capacity: 100, Shards: 1, MaxShards: 1, Instances: []client.InstanceSummary{{Name: "demo-forest", Players: 3}}},
		{Name: "crypt", Instanced: true, Players: 2, Capacity: 10, Instances: []client.InstanceSummary{{Name: "demo-crypt-x4k2p", Players: 2}}},
	}}
	want := "town 130/200 in 2 of 4 shards (demo-town 80, demo-town-s2 50), forest 3/100, crypt 2 in 1 instances"
	if got := mapsLine(r); got != want {
		t.Fatalf("mapsLine = %q, want %q", got, want)
	}
}
