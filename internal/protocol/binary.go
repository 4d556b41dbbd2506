package protocol

import (
	"cmp"
	"encoding/binary"
	"encoding/json"
	"errors"
	"math"
	"slices"
)

// Binary snapshot layout (docs/protocol.md has it byte by byte):
//
//	magic version mode uvarint(tick) uvarint(baseTick) uvarint(ackSeq)
//	uvarint(removals) removals x uvarint(id delta)
//	uvarint(upserts)  upserts  x [uvarint(id delta << 1 | moveOnly) (flags fields... | dx dy)]
//	[uvarint(inventory length) inventory JSON]  (when the mode byte has binaryHasInventory)
//
// A record whose head has the low bit set is a move step and nothing else,
// the commonest record in a crowd: 3 bytes with no flags byte.
//
// Removals come before upserts so that the decoder can merge the base, the
// removals and the upserts in one pass without buffering either list.

// PositionScale is the number of quantization steps per world unit: binary
// snapshots carry positions as uint16 = round(v * PositionScale), so 1/16
// unit over maps of at most 4096 units.
const PositionScale = 16

// Binary snapshot framing constants.
const (
	// BinaryMagic is the first byte of every binary snapshot ('R').
	BinaryMagic byte = 0x52
	// BinaryVersion is the second byte; it changes with any layout change.
	BinaryVersion byte = 5
	// BinaryModeFull marks a snapshot that lists every entity in view.
	BinaryModeFull byte = 0
	// BinaryModeDelta marks a snapshot that holds only changes against the
	// snapshot at BaseTick.
	BinaryModeDelta byte = 1
	// binaryHasInventory is the bit of the mode byte that says the
	// inventory channel ends the snapshot.
	binaryHasInventory byte = 2
)

// Field flags of an upsert record: which fields follow the flags byte.
const (
	fieldKind byte = 1 << iota
	fieldX
	fieldY
	fieldHP
	// fieldMove replaces fieldX and fieldY for an entity already in the
	// base that moved less than 128 quantization steps on each axis: two
	// int8 steps instead of two uint16 positions. Most moving entities in
	// a delta moved only a little since the acknowledged snapshot.
	fieldMove
	fieldState
	fieldTarget
	// fieldsAll are the fields a new entity always carries; state and
	// target come with it when they are not 0.
	fieldsAll = fieldKind | fieldX | fieldY | fieldHP
	// fieldsExtra are the fields declared in extraFields (fields.go).
	fieldsExtra = fieldHP | fieldState | fieldTarget
	fieldsAny   = fieldsAll | fieldMove | fieldsExtra
)

// moveOnly is the low bit of a record's head: the record is a move step
// (two int8) with no flags byte.
const moveOnly = 1

// minUpsertBytes is the smallest upsert record (head and flags); it
// bounds the count a decoder believes before it allocates.
const minUpsertBytes = 2

// BinaryHeader is the header of a binary snapshot.
type BinaryHeader struct {
	// Mode is BinaryModeFull or BinaryModeDelta. AppendBinarySnapshot
	// ignores it on input: the mode follows from base and BaseTick.
	Mode byte
	// Tick is the simulation tick the snapshot shows.
	Tick uint64
	// BaseTick is the acknowledged snapshot a delta applies to; 0 in full mode.
	BaseTick uint64
	// AckSeq is the last input sequence the server applied, for client-side
	// reconciliation.
	AckSeq uint32
	// Inventory is the receiving player's inventory channel (see
	// Snapshot.Inventory), carried after the entities and flagged in the
	// mode byte; nil when not sent.
	Inventory *Inventory
}

// Quantize maps a world coordinate to its wire form, round(v *
// PositionScale) clamped to [0, 65535]; NaN maps to 0.
func Quantize(v float32) uint16 {
	f := float64(v) * PositionScale
	if !(f > 0) { // also catches NaN
		return 0
	}
	if f >= math.MaxUint16 {
		return math.MaxUint16
	}
	return uint16(f + 0.5)
}

// Dequantize maps a wire coordinate back to world units; it is exact, so
// Quantize(Dequantize(q)) == q.
func Dequantize(q uint16) float32 {
	return float32(q) / PositionScale
}

