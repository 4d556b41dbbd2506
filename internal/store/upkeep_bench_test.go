package store

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/roomkeeper/roomkeeper/internal/mapgen"
	"github.com/roomkeeper/roomkeeper/internal/sim"
)

// BenchmarkAMapsUpkeep is what a map with two players asks of Postgres
// besides their actions, per checkpoint interval (5 s), as the 50-room
// soak's maps do (docs/benchmarks.md, "Density"): its players'
// checkpoint, its world's (32 KB, as the soak's), ten event-log batches of three events (one every
// 500 ms) and half a lease renewal (one every 10 s). It reports
// Postgres' CPU per interval (at 100 maps, pg-cpu-us/op / 50,000 is the
// cores the maps' upkeep costs) and the world checkpoint's stored size,
// compressed.
func BenchmarkAMapsUpkeep(b *testing.B) {
	s := newStore(b)
	ctx := context.Background()
	players := benchCharacters(b, s, 2)
	leases := []Lease{{CharacterID: players[0].CharacterID, Epoch: 1}, {CharacterID: players[1].CharacterID, Epoch: 1}}
	world := crowdedWorld(b)
	claim, err := s.ClaimWorld(ctx, "bench-1", "pod")
	if err != nil {
		b.Fatal(err)
	}
	now := time.Now()
	if err := s.EnsureEventLogPartitions(ctx, now, now.Add(time.Hour)); err != nil {
		b.Fatal(err)
	}
	events := make([]LoggedEvent, 3)
	rev, seq := int64(0), int64(0)
	interval := func() {
		rev++
		for i := range players {
			players[i].Revision, players[i].StateHash = rev, ""
			players[i].Payload[0] = byte(rev)
		}
		if _, err := s.SaveStates(ctx, "bench-1", players); err != nil {
			b.Fatal(err)
		}
		world.Step()
		if err := s.SaveWorld(ctx, WorldState{MapInstance: "bench-1", SchemaVersion: 1, SimCoreVersion: "bench",
			Revision: rev, Payload: world.AppendCheckpoint(nil), Epoch: claim.Epoch}); err != nil {
			b.Fatal(err)
		}
		for range 10 {
			for i := range events {
				seq++
				events[i] = LoggedEvent{At: now, MapInstance: "bench-1", Seq: seq, Type: "hit", Entity: 1000 + seq%40, By: 1,
					ByCharacter: players[0].CharacterID, Amount: 7, X: 123.5, Y: 456.25}
			}
			if err := s.AppendEvents(ctx, events); err != nil {
				b.Fatal(err)
			}
		}
		if rev%2 == 0 {
			if err := s.RenewLeases(ctx, "bench-1", leases, time.Hour, time.Now()); err != nil {
				b.Fatal(err)
			}
		}
	}
	for range 20 { // prepared statements' generic plans, full pages
		interval()
	}
	cpu := postgresCPU(b)
	for b.Loop() {
		interval()
	}
	b.ReportMetric(float64((postgresCPU(b)-cpu).Microseconds())/float64(b.N), "pg-cpu-us/op")
	var stored int64
	if err := s.DB().QueryRowContext(ctx, `SELECT pg_column_size(payload) FROM map_state WHERE map_instance = 'bench-1'`).Scan(&stored); err != nil {
		b.Fatal(err)
	}
	b.ReportMetric(float64(stored), "world-stored-B")
}

// crowdedWorld is a 256 x 256 crypt with its NPCs and loot enough for a
// 32 KB checkpoint, as the soak's maps write.
func crowdedWorld(b *testing.B) *sim.World {
	static, err := mapgen.Generate(mapgen.Config{Seed: 7, Width: 256, Height: 256, Biome: "dungeon", Content: "crypt",
		NPCDensity: 1, LootDensity: 0.2})
	if err != nil {
		b.Fatal(err)
	}
	w := sim.NewWorld(static, 30, sim.Defaults())
	for i := 0; len(w.AppendCheckpoint(nil)) < 32_000; i++ {
		w.SpawnLoot([]sim.Loot{{Item: sim.Item{ID: fmt.Sprintf("crypt/drop/%08x-%d", i, i), Kind: "bone"}, X: 128, Y: 128}})
	}
	for range 30 {
		w.Step()
	}
	return w
}
