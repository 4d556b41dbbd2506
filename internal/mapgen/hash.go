package mapgen

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"hash"
)

// hashFormat opens the canonical encoding; bump it whenever the encoding or
// the generator's output for an existing config changes, so clients and
// servers of different versions see different hashes instead of silently
// different worlds.
const hashFormat = "roomkeeper.mapgen.v2"

// canonicalHash returns the hex SHA-256 of w's canonical encoding:
//
//	string  hashFormat
//	i64     seed; i32 width, height; string biome
//	u32 n,  then per collider: u32 id, string kind, i32 x, y, w, h
//	u32 n,  then per prop:     u32 id, string kind, i32 x, y
//	u32 n,  then per portal:   u32 id, string to, i32 x, y, radius
//	i32     player spawn x, y
//	u32 n,  then per NPC spawn:  i32 x, y
//	u32 n,  then per loot spawn: i32 x, y
//	u32 n,  then per extra player spawn: i32 x, y (only when n > 0)
//	u32 n,  then per room: u32 id, string role, i32 x, y, w, h;
//	u32 n,  then per door: u32 id, u32 room, u8 locked, i32 x, y, w, h
//	        (both only when the map has rooms)
//
// Integers are little-endian, strings a u32 byte length and the bytes. The
// densities are floats and are left out; the spawn lists they produce are
// in. The grid is left out because the colliders determine it.
func canonicalHash(w *World) string {
	e := encoder{h: sha256.New()}
	e.str(hashFormat)
	e.i64(w.Config.Seed)
	e.i32(w.Width)
	e.i32(w.Height)
	e.str(w.Config.Biome)
	e.u32(uint32(len(w.Colliders)))
	for _, c := range w.Colliders {
		e.u32(c.ID)
		e.str(c.Kind)
		e.i32(c.Rect.X)
		e.i32(c.Rect.Y)
		e.i32(c.Rect.W)
		e.i32(c.Rect.H)
	}
	e.u32(uint32(len(w.Props)))
	for _, p := range w.Props {
		e.u32(p.ID)
		e.str(p.Kind)
		e.point(Point{X: p.X, Y: p.Y})
	}
	e.u32(uint32(len(w.Portals)))
	for _, p := range w.Portals {
		e.u32(p.ID)
		e.str(p.To)
		e.point(Point{X: p.X, Y: p.Y})
		e.i32(p.Radius)
	}
	e.point(w.PlayerSpawn)
	e.points(w.NPCSpawns)
	e.points(w.LootSpawns)
	if len(w.PlayerSpawns) > 1 { // so maps of one spawn point keep their hash
		e.points(w.PlayerSpawns[1:])
	}
	if len(w.Rooms) > 0 {
		e.rooms(w.Rooms, w.Doors)
	}
	return e.sum()
}

// rooms encodes a dungeon's rooms and doors.
func (e *encoder) rooms(rooms []Room, doors []Door) {
	e.u32(uint32(len(rooms)))
	for _, r := range rooms {
		e.u32(r.ID)
		e.str(r.Role)
		e.rect(r.Rect)
	}
	e.u32(uint32(len(doors)))
	for _, d := range doors {
		e.u32(d.ID)
		e.u32(uint32(d.Room))
		locked := byte(0)
		if d.Locked {
			locked = 1
		}
		e.buf = append(e.buf, locked)
		e.rect(d.Rect)
	}
}

// encoder buffers the canonical encoding and feeds it to the hash in
// chunks, so hashing a large world does not build the whole encoding.
type encoder struct {
	h   hash.Hash
	buf []byte
}

const encoderChunk = 16 << 10

func (e *encoder) flushIfFull() {
	if len(e.buf) >= encoderChunk {
		e.h.Write(e.buf)
		e.buf = e.buf[:0]
	}
}

func (e *encoder) u32(v uint32) {
	e.buf = binary.LittleEndian.AppendUint32(e.buf, v)
	e.flushIfFull()
}

func (e *encoder) i32(v int32) { e.u32(uint32(v)) }

func (e *encoder) i64(v int64) {
	e.buf = binary.LittleEndian.AppendUint64(e.buf, uint64(v))
	e.flushIfFull()
}

func (e *encoder) str(s string) {
	e.u32(uint32(len(s)))
	e.buf = append(e.buf, s...)
	e.flushIfFull()
}

func (e *encoder) point(p Point) {
	e.i32(p.X)
	e.i32(p.Y)
}

func (e *encoder) rect(r Rect) {
	e.i32(r.X)
	e.i32(r.Y)
	e.i32(r.W)
	e.i32(r.H)
}

func (e *encoder) points(ps []Point) {
	e.u32(uint32(len(ps)))
	for _, p := range ps {
		e.point(p)
	}
}

func (e *encoder) sum() string {
	e.h.Write(e.buf)
	return hex.EncodeToString(e.h.Sum(nil))
}