// AppendBinarySnapshot appends the encoding of cur to dst and returns the
// extended slice. With base == nil or h.BaseTick == 0 it writes a full
// snapshot; otherwise a delta against base (the snapshot at h.BaseTick)
// that holds the entities of cur that are new or whose kind, quantized
// position or hp changed, with only the changed fields, and the IDs of base
// that are gone from cur. base and cur must be sorted by ascending ID
// without duplicates. It does not allocate when dst has enough capacity.
func AppendBinarySnapshot(dst []byte, h BinaryHeader, base, cur []WireState) []byte {
	if base == nil || h.BaseTick == 0 {
		h.Mode, h.BaseTick, base = BinaryModeFull, 0, nil
	} else {
		h.Mode = BinaryModeDelta
	}
	dst = AppendBinaryBody(AppendBinaryHeader(dst, h), base, cur)
	return AppendBinaryInventory(dst, h.Inventory)
}

// AppendBinaryInventory appends the snapshot's last part, when inv is not
// nil (and AppendBinaryHeader flagged it): the inventory channel as JSON
// behind its length. It is a player's own and changes seldom, so it is not
// worth a binary layout.
func AppendBinaryInventory(dst []byte, inv *Inventory) []byte {
	if inv == nil {
		return dst
	}
	data, _ := json.Marshal(inv) // plain structs: cannot fail
	return append(binary.AppendUvarint(dst, uint64(len(data))), data...)
}

// AppendBinaryHeader appends h, its Mode as given: magic, version, mode,
// tick, baseTick and ackSeq. With AppendBinaryBody it lets a server encode
// the body once for every client that gets the same entities against the
// same base, and only the header (their AckSeq differs) per client.
func AppendBinaryHeader(dst []byte, h BinaryHeader) []byte {
	mode := h.Mode
	if h.Inventory != nil {
		mode |= binaryHasInventory
	}
	dst = append(dst, BinaryMagic, BinaryVersion, mode)
	dst = binary.AppendUvarint(dst, h.Tick)
	dst = binary.AppendUvarint(dst, h.BaseTick)
	return binary.AppendUvarint(dst, uint64(h.AckSeq))
}

// AppendBinaryBody appends what follows the header: the removals and the
// upserts of cur against base, or every entity of cur when base is nil
// (a full snapshot). The same rules as AppendBinarySnapshot apply.
func AppendBinaryBody(dst []byte, base, cur []WireState) []byte {
	removalsAt := len(dst)
	dst = append(dst, 0) // removal count; most deltas remove nothing
	dst, removed := appendUpserts(dst, base, cur)
	if removed != 0 {
		dst = insertRemovals(dst, removalsAt, removed, base, cur)
	}
	return dst
}

// appendUpserts writes the count and the records of cur entities that are
// new or changed against base (all of them when base is empty). It also
// counts the base entities missing from cur, so that the common delta
// without removals takes a single pass over both lists.
func appendUpserts(dst []byte, base, cur []WireState) ([]byte, uint64) {
	countAt := len(dst)
	dst = append(dst, 0) // count placeholder, see patchCount
	var n, removed uint64
	var prev uint32
	j := 0
	for i := range cur {
		c := &cur[i]
		for j < len(base) && base[j].ID < c.ID {
			j++
			removed++
		}
		var flags byte
		var qx, qy uint16
		if j < len(base) && base[j].ID == c.ID {
			j++ // matched: neither removed nor looked at again
			if flags, qx, qy = changedFields(&base[j-1], c); flags == 0 {
				continue
			}
			if (base[j-1].extras()^c.extras())>>8 != 0 { // more than hit points (the low byte) changed
				flags = flags&^fieldHP | changedExtras(&base[j-1], c)
			}
			flags, qx, qy = smallMove(&base[j-1], flags, qx, qy)
		} else {
			flags, qx, qy = fieldsAll, c.X, c.Y
			if c.extras()>>8 != 0 { // more than hit points (the low byte)
				flags |= nonZeroExtras(c)
			}
		}
		dst = appendRecord(dst, idDelta(c.ID, prev, n), flags, c, qx, qy)
		prev = c.ID
		n++
	}
	removed += uint64(len(base) - j)
	return patchCount(dst, countAt, n), removed
}

