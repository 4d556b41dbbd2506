package sim

import (
	"bytes"
	"errors"
	"fmt"
	"math/rand/v2"
	"reflect"
	"slices"
	"testing"

	"github.com/roomkeeper/roomkeeper/internal/content"
	"github.com/roomkeeper/roomkeeper/internal/mapgen"
)

// randomWorld is a dungeon of a random seed and density, played for a
// while by a few players who fight, open doors and drop loot, then left:
// a world in a random state, with cleared rooms, hurt and dead enemies,
// respawns pending and loot lying about.
func randomWorld(t *testing.T, r *rand.Rand) *World {
	t.Helper()
	static := testStatic(t, mapgen.Config{Seed: r.Int64N(1 << 20), Width: 256, Height: 256, Biome: "dungeon",
		Content: "crypt", NPCDensity: 0.05 + r.Float64()*0.2})
	tun := Defaults()
	tun.DropPrefix = "test/drop/"
	w := NewWorld(static, 30, tun)
	var players []uint32
	for range 1 + r.IntN(3) {
		players = append(players, w.AddPlayer())
	}
	for range r.IntN(600) {
		p := players[r.IntN(len(players))]
		switch r.IntN(4) {
		case 0: // a blow on a random NPC, wherever it stands
			if t := w.randomNPC(r); t != 0 {
				w.find(p).HP = 255
				w.combat.attacks = append(w.combat.attacks, hit{from: p, to: t})
			}
		case 1:
			if len(w.doors.ids) > 0 {
				_, d := w.doorOf(w.doors.ids[r.IntN(len(w.doors.ids))])
				w.setDoor(w.doors.ids[r.IntN(len(w.doors.ids))], d, r.IntN(2) == 0)
			}
		case 2:
			w.SpawnLoot([]Loot{{Item: Item{ID: fmt.Sprint("dropped-", r.Int()), Kind: "bone"}, X: r.Float32() * 256, Y: r.Float32() * 256}})
		}
		w.QueueInput(p, Input{X: r.Float32()*2 - 1})
		w.Step()
	}
	for _, p := range players {
		w.RemovePlayer(p)
	}
	w.Step()
	return w
}

func (w *World) randomNPC(r *rand.Rand) uint32 {
	if w.npcs.len() == 0 {
		return 0
	}
	return w.npcs.ids[r.IntN(w.npcs.len())]
}

// TestAWorldRoundTripsThroughItsCheckpoint is the property: for random
// worlds, a fresh process of the same map restored from a checkpoint
// writes the same checkpoint, and steps on exactly as the world that
// wrote it: no tick skipped or taken twice, no roll or respawn different.
func TestAWorldRoundTripsThroughItsCheckpoint(t *testing.T) {
	seed := rand.Uint64()
	t.Logf("seed %d", seed)
	r := rand.New(rand.NewPCG(seed, 0))
	for i := range 20 {
		w := randomWorld(t, r)
		saved := w.AppendCheckpoint(nil)
		fresh := NewWorld(w.static, 30, w.tun)
		if err := fresh.Restore(saved); err != nil {
			t.Fatalf("world %d: %v", i, err)
		}
		if again := fresh.AppendCheckpoint(nil); !bytes.Equal(again, saved) {
			t.Fatalf("world %d: the restored world's checkpoint differs (%d bytes, was %d)", i, len(again), len(saved))
		}
		if !reflect.DeepEqual(fresh.Summary(), w.Summary()) {
			t.Fatalf("world %d: summary %+v, was %+v", i, fresh.Summary(), w.Summary())
		}
		for range 300 {
			w.Step()
			fresh.Step()
		}
		if !bytes.Equal(fresh.AppendCheckpoint(nil), w.AppendCheckpoint(nil)) {
			t.Fatalf("world %d: 300 ticks after the restore, the worlds differ", i)
		}
	}
}

