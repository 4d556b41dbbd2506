package roomserver

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/roomkeeper/roomkeeper/internal/playtest"
	"github.com/roomkeeper/roomkeeper/internal/protocol"
	"github.com/roomkeeper/roomkeeper/internal/sim"
	"github.com/roomkeeper/roomkeeper/internal/store"
	"github.com/roomkeeper/roomkeeper/internal/token"
	"github.com/roomkeeper/roomkeeper/pkg/client"
)

// cryptPod runs the crypt on db as pod, with fast checkpoints.
func cryptPod(t *testing.T, db store.Store, keys *token.StaticKeys, pod string, tune func(*Config)) *harness {
	return persistentHarness(t, db, keys, func(c *Config) {
		c.MapConfig, c.Pod = []byte(cryptMap), pod
		if tune != nil {
			tune(c)
		}
	})
}

// openNearestDoor walks a player of h to the door nearest the spawn and
// opens it; it returns the door's entity id.
func openNearestDoor(t *testing.T, c *client.Client) uint32 {
	t.Helper()
	d := nearestDoor(t, c.Static(), false)
	waitFor(t, c, "the player in the world", func(s client.State) bool { return s.Sees(c.Welcome().PlayerID) })
	if err := playtest.Travel(waitCtx(t), c, doorPoint(d)); err != nil {
		t.Fatal(err)
	}
	door, ok := playtest.DoorEntity(c.Snapshot(), d)
	if !ok {
		t.Fatal("the door is out of sight")
	}
	if door.State&sim.StateDoorOpen == 0 {
		if ack := command(t, c, protocol.FeatureDoor, protocol.ActionToggle, protocol.DoorToggle{Door: door.ID}); !ack.OK {
			t.Fatalf("opening the door: %+v", ack)
		}
	}
	return door.ID
}

// layDrop lays an item the database does not know, as an enemy's drop.
func layDrop(t *testing.T, h *harness, id string) {
	t.Helper()
	if err := h.srv.loop.Do(waitCtx(t), func(w *sim.World) { w.PlaceLoot(sim.Item{ID: id, Kind: "bone"}, 130, 30) }); err != nil {
		t.Fatal(err)
	}
}

// worldAt waits for h to have written a world checkpoint of tick at
// least tick and returns it.
func worldAt(t *testing.T, h *harness, tick uint64) WorldCheckpoint {
	t.Helper()
	var got WorldCheckpoint
	poll(t, func() error {
		var ok bool
		if got, ok = h.srv.WorldStatus(); !ok || got.Tick < tick {
			return fmt.Errorf("no world checkpoint of tick %d yet (%+v)", tick, got)
		}
		return nil
	})
	return got
}

// onTick runs fn on h's tick goroutine.
func onTick(t *testing.T, h *harness, fn func(*sim.World)) {
	t.Helper()
	if err := h.srv.loop.Do(waitCtx(t), fn); err != nil {
		t.Fatal(err)
	}
}

func doorOpen(t *testing.T, h *harness, door uint32) bool {
	t.Helper()
	var open bool
	onTick(t, h, func(w *sim.World) {
		v, ok := w.Frame(64).Lookup(door)
		open = ok && v.State&sim.StateDoorOpen != 0
	})
	return open
}

// TestACrashedMapComesBackWithItsWorld: a map killed the hard way comes
// back, on a new process, with the world of its last checkpoint: the
// door a player opened open, an enemy's drop nobody took on the ground,
// the boss as it was, the tick where it was.
func TestACrashedMapComesBackWithItsWorld(t *testing.T) {
	db, _ := newDB(t)
	keys := newKeys(t)
	old := cryptPod(t, db, keys, "old", nil)
	waitReady(t, old)
	door := openNearestDoor(t, old.join(character("ada")))
	layDrop(t, old, "demo-town/drop/gone-1")
	saved := worldAt(t, old, old.srv.Stats().Tick)
	old.crash()

	next := cryptPod(t, db, keys, "next", nil)
	waitReady(t, next)
	restored, ok := next.srv.WorldStatus()
	if !ok || restored.Revision < saved.Revision || restored.Tick < saved.Tick || restored.BossPhase != 1 {
		t.Fatalf("restored %+v, want at least revision %d, tick %d, the boss at full strength", restored, saved.Revision, saved.Tick)
	}
	if !doorOpen(t, next, door) {
		t.Error("the opened door is closed again")
	}
	onTick(t, next, func(w *sim.World) {
		if !w.OnGround("demo-town/drop/gone-1") {
			t.Error("the enemy's drop is gone")
		}
	})
}