// insertRemovals writes the n removed IDs into the removal list whose
// zero count stands at dst[at], before the upserts that follow it. The IDs
// are appended and rotated into place, which needs no scratch memory.
func insertRemovals(dst []byte, at int, n uint64, base, cur []WireState) []byte {
	upserts := len(dst) - (at + 1)
	dst = appendRemovalIDs(dst, base, cur)
	rotateLeft(dst[at+1:], upserts)
	return patchCount(dst, at, n)
}

// appendRemovalIDs writes the delta-coded IDs of base entities missing
// from cur.
func appendRemovalIDs(dst []byte, base, cur []WireState) []byte {
	var n uint64
	var prev uint32
	j := 0
	for i := range base {
		id := base[i].ID
		for j < len(cur) && cur[j].ID < id {
			j++
		}
		if j < len(cur) && cur[j].ID == id {
			continue
		}
		dst = binary.AppendUvarint(dst, uint64(idDelta(id, prev, n)))
		prev = id
		n++
	}
	return dst
}

// rotateLeft moves s[k:] to the front of s, in place.
func rotateLeft(s []byte, k int) {
	slices.Reverse(s[:k])
	slices.Reverse(s[k:])
	slices.Reverse(s)
}

// idDelta codes an ID against the previous one in its list; the first ID of
// a list (n == 0) is written as is.
func idDelta(id, prev uint32, n uint64) uint32 {
	if n == 0 {
		return id
	}
	return id - prev
}

// changedFields compares what a client has of b with c, and returns c's
// quantized coordinates for the fields that changed.
func changedFields(b, c *WireState) (f byte, qx, qy uint16) {
	if b.Kind != c.Kind {
		f |= fieldKind
	}
	if b.X != c.X {
		f |= fieldX
	}
	if b.Y != c.Y {
		f |= fieldY
	}
	if b.extras() != c.extras() {
		f |= fieldHP // or other extra fields: appendUpserts tells which
	}
	return f, c.X, c.Y
}

// smallMove turns a changed position into a fieldMove step when both axes
// moved less than 128 quantization steps; qx and qy then hold the int8
// steps.
func smallMove(b *WireState, flags byte, qx, qy uint16) (byte, uint16, uint16) {
	if flags&(fieldX|fieldY) == 0 {
		return flags, qx, qy
	}
	dx, dy := int32(qx)-int32(b.X), int32(qy)-int32(b.Y)
	if dx < -128 || dx > 127 || dy < -128 || dy > 127 {
		return flags, qx, qy
	}
	return flags&^(fieldX|fieldY) | fieldMove, uint16(int8(dx)) & 0xff, uint16(int8(dy)) & 0xff
}

// appendRecord writes one upsert record; qx and qy are c's quantized
// coordinates, or its int8 steps with fieldMove (only those flags names
// are used).
func appendRecord(dst []byte, delta uint32, flags byte, c *WireState, qx, qy uint16) []byte {
	if flags == fieldMove {
		dst = binary.AppendUvarint(dst, uint64(delta)<<1|moveOnly)
		return append(dst, byte(qx), byte(qy))
	}
	dst = binary.AppendUvarint(dst, uint64(delta)<<1)
	dst = append(dst, flags)
	if flags&fieldKind != 0 {
		dst = append(dst, byte(c.Kind))
	}
	if flags&fieldX != 0 {
		dst = binary.LittleEndian.AppendUint16(dst, qx)
	}
	if flags&fieldY != 0 {
		dst = binary.LittleEndian.AppendUint16(dst, qy)
	}
	if flags&fieldMove != 0 {
		dst = append(dst, byte(qx), byte(qy))
	}
	switch flags & fieldsExtra {
	case 0:
	case fieldHP: // the usual case, inline
		dst = append(dst, c.HP)
	default:
		dst = appendExtras(dst, flags, c)
	}
	return dst
}