func TestARestoredCryptKeepsItsProgress(t *testing.T) {
	w := crypt(t)
	room := -1
	for i := range w.static.Rooms {
		if w.rooms[i].guards > 0 && len(doorsOf(w, i)) > 0 && i != w.static.RoomWith(mapgen.RoleBoss) {
			room = i
			break
		}
	}
	killGuards(t, w, room)
	key, cleared := w.static.RoomWith(mapgen.RoleKey), 1
	if w.rooms[key].guards == 0 {
		t.Fatal("the crypt's key room is not guarded: its quest phase cannot be reached")
	}
	if key != room {
		killGuards(t, w, key)
		cleared++
	}
	boss := w.bossEntity(t)
	boss.HP /= 2 // below the lich's first threshold
	w.enterPhase(boss, w.npc(boss))
	w.RemovePlayer(w.players.ids[0])

	fresh := NewWorld(w.static, 30, w.tun)
	if err := fresh.Restore(w.AppendCheckpoint(nil)); err != nil {
		t.Fatal(err)
	}
	if !fresh.RoomCleared(room) {
		t.Error("the cleared room is guarded again")
	}
	for _, id := range doorsOf(fresh, room) {
		if _, d := fresh.doorOf(id); !d.open {
			t.Errorf("door %d of the cleared room is closed again", id)
		}
	}
	if got := fresh.Summary(); got.BossPhase != 2 || got.BossHP != int(boss.HP) || got.RoomsCleared != cleared || got.Tick != w.tick {
		t.Errorf("summary %+v, want the boss in phase 2 at %d hp, %d rooms cleared, tick %d", got, boss.HP, cleared, w.tick)
	}
	// The key room's quest gate stays passed: a critical item waiting for
	// it is recovered on the new pod as on the old one.
	if got := fresh.QuestPhases(); !slices.Equal(got, []string{content.PhaseKeyRoomCleared}) {
		t.Errorf("quest phases after the restore %v, want [%s]", got, content.PhaseKeyRoomCleared)
	}
}

func (w *World) bossEntity(t *testing.T) *Entity {
	t.Helper()
	for i := range w.entities {
		if e := &w.entities[i]; e.Kind == KindNPC && w.npc(e).enemy == len(w.combat.types)-1 {
			return e
		}
	}
	t.Fatal("no boss")
	return nil
}

// TestABadCheckpointIsRefusedAndChangesNothing: every cut of a checkpoint,
// one of another map, and one into a world with players are refused, and
// the world is left as it was.
func TestABadCheckpointIsRefusedAndChangesNothing(t *testing.T) {
	w := randomWorld(t, rand.New(rand.NewPCG(1, 2)))
	saved := w.AppendCheckpoint(nil)
	fresh := NewWorld(w.static, 30, w.tun)
	before := fresh.AppendCheckpoint(nil)
	for n := range len(saved) {
		if err := fresh.Restore(saved[:n]); !errors.Is(err, ErrCorruptWorld) && !errors.Is(err, ErrWorldMismatch) {
			t.Fatalf("a checkpoint cut at %d of %d bytes: %v, want refused", n, len(saved), err)
		}
	}
	if err := fresh.Restore(append(saved[:len(saved):len(saved)], 0)); !errors.Is(err, ErrCorruptWorld) {
		t.Errorf("a byte too many: %v, want ErrCorruptWorld", err)
	}
	if !bytes.Equal(fresh.AppendCheckpoint(nil), before) {
		t.Error("refused checkpoints changed the world")
	}
	other := NewWorld(testStatic(t, mapgen.Config{Seed: 8, Width: 256, Height: 256, Biome: "dungeon", Content: "crypt"}), 30, w.tun)
	if err := other.Restore(saved); !errors.Is(err, ErrWorldMismatch) {
		t.Errorf("another map's checkpoint: %v, want ErrWorldMismatch", err)
	}
	fresh.AddPlayer()
	if err := fresh.Restore(saved); err == nil {
		t.Error("a checkpoint restored into a world with a player")
	}
}

func BenchmarkWorldCheckpoint(b *testing.B) {
	// The sample crypt's 64x64 cells, crowded to about 500 entities.
	static, err := mapgen.Generate(mapgen.Config{Seed: 7, Width: 256, Height: 256, Biome: "dungeon", Content: "crypt",
		NPCDensity: 1, LootDensity: 0.2})
	if err != nil {
		b.Fatal(err)
	}
	w := NewWorld(static, 30, Defaults())
	for i := 0; w.Len() < 500; i++ {
		w.SpawnLoot([]Loot{{Item: Item{ID: fmt.Sprintf("crypt/drop/%08x-%d", i, i), Kind: "bone"}, X: 128, Y: 128}})
	}
	buf := w.AppendCheckpoint(nil)
	b.ReportAllocs()
	for b.Loop() {
		buf = w.AppendCheckpoint(buf[:0])
	}
	b.ReportMetric(float64(len(buf)), "bytes")
	b.ReportMetric(float64(w.Len()), "entities")
}

// TestASummaryAllocatesNoQuestPhases: the summary a checkpoint takes on the
// tick goroutine shares its quest phases, reached or not.
func TestASummaryAllocatesNoQuestPhases(t *testing.T) {
	w := crypt(t)
	killGuards(t, w, w.static.RoomWith(mapgen.RoleKey))
	if got := w.QuestPhases(); !slices.Equal(got, []string{content.PhaseKeyRoomCleared}) {
		t.Fatalf("quest phases %v", got)
	}
	if n := testing.AllocsPerRun(100, func() { _ = w.QuestPhases() }); n != 0 {
		t.Errorf("QuestPhases allocates %.0f times", n)
	}
}
