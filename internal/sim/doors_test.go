package sim

import (
	"errors"
	"testing"

	"github.com/roomkeeper/roomkeeper/internal/mapgen"
)

// crypt is the sample GameRoom's crypt: rooms, doors, a boss room and a
// key room.
func crypt(t *testing.T) *World {
	t.Helper()
	static := testStatic(t, mapgen.Config{Seed: 7, Width: 256, Height: 256, Biome: "dungeon", Content: "crypt",
		NPCDensity: 0.1, Portals: []mapgen.Portal{{To: "town", X: 128, Y: 16}}})
	return NewWorld(static, 30, Defaults())
}

// doorsOf returns the door entities of room (an index in the map's Rooms).
func doorsOf(w *World, room int) []uint32 {
	var out []uint32
	for i, id := range w.doors.ids {
		if w.static.Doors[w.doors.rows[i].static].Room == room {
			out = append(out, id)
		}
	}
	return out
}

// nextTo puts the player one cell outside door, on the side away from
// its room; it returns the door's state.
func nextTo(t *testing.T, w *World, player, door uint32) *doorState {
	t.Helper()
	e, d := w.doorOf(door)
	p := w.find(player)
	p.X, p.Y = e.X, e.Y
	r := w.static.Doors[d.static].Rect
	room := w.static.Rooms[w.static.Doors[d.static].Room].Rect
	switch { // one cell outwards, away from the room
	case r.Y+r.H == room.Y:
		p.Y -= mapgen.CellSize
	case r.Y == room.Y+room.H:
		p.Y += mapgen.CellSize
	case r.X+r.W == room.X:
		p.X -= mapgen.CellSize
	default:
		p.X += mapgen.CellSize
	}
	return d
}

// giveKey puts the content's key in the player's inventory.
func giveKey(w *World, player uint32) {
	_, p := w.findPlayer(player)
	p.inventory = append(p.inventory, Item{ID: "key", Kind: w.combat.pack.Key})
}

func eventsOf(f *Frame, typ string) []Event {
	var out []Event
	for _, e := range f.Events {
		if e.Type == typ {
			out = append(out, e)
		}
	}
	return out
}

func TestClosedDoorsBlockMovementAndSight(t *testing.T) {
	w := crypt(t)
	door := w.doors.ids[0]
	e, d := w.doorOf(door)
	if d.open || !w.Blocked(float64(e.X), float64(e.Y)) {
		t.Fatal("a door starts open")
	}
	if w.static.Blocked(float64(e.X), float64(e.Y)) {
		t.Fatal("the static map blocks a doorway")
	}
	player := w.AddPlayer()
	d = nextTo(t, w, player, door)
	p := w.find(player)
	if w.lineOfSight(p.X, p.Y, 2*e.X-p.X, 2*e.Y-p.Y) {
		t.Error("a closed door lets sight through")
	}
	dx, dy := towards(p.X, p.Y, e.X, e.Y)
	if x, y := Move(w, p.X, p.Y, dx, dy, 2*mapgen.CellSize); w.doorDistance2(d, x, y) == 0 {
		t.Errorf("a walk from (%v,%v) went into the closed door at (%v,%v)", p.X, p.Y, x, y)
	}
	giveKey(w, player)
	if err := w.ToggleDoor(player, door); err != nil {
		t.Fatal(err)
	}
	if !d.open || w.Blocked(float64(e.X), float64(e.Y)) {
		t.Fatal("the toggled door is still closed")
	}
	if !w.lineOfSight(p.X, p.Y, e.X, e.Y) {
		t.Error("an open door blocks sight")
	}
	f := w.Frame(64)
	if got := eventsOf(f, EventDoor); len(got) != 1 || got[0].Entity != door || got[0].Detail != DoorOpened {
		t.Errorf("door events %+v, want one opening of %d", got, door)
	}
	if v, _ := f.Lookup(door); v.Kind != KindDoor || v.State&StateDoorOpen == 0 {
		t.Errorf("the door's view %+v is not an open door", v)
	}
}

func TestDoorTogglesThatAreRefused(t *testing.T) {
	w := crypt(t)
	boss := w.static.RoomWith(mapgen.RoleBoss)
	locked := doorsOf(w, boss)[0]
	plain := -1
	for i, d := range w.doors.rows {
		if !d.locked {
			plain = i
			break
		}
	}
	door := w.doors.ids[plain]
	player := w.AddPlayer()

	p := w.find(player)
	e, d := w.doorOf(door)
	p.X, p.Y = e.X+float32(w.static.Doors[d.static].Rect.W)/2+DoorReach+1, e.Y
	if err := w.ToggleDoor(player, door); !errors.Is(err, ErrOutOfRange) {
		t.Errorf("toggle from afar: %v, want ErrOutOfRange", err)
	}
	if err := w.ToggleDoor(player, p.ID); !errors.Is(err, ErrNotADoor) {
		t.Errorf("toggle a player: %v, want ErrNotADoor", err)
	}

	nextTo(t, w, player, locked)
	if err := w.ToggleDoor(player, locked); !errors.Is(err, ErrLocked) {
		t.Errorf("a locked door without the key: %v, want ErrLocked", err)
	}
	giveKey(w, player)
	if err := w.ToggleDoor(player, locked); err != nil {
		t.Fatalf("the key does not open the locked door: %v", err)
	}
	p = w.find(player)
	le, _ := w.doorOf(locked)
	p.X, p.Y = le.X, le.Y       // in the doorway
	w.player(p).inventory = nil // unlocked, it no longer needs the key
	if err := w.ToggleDoor(player, locked); !errors.Is(err, ErrDoorBlocked) {
		t.Errorf("closing on a player: %v, want ErrDoorBlocked", err)
	}
	nextTo(t, w, player, locked)
	if err := w.ToggleDoor(player, locked); err != nil {
		t.Errorf("closing the unlocked door: %v", err)
	}
	if err := w.ToggleDoor(player, locked); err != nil {
		t.Errorf("an unlocked door stays unlocked: %v", err)
	}

	w.find(player).HP = 0
	if err := w.ToggleDoor(player, locked); !errors.Is(err, ErrDead) {
		t.Errorf("a dead player toggles: %v, want ErrDead", err)
	}
}