// patchCount stores n as a uvarint in the one-byte placeholder at dst[at].
// Counts below 128 (the usual case) fit; larger ones shift the list right,
// which is cheaper than counting every list twice.
func patchCount(dst []byte, at int, n uint64) []byte {
	if n < 0x80 {
		dst[at] = byte(n)
		return dst
	}
	var tmp [binary.MaxVarintLen64]byte
	w := binary.PutUvarint(tmp[:], n)
	end := len(dst)
	dst = append(dst, tmp[:w-1]...) // grow by the extra bytes
	copy(dst[at+w:], dst[at+1:end])
	copy(dst[at:], tmp[:w])
	return dst
}

// DecodeBinarySnapshot decodes data. A full snapshot's entities are
// appended to out; a delta is applied to base (the client's copy of the
// snapshot at the returned BaseTick, sorted by ID) and the complete
// resulting list, sorted by ID, is appended to out. out must not share
// memory with base. Malformed input (truncation, bad magic, version or
// mode, unsorted or duplicate IDs, counts the remaining bytes cannot hold,
// removals of IDs not in base, trailing bytes) yields a *ProtocolError
// with CodeBadRequest and out unchanged. It never panics and grows out by
// at most len(base) + len(data)/2 entities.
func DecodeBinarySnapshot(data []byte, base []EntityState, out []EntityState) (BinaryHeader, []EntityState, error) {
	start := len(out)
	r := reader{buf: data}
	h, hasInventory := r.header()
	rm := r.removals()
	ups := idCursor{name: "upsert id", left: r.count(minUpsertBytes, "upsert count")}
	if r.err == nil && h.Mode == BinaryModeFull && rm.ids.left != 0 {
		r.fail("full snapshot with removals")
	}
	if r.err != nil {
		return BinaryHeader{}, out[:start], r.err
	}
	if h.Mode == BinaryModeFull {
		base = nil
	}
	out = slices.Grow(out, len(base)+int(ups.left))
	out = r.merge(base, &rm, &ups, out)
	if hasInventory {
		h.Inventory = r.inventory()
	}
	if r.err == nil && len(r.buf) != 0 {
		r.fail("%d trailing bytes", len(r.buf))
	}
	if r.err != nil {
		return BinaryHeader{}, out[:start], r.err
	}
	return h, out, nil
}

// inventory reads the inventory channel at the end of a snapshot.
func (r *reader) inventory() *Inventory {
	n := r.count(1, "inventory length")
	if r.err != nil {
		return nil
	}
	data := r.buf[:n]
	r.buf = r.buf[n:]
	var inv Inventory
	if err := UnmarshalStrict(data, &inv, "inventory"); err != nil {
		msg := err.Error()
		if pe, ok := errors.AsType[*ProtocolError](err); ok {
			msg = pe.Message // "inventory: ...", without the code
		}
		r.fail("%s", msg)
		return nil
	}
	return &inv
}

// reader consumes a binary snapshot. The first error sticks: later reads
// return zero values, so callers check r.err once after a step.
type reader struct {
	buf []byte
	err *ProtocolError
	// what names the frame in errors; "" is a binary snapshot.
	what string
}

// fail records the first error.
func (r *reader) fail(format string, args ...any) {
	if r.err == nil {
		r.err = Errorf(CodeBadRequest, cmp.Or(r.what, "binary snapshot")+": "+format, args...)
	}
}

// byte1 reads one byte.
func (r *reader) byte1(what string) byte {
	if r.err != nil {
		return 0
	}
	if len(r.buf) < 1 {
		r.fail("truncated at %s", what)
		return 0
	}
	b := r.buf[0]
	r.buf = r.buf[1:]
	return b
}

// uint16le reads a little-endian uint16.
func (r *reader) uint16le(what string) uint16 {
	if r.err != nil {
		return 0
	}
	if len(r.buf) < 2 {
		r.fail("truncated at %s", what)
		return 0
	}
	v := binary.LittleEndian.Uint16(r.buf)
	r.buf = r.buf[2:]
	return v
}

