package sim

import (
	"cmp"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"slices"

	"github.com/roomkeeper/roomkeeper/internal/mapgen"
)

// World checkpoints: the map's dynamic world without its players (they
// are checkpointed one by one, as characters), at a tick boundary, in a
// compact binary form the room server stores and a later process of the
// same map restores: the tick and the random state, the doors, the rooms
// cleared, every NPC with its hit points, place, heading, target and
// cooldown, the boss's phase, the enemies waiting to respawn, and the
// loot on the ground. A restored world steps on exactly as the one that
// wrote it would have without its players (checkpoint_test.go).
//
// AppendCheckpoint appends to a buffer the caller keeps: with room enough
// it allocates nothing, so the tick goroutine can take a checkpoint every
// few seconds without garbage. The format is versioned by the room server
// (its schema and simulation-core columns); all numbers are little-endian.

// ErrWorldMismatch: a checkpoint was taken of another map (its static
// map's hash differs: the map's config changed), so it does not fit.
var ErrWorldMismatch = errors.New("the world checkpoint is of another map")

var errTwice = errors.New("listed twice")

// ErrCorruptWorld: a checkpoint does not decode, or says something the
// map cannot hold (an enemy type it does not have, a door it lacks).
var ErrCorruptWorld = errors.New("the world checkpoint is corrupt")

// WorldSummary is what a checkpoint says of a map's progress, for
// operators (MapInstance status.world).
type WorldSummary struct {
	Tick uint64
	// RoomsCleared counts the rooms whose guards were all killed.
	RoomsCleared int
	// BossPhase is the boss's phase counted from 1 at full strength (2
	// once it fell below its first threshold: the first boss_phase event),
	// and 0 when the map has no living boss.
	BossPhase int
	BossHP    int
	// QuestPhases are the quest phases reached (QuestPhases).
	QuestPhases []string
}

// Summary describes the world's progress now.
func (w *World) Summary() WorldSummary {
	s := WorldSummary{Tick: w.tick, QuestPhases: w.QuestPhases()}
	for _, r := range w.rooms {
		if r.cleared {
			s.RoomsCleared++
		}
	}
	if len(w.combat.types) == len(w.combat.pack.Enemies) {
		return s // no boss in this content
	}
	boss := len(w.combat.types) - 1
	for i := range w.npcs.rows {
		if n := &w.npcs.rows[i]; n.enemy == boss {
			s.BossPhase, s.BossHP = int(n.phase)+1, int(w.find(w.npcs.ids[i]).HP)
		}
	}
	return s
}

// AppendCheckpoint appends the world's checkpoint to buf.
func (w *World) AppendCheckpoint(buf []byte) []byte {
	le := binary.LittleEndian
	buf = appendString(buf, w.static.Hash)
	buf = le.AppendUint64(buf, w.tick)
	buf = le.AppendUint64(buf, w.rng.state)
	buf = le.AppendUint32(buf, w.nextID)
	buf = le.AppendUint32(buf, uint32(w.doors.len()))
	for i := range w.doors.rows {
		d := &w.doors.rows[i]
		buf = le.AppendUint32(buf, uint32(d.static))
		buf = append(buf, d.state())
	}
	buf = le.AppendUint32(buf, uint32(len(w.rooms)))
	for _, r := range w.rooms {
		buf = append(buf, boolByte(r.cleared))
	}
	buf = le.AppendUint32(buf, uint32(w.npcs.len()))
	for i := range w.entities {
		if e := &w.entities[i]; e.Kind == KindNPC {
			buf = appendNPC(buf, e, w.npc(e))
		}
	}
	buf = le.AppendUint32(buf, uint32(len(w.combat.respawns)))
	for _, r := range w.combat.respawns {
		buf = le.AppendUint16(buf, uint16(r.enemy))
		buf = le.AppendUint64(buf, r.at)
		buf = le.AppendUint32(buf, uint32(r.home.X))
		buf = le.AppendUint32(buf, uint32(r.home.Y))
	}
	buf = le.AppendUint32(buf, uint32(w.loot.len()))
	for i := range w.entities {
		if e := &w.entities[i]; e.Kind == KindLoot {
			l := &w.loot.rows[e.slot]
			buf = binary.LittleEndian.AppendUint32(buf, e.ID)
			buf = appendFloats(buf, e.X, e.Y)
			buf = appendString(appendString(buf, l.item.ID), l.item.Kind)
		}
	}
	return buf
}

func appendNPC(buf []byte, e *Entity, n *npcState) []byte {
	le := binary.LittleEndian
	buf = le.AppendUint32(buf, e.ID)
	buf = le.AppendUint16(buf, uint16(n.enemy))
	buf = appendFloats(buf, e.X, e.Y, n.homeX, n.homeY, n.dirX, n.dirY)
	buf = append(buf, e.HP, n.phase, boolByte(n.goingHome))
	buf = le.AppendUint32(buf, n.target)
	buf = le.AppendUint32(buf, n.provokedBy)
	return le.AppendUint64(buf, n.nextAttack)
}

func appendFloats(buf []byte, fs ...float32) []byte {
	for _, f := range fs {
		buf = binary.LittleEndian.AppendUint32(buf, math.Float32bits(f))
	}
	return buf
}

