package sim

import (
	"context"
	"errors"
	"math"
	"reflect"
	"testing"
	"time"

	"github.com/roomkeeper/roomkeeper/internal/mapgen"
)

func testStatic(t testing.TB, cfg mapgen.Config) *mapgen.World {
	t.Helper()
	w, err := mapgen.Generate(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return w
}

func meadow(t testing.TB) *mapgen.World {
	return testStatic(t, mapgen.Config{Seed: 42, Width: 512, Height: 512, NPCDensity: 0.05})
}

func TestNPCsSpawnByDensity(t *testing.T) {
	static := meadow(t)
	w := NewWorld(static, 30, Defaults())
	if w.Len() != len(static.NPCSpawns) || len(static.NPCSpawns) == 0 {
		t.Fatalf("entities = %d, want one NPC per spawn (%d)", w.Len(), len(static.NPCSpawns))
	}
	for _, e := range w.entities {
		if e.Kind != KindNPC || static.Blocked(float64(e.X), float64(e.Y)) {
			t.Fatalf("NPC %d at (%v,%v) is not on walkable ground", e.ID, e.X, e.Y)
		}
	}
}

func TestMovementAppliesOneInputPerTickAtServerSpeed(t *testing.T) {
	static := testStatic(t, mapgen.Config{Seed: 1, Width: 256, Height: 256})
	w := NewWorld(static, 30, Defaults())
	id := w.AddPlayer()
	start := *w.find(id)
	for seq := uint32(1); seq <= 3; seq++ {
		if !w.QueueInput(id, Input{Seq: seq, X: 1}) {
			t.Fatalf("input %d refused", seq)
		}
	}
	w.Step()
	p, state := w.findPlayer(id)
	if state.lastSeq != 1 {
		t.Errorf("after one tick lastSeq = %d, want 1: one input per tick, in order", state.lastSeq)
	}
	want := start.X + Defaults().PlayerSpeed/30
	if math.Abs(float64(p.X-want)) > 1e-4 || p.Y != start.Y {
		t.Errorf("moved to (%v,%v), want (%v,%v)", p.X, p.Y, want, start.Y)
	}
	w.Step()
	w.Step()
	w.Step() // no input left: the player stands still
	if p, state = w.findPlayer(id); state.lastSeq != 3 || math.Abs(float64(p.X-(start.X+3*Defaults().PlayerSpeed/30))) > 1e-3 {
		t.Errorf("after the backlog: lastSeq %d x %v", state.lastSeq, p.X)
	}
}

func TestSpeedHacksAreRefused(t *testing.T) {
	w := NewWorld(meadow(t), 30, Defaults())
	id := w.AddPlayer()
	for _, in := range []Input{{Seq: 1, X: 5}, {Seq: 2, X: 0.9, Y: 0.9}, {Seq: 3, X: float32(math.NaN())}, {Seq: 4, X: float32(math.Inf(1))}} {
		if w.QueueInput(id, in) {
			t.Errorf("input %+v accepted", in)
		}
	}
	if w.RejectedInputs != 4 {
		t.Errorf("RejectedInputs = %d, want 4", w.RejectedInputs)
	}
}

func TestBacklogIsBounded(t *testing.T) {
	w := NewWorld(meadow(t), 30, Defaults())
	id := w.AddPlayer()
	for seq := uint32(1); seq <= uint32(Defaults().InputBacklog)+3; seq++ {
		w.QueueInput(id, Input{Seq: seq, X: 1})
	}
	if w.DroppedInputs != 3 {
		t.Errorf("DroppedInputs = %d, want 3", w.DroppedInputs)
	}
}

func TestCollidersBlockMovement(t *testing.T) {
	static := testStatic(t, mapgen.Config{Seed: 7, Width: 256, Height: 256, Biome: "dungeon"})
	// Walk from the spawn in one direction for a long time: the player must
	// stop at walls and never stand inside one.
	for _, dir := range [][2]float32{{1, 0}, {-1, 0}, {0, 1}, {0, -1}} {
		x, y := float32(static.PlayerSpawn.X), float32(static.PlayerSpawn.Y)
		for range 2000 {
			x, y = Move(static, x, y, dir[0], dir[1], 1.6)
			if static.Blocked(float64(x), float64(y)) {
				t.Fatalf("walked into a collider at (%v,%v)", x, y)
			}
		}
		if x < 0 || y < 0 || x >= 256 || y >= 256 {
			t.Fatalf("walked off the map to (%v,%v)", x, y)
		}
	}
}

func TestNPCsChaseNearbyPlayers(t *testing.T) {
	static := testStatic(t, mapgen.Config{Seed: 3, Width: 256, Height: 256, NPCDensity: 0.02})
	w := NewWorld(static, 30, Defaults())
	id := w.AddPlayer()
	p := w.find(id)
	// Put one NPC next to the player; its next decision must target them.
	npc := &w.entities[0]
	npc.X, npc.Y = p.X+30, p.Y
	for range int(Defaults().RetargetEvery) + 1 {
		w.Step()
	}
	npc = w.find(w.entities[0].ID)
	if target := w.npc(npc).target; target != id {
		t.Fatalf("NPC target = %d, want the player %d", target, id)
	}
	if d := npc.X - w.find(id).X; d >= 30 {
		t.Errorf("NPC did not close in: distance %v", d)
	}
}

func TestJoinAndLeaveEvents(t *testing.T) {
	w := NewWorld(meadow(t), 30, Defaults())
	id := w.AddPlayer()
	w.RemovePlayer(id)
	f := w.Frame(64)
	if len(f.Events) != 2 || f.Events[0].Type != EventJoin || f.Events[1].Type != EventLeave || f.Events[1].Entity != id {
		t.Fatalf("events = %+v", f.Events)
	}
	if w.Players() != 0 {
		t.Errorf("players = %d after leaving", w.Players())
	}
	if len(w.Frame(64).Events) != 0 {
		t.Error("events were not cleared by the frame that carried them")
	}
}

func TestWorldIsDeterministic(t *testing.T) {
	run := func() []View {
		w := NewWorld(meadow(t), 30, Defaults())
		a, b := w.AddPlayer(), w.AddPlayer()
		for i := range 300 {
			w.QueueInput(a, Input{Seq: uint32(i + 1), X: 1})
			w.QueueInput(b, Input{Seq: uint32(i + 1), Y: -1})
			w.Step()
		}
		return w.Frame(64).Entities
	}
	first, second := run(), run()
	for i := range first {
		if !reflect.DeepEqual(first[i], second[i]) {
			t.Fatalf("entity %d differs between identical runs: %+v vs %+v", i, first[i], second[i])
		}
	}
}

func TestFrameLookupAndOrder(t *testing.T) {
	w := NewWorld(meadow(t), 30, Defaults())
	id := w.AddPlayer()
	f := w.Frame(64)
	for i := 1; i < len(f.Entities); i++ {
		if f.Entities[i-1].ID >= f.Entities[i].ID {
			t.Fatal("frame entities not sorted by ID")
		}
	}
	if v, ok := f.Lookup(id); !ok || v.Kind != KindPlayer {
		t.Errorf("Lookup(%d) = %+v %v", id, v, ok)
	}
	if _, ok := f.Lookup(id + 1000); ok {
		t.Error("Lookup found a missing id")
	}
}

func TestLoopPublishesFramesAtSnapshotRate(t *testing.T) {
	frames := make(chan *Frame, 64)
	loop := NewLoop(NewWorld(meadow(t), 60, Defaults()), LoopConfig{TickRate: 60, SnapshotRate: 20, CellSize: 64},
		Hooks{OnFrame: func(f *Frame) {
			select {
			case frames <- f:
			default:
			}
		}})
	go loop.Run()
	defer loop.Stop()
	var ticks []uint64
	for len(ticks) < 4 {
		select {
		case f := <-frames:
			ticks = append(ticks, f.Tick)
		case <-time.After(5 * time.Second):
			t.Fatal("no frames")
		}
	}
	for i := 1; i < len(ticks); i++ {
		if ticks[i]-ticks[i-1] != 3 {
			t.Errorf("frames at ticks %v, want every 3rd tick (60 Hz / 20 Hz)", ticks)
		}
	}
}

func TestLoopDoAndInputs(t *testing.T) {
	loop := NewLoop(NewWorld(meadow(t), 30, Defaults()), LoopConfig{TickRate: 30, SnapshotRate: 10, CellSize: 64, InputQueue: 2}, Hooks{})
	// Before Run nobody drains the queue: the third input is dropped, not blocked on.
	if !loop.Input(1, Input{Seq: 1}) || !loop.Input(1, Input{Seq: 2}) || loop.Input(1, Input{Seq: 3}) {
		t.Fatal("a full input queue must drop without blocking")
	}
	if loop.Stats().DroppedInputs != 1 {
		t.Errorf("dropped = %d, want 1", loop.Stats().DroppedInputs)
	}
	go loop.Run()
	var id uint32
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := loop.Do(ctx, func(w *World) { id = w.AddPlayer() }); err != nil || id == 0 {
		t.Fatalf("Do: %v (id %d)", err, id)
	}
	loop.Stop()
	loop.Stop() // idempotent
	if err := loop.Do(ctx, func(*World) {}); !errors.Is(err, ErrStopped) {
		t.Errorf("Do after Stop = %v, want ErrStopped", err)
	}
}

func TestLootPickupAndDrop(t *testing.T) {
	w := NewWorld(meadow(t), 30, Defaults())
	p := w.JoinPlayer(PlayerSpec{Tag: "c1"})
	q := w.JoinPlayer(PlayerSpec{Tag: "c2"})
	me := w.find(p)
	ids := w.SpawnLoot([]Loot{{Item: Item{ID: "sword-1", Kind: "sword"}, X: me.X + 5, Y: me.Y}, {Item: Item{ID: "far", Kind: "gem"}, X: me.X + 200, Y: me.Y}})

	if _, err := w.ReserveLoot(p, ids[1], 16); !errors.Is(err, ErrOutOfRange) {
		t.Errorf("far loot: %v, want ErrOutOfRange", err)
	}
	item, err := w.ReserveLoot(p, ids[0], 16)
	if err != nil || item.ID != "sword-1" {
		t.Fatalf("reserve: %v %v", item, err)
	}
	if _, err := w.ReserveLoot(q, ids[0], 16); !errors.Is(err, ErrReserved) {
		t.Errorf("second taker: %v, want ErrReserved: first pickup wins", err)
	}
	w.CancelPickup(ids[0]) // the commit failed: the loot is free again
	if _, err := w.ReserveLoot(q, ids[0], 16); err != nil {
		t.Fatalf("after cancel: %v", err)
	}
	w.CompletePickup(q, ids[0])
	if inv := w.Inventory(q); len(inv) != 1 || inv[0].ID != "sword-1" {
		t.Fatalf("inventory = %+v", inv)
	}
	if w.find(ids[0]) != nil {
		t.Error("picked loot still on the ground")
	}
	sword, _, _, err := w.ReserveDrop(q, "sword-1")
	if err != nil {
		t.Fatal(err)
	}
	if _, _, _, err := w.ReserveDrop(q, "sword-1"); !errors.Is(err, ErrReserved) {
		t.Errorf("double drop: %v", err)
	}
	if _, _, _, err := w.ReserveDrop(p, "sword-1"); !errors.Is(err, ErrNotCarried) {
		t.Errorf("dropping what another carries: %v, want ErrNotCarried", err)
	}
	w.CompleteDrop(q, sword, 10, 10)
	if len(w.Inventory(q)) != 0 || !w.OnGround("sword-1") {
		t.Error("dropped item still carried, or not on the ground")
	}
	f := w.Frame(64)
	loot := 0
	for _, v := range f.Entities {
		if v.Kind == KindLoot {
			loot++
		}
	}
	if loot != 2 {
		t.Errorf("loot on the ground = %d, want 2 (the far gem and the dropped sword)", loot)
	}
}

// TestSyncLootMakesTheGroundTheDatabases: loot the database no longer has
// on this map goes (not one being picked up), loot it has elsewhere moves
// there, loot it has that is missing is laid, and loot where it says stays.
func TestSyncLootMakesTheGroundTheDatabases(t *testing.T) {
	w := NewWorld(meadow(t), 30, Defaults())
	p := w.JoinPlayer(PlayerSpec{Tag: "c1"})
	me := w.find(p)
	ids := w.SpawnLoot([]Loot{
		{Item: Item{ID: "kept", Kind: "gem"}, X: me.X + 40, Y: me.Y},
		{Item: Item{ID: "taken-elsewhere", Kind: "gem"}, X: me.X + 60, Y: me.Y},
		{Item: Item{ID: "being-picked", Kind: "gem"}, X: me.X + 5, Y: me.Y},
		{Item: Item{ID: "moved", Kind: "gem"}, X: me.X + 80, Y: me.Y},
	})
	if _, err := w.ReserveLoot(p, ids[2], 16); err != nil {
		t.Fatal(err)
	}
	w.SyncLoot([]Loot{
		{Item: Item{ID: "kept", Kind: "gem"}, X: me.X + 40, Y: me.Y},
		{Item: Item{ID: "moved", Kind: "gem"}, X: me.X + 90, Y: me.Y},
		{Item: Item{ID: "dropped-elsewhere", Kind: "sword"}, X: me.X + 20, Y: me.Y},
	})
	for id, want := range map[string]int{"kept": 1, "taken-elsewhere": 0, "being-picked": 1, "dropped-elsewhere": 1, "moved": 1} {
		if got := w.LootCount(id); got != want {
			t.Errorf("%s lies here %d times, want %d", id, got, want)
		}
	}
	if w.find(ids[0]) == nil {
		t.Error("loot where the list says was laid anew")
	}
	f := w.Frame(64)
	for _, v := range f.Entities {
		if v.Kind == KindLoot && v.X == me.X+80 {
			t.Error("the moved loot still lies where it was")
		}
	}
}

// TestPresentFindsAnItemOnTheGroundOrWithAPlayer.
func TestPresentFindsAnItemOnTheGroundOrWithAPlayer(t *testing.T) {
	w := NewWorld(meadow(t), 30, Defaults())
	p := w.JoinPlayer(PlayerSpec{Tag: "c1", Inventory: []Item{{ID: "carried", Kind: "gem"}}})
	me := w.find(p)
	w.SpawnLoot([]Loot{{Item: Item{ID: "lying", Kind: "gem"}, X: me.X + 30, Y: me.Y}})
	if _, _, _, err := w.ReserveDrop(p, "carried"); err != nil {
		t.Fatal(err)
	}
	for id, want := range map[string]bool{"lying": true, "carried": true, "nowhere": false} {
		if got := w.Present(id); got != want {
			t.Errorf("Present(%s) = %v, want %v", id, got, want)
		}
	}
}

// TestACommittedDropLandsWhenThePlayerLeftMeanwhile: the database has the
// item on the ground, so the world must too.
func TestACommittedDropLandsWhenThePlayerLeftMeanwhile(t *testing.T) {
	w := NewWorld(testStatic(t, mapgen.Config{Seed: 1, Width: 256, Height: 256}), 30, Defaults())
	p := w.JoinPlayer(PlayerSpec{Tag: "c1", Inventory: []Item{{ID: "axe-1", Kind: "axe"}}})
	axe, x, y, err := w.ReserveDrop(p, "axe-1")
	if err != nil {
		t.Fatal(err)
	}
	w.RemovePlayer(p)
	w.CompleteDrop(p, axe, x, y)
	if !w.OnGround("axe-1") {
		t.Error("a committed drop of a player who left vanished")
	}
}

func TestCollectDirtyBumpsRevisions(t *testing.T) {
	w := NewWorld(testStatic(t, mapgen.Config{Seed: 1, Width: 256, Height: 256}), 30, Defaults())
	id := w.JoinPlayer(PlayerSpec{Tag: "c1", Revision: 7})
	if got := w.CollectDirty(false); len(got) != 0 {
		t.Fatalf("a player who did nothing is dirty: %+v", got)
	}
	w.QueueInput(id, Input{Seq: 1, X: 1})
	w.Step()
	got := w.CollectDirty(false)
	if len(got) != 1 || got[0].Tag != "c1" || got[0].Revision != 8 || got[0].Tick != 1 {
		t.Fatalf("records = %+v", got)
	}
	if len(w.CollectDirty(false)) != 0 {
		t.Error("collection did not clear the dirty flag")
	}
	if all := w.CollectDirty(true); len(all) != 1 || all[0].Revision != 9 {
		t.Errorf("all = %+v", all)
	}
}

func TestJoinPlayerRestoresState(t *testing.T) {
	static := testStatic(t, mapgen.Config{Seed: 1, Width: 256, Height: 256})
	w := NewWorld(static, 30, Defaults())
	x, y := float32(static.PlayerSpawn.X+10), float32(static.PlayerSpawn.Y)
	id := w.JoinPlayer(PlayerSpec{Tag: "c", Restore: true, X: x, Y: y, HP: 42, Inventory: []Item{{ID: "i1"}}})
	e, p := w.findPlayer(id)
	if e.X != x || e.Y != y || e.HP != 42 || len(p.inventory) != 1 {
		t.Errorf("restored %+v, %+v", e, p)
	}
}

// TestAStandingBacklogIsSkipped: a client that got two inputs ahead once
// and then sends one a tick keeps no queue past the input window; its
// skipped inputs count as handled.
func TestAStandingBacklogIsSkipped(t *testing.T) {
	w := NewWorld(meadow(t), 30, Defaults())
	id := w.AddPlayer()
	seq := uint32(0)
	send := func(n int) {
		for range n {
			seq++
			w.QueueInput(id, Input{Seq: seq, X: 1})
		}
	}
	send(3) // a burst: two inputs more than the tick takes
	for range 3 * 30 {
		w.Step()
		send(1)
	}
	_, p := w.findPlayer(id)
	if q := len(p.inputs); q > 1 {
		t.Errorf("after three windows the backlog holds %d inputs, want at most the one just sent", q)
	}
	if w.SkippedInputs != 2 {
		t.Errorf("SkippedInputs = %d, want the 2 of the burst", w.SkippedInputs)
	}
	if got := p.lastSeq; got != seq-uint32(len(p.inputs)) {
		t.Errorf("lastSeq = %d, want every input but the queued ones handled (%d sent)", got, seq)
	}
}

// TestBatchingLosesNothing: a client sending several ticks of input per
// message, as often as it takes them, never has an input skipped.
func TestBatchingLosesNothing(t *testing.T) {
	w := NewWorld(meadow(t), 30, Defaults())
	batcher := w.AddPlayer()
	seq := uint32(0)
	for tick := range 6 * 30 {
		if tick%6 == 0 {
			for range 6 {
				seq++
				w.QueueInput(batcher, Input{Seq: seq, X: 1})
			}
		}
		w.Step()
	}
	if _, p := w.findPlayer(batcher); w.SkippedInputs != 0 || p.lastSeq != seq {
		t.Errorf("skipped %d inputs, last handled %d of %d: want none skipped, all handled", w.SkippedInputs, p.lastSeq, seq)
	}
}

// TestNoPlayerOutrunsOneStepATick: however many inputs a client stuffs in,
// a player moves at most one step a tick, and its standing backlog is
// skipped.
func TestNoPlayerOutrunsOneStepATick(t *testing.T) {
	w := NewWorld(meadow(t), 30, Defaults())
	stuffer := w.AddPlayer()
	step := float64(Defaults().PlayerSpeed) / 30
	seq := uint32(0)
	for tick := range 6 * 30 {
		for range 5 {
			seq++
			w.QueueInput(stuffer, Input{Seq: seq, Y: 1})
		}
		before := *w.find(stuffer)
		w.Step()
		after := w.find(stuffer)
		if d := math.Hypot(float64(after.X-before.X), float64(after.Y-before.Y)); d > step*1.0001 {
			t.Fatalf("tick %d: moved %.3f, one step is %.3f", tick, d, step)
		}
	}
	if w.SkippedInputs == 0 {
		t.Error("the stuffer's standing backlog was never skipped")
	}
}

// TestACrowdSpreadsOverTheSpawnPoints: players joining at once start at
// the least crowded spawn point, so 32 players on 16 points stand two to
// a point.
func TestACrowdSpreadsOverTheSpawnPoints(t *testing.T) {
	w := NewWorld(testStatic(t, mapgen.Config{Seed: 4, Width: 1024, Height: 1024, SpawnPoints: 16}), 30, Defaults())
	at := map[[2]float32]int{}
	for range 32 {
		e := w.find(w.AddPlayer())
		at[[2]float32{e.X, e.Y}]++
	}
	if len(at) != 16 {
		t.Fatalf("32 players started at %d places, want the 16 spawn points", len(at))
	}
	for p, n := range at {
		if n != 2 {
			t.Errorf("%d players at %v, want 2", n, p)
		}
	}
}
