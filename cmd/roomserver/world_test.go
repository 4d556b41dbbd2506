package main

import (
	"context"
	"fmt"
	"syscall"
	"testing"
	"time"

	"github.com/roomkeeper/roomkeeper/internal/mapgen"
	"github.com/roomkeeper/roomkeeper/internal/playtest"
	"github.com/roomkeeper/roomkeeper/internal/protocol"
	"github.com/roomkeeper/roomkeeper/internal/store"
	"github.com/roomkeeper/roomkeeper/internal/wait"
	"github.com/roomkeeper/roomkeeper/pkg/client"
)

// TestKill9KeepsTheWorld: a player opens one of the crypt's doors; once a
// world checkpoint holds it, the map's process is killed with SIGKILL,
// and the process that replaces it comes back with the door open, from
// the checkpoint's tick on.
func TestKill9KeepsTheWorld(t *testing.T) {
	pg := startPostgres(t)
	dsn := newDatabase(t, pg, "kill9world")
	const crypt = `{"seed":7,"width":256,"height":256,"biome":"dungeon","content":"crypt","portals":[{"to":"town","x":128,"y":16}]}`
	f := newFixture(t, "ROOMKEEPER_DATABASE_URL="+dsn, "POD_NAME=demo-town")
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	db, err := store.Open(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = db.Close() })

	first := f.start(crypt, "--checkpoint-interval=200ms")
	first.waitReady(t, ctx)
	c := first.join(t, ctx, f.ticket("ida"))
	door := openADoor(t, ctx, c)
	opened := c.Snapshot().Tick
	var saved store.WorldState
	if err := wait.Until(ctx, func() error { // the next checkpoint is at most 200 ms away
		w, err := db.LoadWorld(ctx, "demo-town")
		if err == nil && uint64(w.SavedTick) < opened {
			err = fmt.Errorf("the checkpoint is of tick %d, before the door opened at %d", w.SavedTick, opened)
		}
		saved = w
		return err
	}); err != nil {
		t.Fatalf("no checkpoint of the open door: %v", err)
	}
	if err := first.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_ = first.cmd.Wait()

	second := f.start(crypt, "--checkpoint-interval=200ms")
	second.waitReady(t, ctx)
	back := second.join(t, ctx, f.ticket("ida"))
	if tick := back.Welcome().Tick; tick < uint64(saved.SavedTick) {
		t.Fatalf("the new process starts at tick %d, before the checkpoint's %d", tick, saved.SavedTick)
	}
	s, err := back.WaitFor(ctx, func(s client.State) bool { _, ok := playtest.DoorEntity(s, door); return ok })
	if err != nil {
		t.Fatal(err)
	}
	if e, _ := playtest.DoorEntity(s, door); e.State&1 == 0 {
		t.Fatalf("the door is %+v after kill -9: closed again", e)
	}
}

// openADoor takes c to the unlocked door nearest the spawn and opens it.
func openADoor(t *testing.T, ctx context.Context, c *client.Client) mapgen.Door {
	t.Helper()
	static := c.Static()
	spawn := playtest.Point{X: float32(static.PlayerSpawn.X), Y: float32(static.PlayerSpawn.Y)}
	var door mapgen.Door
	best := -1
	for _, d := range static.Doors {
		at := d.Rect.Centre()
		if route, err := playtest.Route(static, spawn, playtest.Point{X: float32(at.X), Y: float32(at.Y)}); err == nil && !d.Locked && (best < 0 || len(route) < best) {
			door, best = d, len(route)
		}
	}
	if best < 0 {
		t.Fatal("no door on a route from the spawn")
	}
	if _, err := c.WaitFor(ctx, func(s client.State) bool { return s.Sees(c.Welcome().PlayerID) }); err != nil {
		t.Fatal(err)
	}
	at := door.Rect.Centre()
	if err := playtest.Travel(ctx, c, playtest.Point{X: float32(at.X), Y: float32(at.Y)}); err != nil {
		t.Fatal(err)
	}
	e, ok := playtest.DoorEntity(c.Snapshot(), door)
	if !ok {
		t.Fatal("the door is out of sight")
	}
	if e.State&1 == 0 {
		if ack, err := c.Do(ctx, protocol.FeatureDoor, protocol.ActionToggle, protocol.DoorToggle{Door: e.ID}); err != nil || !ack.OK {
			t.Fatalf("opening the door: %+v %v", ack, err)
		}
	}
	return door
}