func appendString(buf []byte, s string) []byte {
	buf = binary.LittleEndian.AppendUint16(buf, uint16(len(s)))
	return append(buf, s...)
}

func boolByte(b bool) byte {
	if b {
		return 1
	}
	return 0
}

// savedWorld is a decoded checkpoint, checked against the map before the
// world is touched.
type savedWorld struct {
	tick, rng uint64
	nextID    uint32
	doors     map[int]uint8 // static index: open and locked bits
	cleared   []bool
	npcs      []savedNPC
	respawns  []respawn
	loot      []savedLoot
}

type savedLoot struct {
	id uint32
	Loot
}

// savedNPCSize is an NPC's size in a checkpoint (appendNPC).
const savedNPCSize = 4 + 2 + 6*4 + 3 + 4 + 4 + 8

type savedNPC struct {
	id   uint32
	x, y float32
	hp   uint8
	npcState
}

// Restore makes a world that has no players yet (a map's new process)
// the checkpoint's: its tick, doors, rooms, NPCs, respawns and ground. A
// checkpoint of another map is ErrWorldMismatch and one that does not
// decode or does not fit is ErrCorruptWorld; either way the world is left
// as it was.
func (w *World) Restore(checkpoint []byte) error {
	if w.players.len() > 0 {
		return errors.New("restoring a world checkpoint into a world with players")
	}
	d := decoder{buf: checkpoint}
	if hash := d.string(); d.err == nil && hash != w.static.Hash {
		return fmt.Errorf("%w: its map hash is %.12s, this map's %.12s", ErrWorldMismatch, hash, w.static.Hash)
	}
	saved := w.decode(&d)
	if err := w.check(&d, saved); err != nil {
		return fmt.Errorf("%w: %w", ErrCorruptWorld, err)
	}
	w.apply(saved)
	return nil
}

// decode reads the checkpoint after the map hash.
func (w *World) decode(d *decoder) *savedWorld {
	s := &savedWorld{tick: d.u64(), rng: d.u64(), nextID: d.u32(), doors: map[int]uint8{}}
	for n := d.count(5); n > 0; n-- {
		static := int(d.u32())
		s.doors[static] = d.u8()
	}
	for n := d.count(1); n > 0; n-- {
		s.cleared = append(s.cleared, d.u8() != 0)
	}
	for left := d.count(savedNPCSize); left > 0; left-- {
		var n savedNPC
		n.id, n.enemy = d.u32(), int(d.u16())
		n.x, n.y, n.homeX, n.homeY, n.dirX, n.dirY = d.f32(), d.f32(), d.f32(), d.f32(), d.f32(), d.f32()
		n.hp, n.phase, n.goingHome = d.u8(), d.u8(), d.u8() != 0
		n.target, n.provokedBy, n.nextAttack = d.u32(), d.u32(), d.u64()
		s.npcs = append(s.npcs, n)
	}
	for n := d.count(18); n > 0; n-- {
		r := respawn{enemy: int(d.u16()), at: d.u64()}
		r.home = mapgen.Point{X: int32(d.u32()), Y: int32(d.u32())}
		s.respawns = append(s.respawns, r)
	}
	for n := d.count(4 + 4 + 4 + 2 + 2); n > 0; n-- {
		id, x, y := d.u32(), d.f32(), d.f32()
		s.loot = append(s.loot, savedLoot{id: id, Loot: Loot{Item: Item{ID: d.string(), Kind: d.string()}, X: x, Y: y}})
	}
	return s
}

// check refuses a checkpoint the map cannot hold.
func (w *World) check(d *decoder, s *savedWorld) error {
	switch {
	case d.err != nil:
		return d.err
	case len(d.buf) > 0:
		return fmt.Errorf("%d bytes after the end", len(d.buf))
	case len(s.doors) != len(w.static.Doors):
		return fmt.Errorf("%d doors, the map has %d", len(s.doors), len(w.static.Doors))
	case len(s.cleared) != len(w.rooms):
		return fmt.Errorf("%d rooms, the map has %d", len(s.cleared), len(w.rooms))
	}
	for static := range s.doors {
		if static < 0 || static >= len(w.static.Doors) {
			return fmt.Errorf("door %d: the map has %d", static, len(w.static.Doors))
		}
	}
	lowest := w.fixedEntities()
	ids := make(map[uint32]bool, len(s.npcs)+len(s.loot))
	for _, n := range s.npcs {
		if err := w.checkNPC(n, lowest, s.nextID); err != nil || ids[n.id] {
			return fmt.Errorf("NPC %d: %w", n.id, cmp.Or(err, errTwice))
		}
		ids[n.id] = true
	}
	for _, r := range s.respawns {
		if r.enemy >= len(w.combat.types) || w.static.Blocked(float64(r.home.X), float64(r.home.Y)) {
			return fmt.Errorf("a respawn of enemy type %d at (%d,%d) the map cannot hold", r.enemy, r.home.X, r.home.Y)
		}
	}
	for _, l := range s.loot {
		if !finite(l.X, l.Y) || l.ID == "" || l.id <= lowest || l.id > s.nextID || ids[l.id] {
			return fmt.Errorf("loot %d (%q) at (%v,%v)", l.id, l.ID, l.X, l.Y)
		}
		ids[l.id] = true
	}
	return nil
}