// uvarint reads an unsigned varint.
func (r *reader) uvarint(what string) uint64 {
	if r.err != nil {
		return 0
	}
	v, n := binary.Uvarint(r.buf)
	if n <= 0 {
		r.fail("bad or truncated varint at %s", what)
		return 0
	}
	r.buf = r.buf[n:]
	return v
}

// header reads and checks the fixed part of a snapshot, and whether the
// inventory channel ends it.
func (r *reader) header() (BinaryHeader, bool) {
	if magic := r.byte1("magic"); r.err == nil && magic != BinaryMagic {
		r.fail("bad magic 0x%02x", magic)
	}
	if v := r.byte1("version"); r.err == nil && v != BinaryVersion {
		r.fail("unsupported version %d", v)
	}
	mode := r.byte1("mode")
	h := BinaryHeader{Mode: mode &^ binaryHasInventory}
	h.Tick = r.uvarint("tick")
	h.BaseTick = r.uvarint("baseTick")
	ack := r.uvarint("ackSeq")
	if ack > math.MaxUint32 {
		r.fail("ackSeq %d overflows uint32", ack)
	}
	h.AckSeq = uint32(ack)
	switch {
	case r.err != nil:
	case h.Mode > BinaryModeDelta:
		r.fail("unknown mode %d", h.Mode)
	case h.Mode == BinaryModeFull && h.BaseTick != 0:
		r.fail("full snapshot with baseTick %d", h.BaseTick)
	case h.Mode == BinaryModeDelta && h.BaseTick == 0:
		r.fail("delta snapshot without baseTick")
	}
	return h, mode&binaryHasInventory != 0
}

// count reads a list length (what names it in errors) and refuses one
// that the remaining bytes cannot hold at minBytes per element, so that no
// input makes the decoder allocate more than it sent.
func (r *reader) count(minBytes int, what string) uint64 {
	n := r.uvarint(what)
	if r.err == nil && n > uint64(len(r.buf)/minBytes) {
		r.fail("%s %d exceeds the %d bytes left", what, n, len(r.buf))
	}
	return n
}

// idList is a delta-coded ID list with its own reader, so that the merge
// can walk it while the main reader walks the upserts after it.
type idList struct {
	r   reader
	ids idCursor
}

// next returns the list's next ID.
func (l *idList) next() (uint32, bool) {
	return l.ids.next(&l.r)
}

// removals validates the removal list, moves r past it and returns a list
// positioned at its start for the merge.
func (r *reader) removals() idList {
	n := r.count(1, "removal count")
	if r.err != nil {
		return idList{}
	}
	l := idList{r: reader{buf: r.buf}, ids: idCursor{name: "removal id", left: n}}
	scan := l
	for scan.ids.left > 0 && scan.r.err == nil {
		scan.next()
	}
	r.buf, r.err = scan.r.buf, scan.r.err
	return l
}

// idCursor decodes a strictly ascending ID list: the first ID as is, each
// later one as the (non-zero) difference to its predecessor.
type idCursor struct {
	name    string // for errors: "upsert id", "removal id"
	left    uint64
	prev    uint32
	started bool
}

// next reads the next ID from r; false when the list is done or r failed.
func (c *idCursor) next(r *reader) (uint32, bool) {
	if c.left == 0 || r.err != nil {
		return 0, false
	}
	return c.step(r, r.uvarint(c.name))
}

// step moves the cursor by the ID difference d, read by the caller.
func (c *idCursor) step(r *reader, d uint64) (uint32, bool) {
	switch {
	case r.err != nil:
		return 0, false
	case c.started && d == 0:
		r.fail("duplicate %s %d", c.name, c.prev)
		return 0, false
	case d > uint64(math.MaxUint32-c.prev):
		r.fail("%s overflows uint32", c.name)
		return 0, false
	}
	c.left--
	c.prev += uint32(d)
	c.started = true
	return c.prev, true
}

