package sim

import (
	"bytes"
	"context"
	"math/rand/v2"
	"reflect"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/roomkeeper/roomkeeper/internal/mapgen"
	"github.com/roomkeeper/roomkeeper/internal/wait"
)

// twins are two worlds of one map fed the same joins, leaves, inputs and
// blows: ticked steps every tick, skipped is taken over its empty spells
// by SkipTo, as a hibernating map is.
type twins struct{ ticked, skipped *World }

func (tw twins) both(fn func(w *World)) {
	fn(tw.ticked)
	fn(tw.skipped)
}

// same fails unless the two worlds are one: their checkpoints (the world
// without its players) and every entity, players included.
func (tw twins) same(t *testing.T, when string) {
	t.Helper()
	a, b := tw.ticked, tw.skipped
	if a.Tick() != b.Tick() {
		t.Fatalf("%s: tick %d when ticked, %d when skipped", when, a.Tick(), b.Tick())
	}
	if !bytes.Equal(a.AppendCheckpoint(nil), b.AppendCheckpoint(nil)) || !reflect.DeepEqual(a.entities, b.entities) {
		t.Fatalf("%s (tick %d): the skipped world differs from the ticked one", when, a.Tick())
	}
}

// play has a few players join, walk and fight for a while, then leave.
func (tw twins) play(r *rand.Rand) {
	var ids []uint32
	for range 1 + r.IntN(3) {
		var id uint32 // the same in both: they number alike
		tw.both(func(w *World) { id = w.AddPlayer() })
		ids = append(ids, id)
	}
	for range r.IntN(900) {
		p := ids[r.IntN(len(ids))]
		in := Input{X: r.Float32()*2 - 1, Y: r.Float32()*2 - 1}
		kill := r.IntN(8) == 0
		var target uint32
		if kill {
			target = tw.ticked.randomNPC(r)
		}
		tw.both(func(w *World) {
			w.QueueInput(p, in)
			if target != 0 && w.find(target) != nil {
				w.find(p).HP = 255
				w.combat.attacks = append(w.combat.attacks, hit{from: p, to: target, damage: 255})
			}
			w.Step()
		})
	}
	tw.both(func(w *World) {
		for _, p := range ids {
			w.RemovePlayer(p)
		}
		w.Step()
	})
}

// TestAHibernatedWorldIsTheWorldThatTicked is the property behind
// hibernation: for random maps and random spells of play and emptiness,
// a world taken over its empty spells by SkipTo (in random pieces, as a
// sleeping loop's jobs and alarms cut them) is, tick for tick, the world
// that stepped every tick: the same NPCs in the same places, the same
// respawns at the same ticks, the same random state.
func TestAHibernatedWorldIsTheWorldThatTicked(t *testing.T) {
	seed := rand.Uint64()
	t.Logf("seed %d", seed)
	r := rand.New(rand.NewPCG(seed, 0))
	respawned := 0 // enemies back while their world slept
	for i := range 12 {
		static := testStatic(t, mapgen.Config{Seed: r.Int64N(1 << 20), Width: 384, Height: 384,
			NPCDensity: 0.05 + r.Float64()*0.2}) // meadow enemies come back 30 s after they die
		tun := Defaults()
		tun.DropPrefix = "test/drop/"
		tw := twins{NewWorld(static, 30, tun), NewWorld(static, 30, tun)}
		for range 4 {
			tw.play(r)
			tw.same(t, "after play")
			tw.both(func(w *World) { w.FrameInto(nil, 64) }) // the loop publishes the leave events before it sleeps
			if !tw.skipped.Quiet() {
				t.Fatalf("world %d: a world its players left, whose events were taken, is not quiet", i)
			}
			empty := uint64(r.IntN(3000)) // longer than an enemy's 30 s respawn, or not
			pending := len(tw.skipped.combat.respawns)
			for range empty {
				tw.ticked.Step()
			}
			for end := tw.skipped.Tick() + empty; tw.skipped.Tick() < end; {
				tw.skipped.SkipTo(min(end, tw.skipped.Tick()+1+uint64(r.IntN(1200))))
			}
			tw.same(t, "after an empty spell")
			respawned += pending - len(tw.skipped.combat.respawns)
		}
	}
	if respawned == 0 {
		t.Fatal("no enemy came back during an empty spell: the property was not tried")
	}
	t.Logf("%d enemies came back while their world slept", respawned)
}

