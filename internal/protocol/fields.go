package protocol

import (
	"encoding/binary"
	"math"
)

// Fields of an entity beyond its id, kind and position are declared once,
// here, in wire order: the binary codec writes, compares and reads them
// from this table, and the JSON snapshot groups them into its channels
// (Channel). A new visible field is one line here, a field of WireState
// and EntityState, and its JSON channel; TestEveryFieldRoundTrips holds
// both codecs to the table.
type extraField struct {
	flag byte
	name string
	// varint fields are a uvarint on the wire, the others one byte.
	varint bool
	get    func(*WireState) uint32
	set    func(*EntityState, uint32)
}

var extraFields = [...]extraField{
	{flag: fieldHP, name: "hp",
		get: func(w *WireState) uint32 { return uint32(w.HP) }, set: func(e *EntityState, v uint32) { e.HP = uint8(v) }},
	{flag: fieldState, name: "state",
		get: func(w *WireState) uint32 { return uint32(w.State) }, set: func(e *EntityState, v uint32) { e.State = uint8(v) }},
	{flag: fieldTarget, name: "target", varint: true,
		get: func(w *WireState) uint32 { return w.Target }, set: func(e *EntityState, v uint32) { e.Target = v }},
}

// extras packs the extra fields, so that the common case, none changed,
// is one comparison.
func (w *WireState) extras() uint64 {
	return uint64(w.HP) | uint64(w.State)<<8 | uint64(w.Target)<<16
}

// changedExtras flags the extra fields that differ between b and c.
func changedExtras(b, c *WireState) byte {
	var f byte
	for i := range extraFields {
		if x := &extraFields[i]; x.get(b) != x.get(c) {
			f |= x.flag
		}
	}
	return f
}

// ExtrasChanged reports whether any field of the table differs between
// b and c: what puts an entity in a JSON delta's channels, so that a new
// field is never missed there.
func ExtrasChanged(b, c WireState) bool { return changedExtras(&b, &c) != 0 }

// nonZeroExtras flags the optional extra fields of a new entity that are
// not 0 (hp is always sent).
func nonZeroExtras(c *WireState) byte {
	var f byte
	for i := range extraFields {
		if x := &extraFields[i]; x.flag&fieldsAll == 0 && x.get(c) != 0 {
			f |= x.flag
		}
	}
	return f
}

// appendExtras writes c's extra fields that flags names.
func appendExtras(dst []byte, flags byte, c *WireState) []byte {
	for i := range extraFields {
		x := &extraFields[i]
		switch {
		case flags&x.flag == 0:
		case x.varint:
			dst = binary.AppendUvarint(dst, uint64(x.get(c)))
		default:
			dst = append(dst, byte(x.get(c)))
		}
	}
	return dst
}

// readExtras reads the extra fields flags names into e.
func (r *reader) readExtras(e *EntityState, flags byte) {
	if flags&fieldsExtra == fieldHP {
		e.HP = r.byte1("hp") // the usual case, without the table's calls
		return
	}
	for i := range extraFields {
		x := &extraFields[i]
		switch {
		case flags&x.flag == 0:
		case x.varint:
			v := r.uvarint(x.name)
			if r.err == nil && v > math.MaxUint32 {
				r.fail("entity %d: %s %d overflows uint32", e.ID, x.name, v)
			}
			x.set(e, uint32(v))
		default:
			x.set(e, uint32(r.byte1(x.name)))
		}
	}
}