// checkNPC refuses an NPC the map cannot hold: an unknown type or phase,
// a dead one (the dead wait in respawns), a place off the map, an id not
// between the map's fixed entities and the next id.
func (w *World) checkNPC(n savedNPC, lowest, nextID uint32) error {
	switch {
	case n.id <= lowest || n.id > nextID:
		return fmt.Errorf("id outside (%d, %d]", lowest, nextID)
	case n.enemy >= len(w.combat.types):
		return fmt.Errorf("enemy type %d, the content has %d", n.enemy, len(w.combat.types))
	case int(n.phase) > len(w.combat.types[n.enemy].Phases):
		return fmt.Errorf("phase %d of %d", n.phase, len(w.combat.types[n.enemy].Phases))
	case n.hp == 0:
		return errors.New("dead")
	case !finite(n.x, n.y, n.homeX, n.homeY, n.dirX, n.dirY) || w.static.Blocked(float64(n.x), float64(n.y)):
		return fmt.Errorf("at (%v,%v), not on the map's floor", n.x, n.y)
	}
	return nil
}

// fixedEntities is the highest id of the entities every process of the
// map makes first, the same way (portals, then doors): 0 for none.
func (w *World) fixedEntities() uint32 {
	var highest uint32
	for i := range w.entities {
		if k := w.entities[i].Kind; k == KindPortal || k == KindDoor {
			highest = max(highest, w.entities[i].ID)
		}
	}
	return highest
}

func finite(fs ...float32) bool {
	for _, f := range fs {
		if math.IsNaN(float64(f)) || math.IsInf(float64(f), 0) {
			return false
		}
	}
	return true
}

// apply replaces the world's dynamic state with the checked checkpoint's.
func (w *World) apply(s *savedWorld) {
	w.entities = slices.DeleteFunc(w.entities, func(e Entity) bool { return e.Kind == KindNPC || e.Kind == KindLoot })
	w.npcs, w.loot = sideTable[npcState]{}, sideTable[lootState]{}
	w.tick, w.rng.state, w.nextID = s.tick, s.rng, s.nextID
	w.doorGrid.closed = 0
	clear(w.doorGrid.bits)
	for i := range w.doors.rows {
		d := &w.doors.rows[i]
		state := s.doors[d.static]
		d.open, d.locked = state&StateDoorOpen != 0, state&StateDoorLocked != 0
		if !d.open {
			w.doorGrid.set(d.cells, true)
			w.doorGrid.closed++
		}
	}
	for i := range w.rooms {
		w.rooms[i] = roomState{cleared: s.cleared[i]}
	}
	for _, n := range s.npcs {
		slot := w.npcs.add(n.id, n.npcState)
		w.guard(&w.npcs.rows[slot])
		w.entities = append(w.entities, Entity{ID: n.id, Kind: KindNPC, X: n.x, Y: n.y, HP: n.hp, slot: slot})
	}
	for _, l := range s.loot {
		slot := w.loot.add(l.id, lootState{item: l.Item})
		w.entities = append(w.entities, Entity{ID: l.id, Kind: KindLoot, X: l.X, Y: l.Y, HP: w.tun.MaxHP, slot: slot}) // as spawn makes it
	}
	// Ids keep their order: the systems walk the entities by id, so the
	// world steps on as the one that wrote the checkpoint.
	slices.SortFunc(w.entities, func(a, b Entity) int { return cmpID(a.ID, b.ID) })
	w.combat.respawns = slices.Clone(s.respawns)
	w.combat.attacks = w.combat.attacks[:0]
	w.events = w.events[:0]
}

// decoder reads a checkpoint; the first short read sets err, and every
// read after it returns zero.
type decoder struct {
	buf []byte
	err error
}

func (d *decoder) take(n int) []byte {
	if d.err != nil || len(d.buf) < n {
		if d.err == nil {
			d.err = errors.New("cut short")
		}
		return make([]byte, n)
	}
	b := d.buf[:n]
	d.buf = d.buf[n:]
	return b
}

func (d *decoder) u8() uint8    { return d.take(1)[0] }
func (d *decoder) u16() uint16  { return binary.LittleEndian.Uint16(d.take(2)) }
func (d *decoder) u32() uint32  { return binary.LittleEndian.Uint32(d.take(4)) }
func (d *decoder) u64() uint64  { return binary.LittleEndian.Uint64(d.take(8)) }
func (d *decoder) f32() float32 { return math.Float32frombits(d.u32()) }

func (d *decoder) string() string {
	return string(d.take(int(d.u16())))
}

// count reads a list's length, refused when the rest of the checkpoint
// cannot hold that many entries of at least size bytes.
func (d *decoder) count(size int) int {
	n := int(d.u32())
	if d.err == nil && n > len(d.buf)/size {
		d.err = fmt.Errorf("a list of %d entries in %d bytes", n, len(d.buf))
		return 0
	}
	return n
}