// TestAWorldWithoutPlayersOnlyRespawns: in a world nobody is in, NPCs
// stand still and the only thing due is a respawn.
func TestAWorldWithoutPlayersOnlyRespawns(t *testing.T) {
	w := NewWorld(meadow(t), 30, Defaults())
	before := slices.Clone(w.entities)
	for range 300 {
		w.Step()
	}
	if !reflect.DeepEqual(before, w.entities) {
		t.Fatal("NPCs moved in a world without players")
	}
	if _, ok := w.NextWake(); ok {
		t.Fatal("a world with nobody dead has a wake due")
	}
	p := w.AddPlayer()
	if _, ok := w.NextWake(); ok {
		t.Fatal("a world with a player reports a wake: it changes every step")
	}
	w.RemovePlayer(p)
	w.combat.respawns = append(w.combat.respawns, respawn{enemy: 0, at: w.Tick() + 45, home: mapgen.Point{X: 8, Y: 8}})
	if next, ok := w.NextWake(); !ok || next != w.Tick()+45 {
		t.Fatalf("next wake %d %v, want tick %d", next, ok, w.Tick()+45)
	}
}

// TestNPCsSleepFarFromPlayers: an NPC acts only within WakeCells cells of
// a player; one farther stands still, and wakes when a player comes near.
func TestNPCsSleepFarFromPlayers(t *testing.T) {
	static := testStatic(t, mapgen.Config{Seed: 5, Width: 1024, Height: 64, NPCDensity: 0.3})
	w := NewWorld(static, 30, Defaults())
	p := w.AddPlayer()
	w.find(p).X, w.find(p).Y = 32, 32
	reach := Defaults().WakeCell * float32(Defaults().WakeCells+1)
	positions := func() map[uint32][2]float32 {
		m := map[uint32][2]float32{}
		for _, e := range w.entities {
			if e.Kind == KindNPC {
				m[e.ID] = [2]float32{e.X, e.Y}
			}
		}
		return m
	}
	start := positions()
	for range 120 {
		w.Step()
	}
	movedNear, movedFar := 0, 0
	for id, at := range positions() {
		if start[id] == at {
			continue
		}
		if start[id][0] < reach {
			movedNear++
		} else {
			movedFar++
		}
	}
	if movedFar != 0 || movedNear == 0 {
		t.Fatalf("in 4 s, %d NPCs near the player moved and %d far from it (want some, and none)", movedNear, movedFar)
	}
}

// TestAHibernatingLoopTakesNoStepsAndKeepsTime: a loop whose world is
// quiet sleeps (no steps, no frames) while its world's clock runs on; a
// job sees the world at the tick ticking would have reached; a player's
// arrival wakes it, a respawn due is taken while it sleeps, and the last
// player's leaving puts it back to sleep.
func TestAHibernatingLoopTakesNoStepsAndKeepsTime(t *testing.T) {
	var steps, frames atomic.Int64
	l := NewLoop(NewWorld(meadow(t), 30, Defaults()), LoopConfig{TickRate: 30, SnapshotRate: 10, CellSize: 64, Hibernate: true},
		Hooks{OnTick: func(time.Duration) { steps.Add(1) }, OnFrame: func(*Frame) { frames.Add(1) }})
	go l.Run()
	defer l.Stop()
	ctx := context.Background()
	waitFor(t, "the loop to hibernate", func() bool { return l.Stats().Hibernating })
	slept := steps.Load()
	waitFor(t, "a sleeping world's clock to run a second", func() bool { return l.Stats().Tick >= 30 })
	var tick uint64
	if err := l.Do(ctx, func(w *World) { tick = w.Tick() }); err != nil || tick < 30 {
		t.Fatalf("a job on a sleeping world saw tick %d (err %v), want >= 30", tick, err)
	}
	if n := steps.Load(); n != slept {
		t.Fatalf("a sleeping loop took %d steps", n-slept)
	}

	var entities int
	if err := l.Do(ctx, func(w *World) {
		entities = w.Len()
		w.combat.respawns = append(w.combat.respawns, respawn{enemy: 0, at: w.Tick() + 15, home: mapgen.Point{X: 8, Y: 8}})
	}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the respawn due while asleep", func() bool { return l.Stats().Entities == entities+1 })
	if !l.Stats().Hibernating || steps.Load() != slept {
		t.Fatal("the loop woke up to tick for a respawn")
	}

	var player uint32
	if err := l.Do(ctx, func(w *World) { player = w.AddPlayer() }); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "an occupied world to tick and publish", func() bool { return steps.Load() > slept+3 && frames.Load() > 0 })
	if err := l.Do(ctx, func(w *World) { w.RemovePlayer(player) }); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the loop to hibernate again", func() bool { return l.Stats().Hibernating })
}

// waitFor polls cond until it holds, for at most 10 s.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	wait.Eventually(t, 10*time.Second, what, wait.True(cond, "not yet"))
}