// upsertHead reads the ID and flags of the next upsert record; the fields
// that follow are read by applyFields straight into their destination.
// ok is false past the last record or on error.
func (r *reader) upsertHead(ids *idCursor) (id uint32, flags byte, ok bool) {
	if ids.left == 0 || r.err != nil {
		return 0, 0, false
	}
	head := r.uvarint(ids.name)
	if id, ok = ids.step(r, head>>1); !ok {
		return 0, 0, false
	}
	if head&moveOnly != 0 {
		return id, fieldMove, true
	}
	flags = r.byte1("flags")
	if r.err == nil && flags&^fieldsAny != 0 {
		r.fail("entity %d: unknown flags 0x%02x", id, flags)
	}
	if r.err == nil && flags&fieldMove != 0 && flags&(fieldX|fieldY) != 0 {
		r.fail("entity %d: a move step together with a position", id)
	}
	return id, flags, r.err == nil
}

// applyFields reads the fields flags names into e.
func (r *reader) applyFields(e *EntityState, flags byte) {
	if flags&fieldKind != 0 {
		e.Kind = EntityKind(r.byte1("kind"))
	}
	if flags&fieldX != 0 {
		e.X = Dequantize(r.uint16le("x"))
	}
	if flags&fieldY != 0 {
		e.Y = Dequantize(r.uint16le("y"))
	}
	if flags&fieldMove != 0 {
		e.X = r.step(e.X, "x step")
		e.Y = r.step(e.Y, "y step")
	}
	if flags&fieldsExtra != 0 {
		r.readExtras(e, flags)
	}
}

// step reads an int8 move step and applies it to the quantized v.
func (r *reader) step(v float32, what string) float32 {
	q := int32(Quantize(v)) + int32(int8(r.byte1(what)))
	if r.err == nil && (q < 0 || q > math.MaxUint16) {
		r.fail("%s moves off the quantized range", what)
	}
	return Dequantize(uint16(q))
}

// merge walks base, the removals and the upserts in ID order and appends
// the resulting entity list to out. Every removal must name a base entity
// that is not also upserted; an upsert of a base entity changes at least one
// field; an upsert of a new entity carries all of them. Fields are decoded
// in place in out, which keeps the hot loop free of struct copies.
func (r *reader) merge(base []EntityState, rm *idList, ups *idCursor, out []EntityState) []EntityState {
	uid, flags, haveU := r.upsertHead(ups)
	rid, haveR := rm.next()
	for i := 0; r.err == nil && (haveU || i < len(base)); {
		if i > 0 && i < len(base) && base[i].ID <= base[i-1].ID {
			r.fail("base is not sorted by id at %d", base[i].ID)
			break
		}
		if i < len(base) && (!haveU || base[i].ID < uid) {
			switch {
			case haveR && rid == base[i].ID:
				rid, haveR = rm.next()
			case haveR && rid < base[i].ID:
				r.fail("removal of id %d that is not in base", rid)
			default:
				out = append(out, base[i])
			}
			i++
			continue
		}
		if haveR && rid <= uid {
			r.fail("removal of id %d that is not in base or is also upserted", rid)
			break
		}
		if i < len(base) && base[i].ID == uid {
			out = r.appendUpdate(out, base[i], flags)
			i++
		} else {
			out = r.appendNew(out, uid, flags)
		}
		uid, flags, haveU = r.upsertHead(ups)
	}
	if r.err == nil && haveR {
		r.fail("removal of id %d that is not in base", rid)
	}
	return out
}

// appendUpdate appends b with the fields of the current record applied.
func (r *reader) appendUpdate(out []EntityState, b EntityState, flags byte) []EntityState {
	if flags == 0 {
		r.fail("entity %d: update without fields", b.ID)
	}
	out = append(out, b)
	r.applyFields(&out[len(out)-1], flags)
	return out
}

// appendNew appends a new entity, which must carry kind, position and hp
// (and may carry the other fields, 0 when it does not).
func (r *reader) appendNew(out []EntityState, id uint32, flags byte) []EntityState {
	if flags&fieldsAll != fieldsAll || flags&fieldMove != 0 {
		r.fail("new entity %d without all fields (flags 0x%02x)", id, flags)
	}
	out = append(out, EntityState{ID: id})
	r.applyFields(&out[len(out)-1], flags)
	return out
}