// killGuards kills every guard of room, by a player's hits landed one
// step at a time, and returns the frames' events.
func killGuards(t *testing.T, w *World, room int) []Event {
	t.Helper()
	player := w.AddPlayer()
	var events []Event
	for range 10000 {
		guard := uint32(0)
		for i, id := range w.npcs.ids {
			if w.npcs.rows[i].room == int32(room) {
				guard = id
				break
			}
		}
		if guard == 0 {
			return append(events, w.Frame(64).Events...)
		}
		w.find(player).HP = 255 // it must not die meanwhile
		w.combat.attacks = append(w.combat.attacks, hit{from: player, to: guard})
		w.Step()
		events = append(events, w.Frame(64).Events...)
	}
	t.Fatal("the guards do not die")
	return nil
}

func TestClearingARoomOpensItsDoorsOnce(t *testing.T) {
	w := crypt(t)
	room := -1
	for i := range w.static.Rooms {
		if w.rooms[i].guards > 0 && len(doorsOf(w, i)) > 0 {
			room = i
			break
		}
	}
	if room < 0 {
		t.Fatal("no guarded room with doors")
	}
	events := killGuards(t, w, room)
	var cleared, opened int
	for _, e := range events {
		switch {
		case e.Type == EventRoomCleared:
			cleared++
			if e.Room != w.static.Rooms[room].ID {
				t.Errorf("room_cleared names room %d, want %d", e.Room, w.static.Rooms[room].ID)
			}
		case e.Type == EventDoor && e.Detail == DoorOpened:
			opened++
		}
	}
	if cleared != 1 || !w.RoomCleared(room) {
		t.Errorf("%d room_cleared events, want 1", cleared)
	}
	for _, id := range doorsOf(w, room) {
		if _, d := w.doorOf(id); !d.open || d.locked {
			t.Errorf("door %d of the cleared room: open %v locked %v", id, d.open, d.locked)
		}
	}
	if opened != len(doorsOf(w, room)) {
		t.Errorf("%d doors opened, the room has %d", opened, len(doorsOf(w, room)))
	}
}

func TestTheBossChangesPhaseAtItsThresholds(t *testing.T) {
	w := crypt(t)
	var boss *Entity
	for i := range w.entities {
		if e := &w.entities[i]; e.Kind == KindNPC && w.npc(e).enemy == len(w.combat.types)-1 {
			boss = e
		}
	}
	if boss == nil || w.npc(boss).room != int32(w.static.RoomWith(mapgen.RoleBoss)) {
		t.Fatal("no boss guards the boss room")
	}
	kind := w.combat.pack.Boss
	id := boss.ID
	type entered struct{ hp, phase uint8 }
	var got []entered
	for boss.HP > 1 {
		boss.HP-- // hits of one: every threshold is met exactly
		w.enterPhase(boss, w.npc(boss))
		for _, e := range eventsOf(w.Frame(64), EventBossPhase) {
			if e.Entity != id {
				t.Errorf("boss_phase of %d, want %d", e.Entity, id)
			}
			got = append(got, entered{hp: boss.HP, phase: e.Phase})
		}
	}
	if len(got) != len(kind.Phases) {
		t.Fatalf("boss_phase events %+v, want %d", got, len(kind.Phases))
	}
	for i, g := range got {
		if want := uint8(int(kind.HP) * kind.Phases[i].BelowPercent / 100); g.phase != uint8(i+1) || g.hp != want {
			t.Errorf("phase %d entered at %d hp, want phase %d at %d hp", g.phase, g.hp, i+1, want)
		}
	}
	if got := w.fighter(boss).Attack; got != kind.Phases[len(kind.Phases)-1].Attack {
		t.Errorf("the boss's attack in its last phase is %d, want %d", got, kind.Phases[len(kind.Phases)-1].Attack)
	}

	// One hit through two thresholds: both phases, in order.
	w2 := crypt(t)
	b2 := w2.find(id)
	b2.HP = 1
	w2.enterPhase(b2, w2.npc(b2))
	if ev := eventsOf(w2.Frame(64), EventBossPhase); len(ev) != 2 || ev[0].Phase != 1 || ev[1].Phase != 2 {
		t.Errorf("one deep hit: boss_phase events %+v, want phases 1 and 2", ev)
	}
}