// TestAHandoverCarriesTheWorldFromItsTick: the old pod stops its world at
// a tick and the new one goes on from exactly that tick, with its doors;
// the old one ticks no more, and nothing it writes after lands.
func TestAHandoverCarriesTheWorldFromItsTick(t *testing.T) {
	db, _ := newDB(t)
	keys := newKeys(t)
	old := cryptPod(t, db, keys, "old", nil)
	// The new pod writes no checkpoint of its own during the test: the
	// world it reports is the one it took over.
	next := cryptPod(t, db, keys, "next", func(c *Config) { c.TakesOver, c.CheckpointInterval = true, time.Minute })
	waitReady(t, old)
	waitReady(t, next)
	c := old.join(character("bo"))
	door := openNearestDoor(t, c)
	if next.srv.world.isReady() {
		t.Fatal("the new pod took the world before the old one handed it over")
	}
	if n := old.srv.HandOver(waitCtx(t), next.url); n != 1 {
		t.Fatalf("handed over %d players, want 1", n)
	}
	stopped := old.srv.Stats().Tick
	handed, ok := old.srv.WorldStatus() // the last world the old pod wrote: the handover's, at the tick it stopped
	if !ok || !old.srv.world.released || handed.Tick != stopped {
		t.Fatalf("the old pod's last world checkpoint %+v (released %v), stopped at tick %d", handed, old.srv.world.released, stopped)
	}
	waitFor(t, c, "bo on the new pod", func(s client.State) bool { return c.Endpoint() == next.url && s.Sees(c.Welcome().PlayerID) })
	took, _ := next.srv.WorldStatus()
	if took.Tick != handed.Tick || took.Revision != handed.Revision {
		t.Fatalf("the new pod went on from revision %d at tick %d, the old one handed over revision %d at tick %d",
			took.Revision, took.Tick, handed.Revision, handed.Tick)
	}
	if !doorOpen(t, next, door) {
		t.Error("the door is closed on the new pod")
	}
	if err := old.srv.world.save(waitCtx(t), false); err != nil || old.srv.Stats().Tick != stopped {
		t.Errorf("the old pod after the handover: save %v, tick %d (stopped at %d)", err, old.srv.Stats().Tick, stopped)
	}
	if w, err := db.LoadWorld(waitCtx(t), old.cfg.Instance); err != nil || w.Pod != "next" {
		t.Errorf("the stored world %+v, %v: want the new pod's", w, err)
	}
}

// TestAnEmptyMapWritesItsWorldNoMore: once nobody plays on a map (its
// last player gone, and one more checkpoint of what they left), it
// writes its world no more: a quiet map asks its database nothing.
func TestAnEmptyMapWritesItsWorldNoMore(t *testing.T) {
	db, _ := newDB(t)
	h := cryptPod(t, db, newKeys(t), "quiet", func(c *Config) { c.ResumeGrace, c.GuestResumeGrace = time.Millisecond, time.Millisecond })
	waitReady(t, h)
	c := h.join(character("fay"))
	worldAt(t, h, 1)
	_ = c.Close()
	poll(t, func() error {
		if n := h.srv.Stats().Players; n > 0 {
			return fmt.Errorf("%d players", n)
		}
		return nil
	})
	// The one more checkpoint of the world as they left it: written now
	// unless the map's own writer has written it already (a checkpoint of
	// the tick they left in may still show them, so waiting for that tick
	// is not enough). Writes are serialized: after it, nothing is due.
	if err := h.srv.world.save(waitCtx(t), false); err != nil {
		t.Fatal(err)
	}
	left, _ := h.srv.WorldStatus()
	if left.Revision < 2 {
		t.Fatalf("the world as its players left it was not written: revision %d", left.Revision)
	}
	for range 5 {
		if err := h.srv.world.save(waitCtx(t), false); err != nil {
			t.Fatal(err)
		}
	}
	if now, _ := h.srv.WorldStatus(); now.Revision != left.Revision {
		t.Fatalf("an empty map wrote its world: revision %d, after its players left %d", now.Revision, left.Revision)
	}
}

// TestAStalePodCannotOverwriteItsSuccessorsWorld: a pod that lost its map
// (another pod claimed the world since) has its writes refused.
func TestAStalePodCannotOverwriteItsSuccessorsWorld(t *testing.T) {
	db, _ := newDB(t)
	keys := newKeys(t)
	stale := cryptPod(t, db, keys, "stale", nil)
	waitReady(t, stale)
	stale.join(character("cy")) // a world nobody plays in is not written
	worldAt(t, stale, 1)
	successor := cryptPod(t, db, keys, "successor", nil)
	waitReady(t, successor)
	// Its write is fenced; or its periodic write met the fence first (a CI
	// run's did), and since then it writes no more: nil.
	if err := stale.srv.world.save(waitCtx(t), false); err != nil && !errors.Is(err, store.ErrWorldFenced) {
		t.Fatalf("the stale pod's write: %v, want ErrWorldFenced", err)
	}
	if w, _ := stale.srv.WorldStatus(); !strings.Contains(w.Error, "claimed") {
		t.Errorf("the stale pod reports %+v, want the refusal", w)
	}
	successor.join(character("di"))
	worldAt(t, successor, successor.srv.Stats().Tick)
	if w, err := db.LoadWorld(waitCtx(t), stale.cfg.Instance); err != nil || w.Pod != "successor" {
		t.Fatalf("the stored world %+v, %v: want the successor's", w, err)
	}
}

// TestABadWorldKeepsTheMapNotReady: a world checkpoint whose hash does not
// match, or of a schema this server does not know, is refused, loudly:
// the map waits, not Ready, and says why; it never starts afresh.
func TestABadWorldKeepsTheMapNotReady(t *testing.T) {
	for name, spoil := range map[string]string{
		"corrupt":        `UPDATE map_state SET payload = 'bit rot'`,
		"unknown schema": `UPDATE map_state SET schema_version = 99`,
	} {
		t.Run(name, func(t *testing.T) {
			db, _ := newDB(t)
			keys := newKeys(t)
			first := cryptPod(t, db, keys, "first", nil)
			waitReady(t, first)
			first.join(character("ed"))
			worldAt(t, first, 1)
			first.crash()
			if _, err := db.DB().ExecContext(context.Background(), spoil); err != nil {
				t.Fatal(err)
			}
			next := cryptPod(t, db, keys, "next", nil)
			poll(t, func() error {
				if !strings.Contains(next.srv.WaitingFor(), "map_state") {
					return fmt.Errorf("waiting for %q", next.srv.WaitingFor())
				}
				return nil
			})
			if next.srv.restored.Load() {
				t.Fatal("the map is Ready on a world it could not restore")
			}
		})
	}
}
