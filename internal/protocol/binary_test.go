package protocol_test

import (
	"encoding/binary"
	"math"
	"reflect"
	"slices"
	"testing"

	"github.com/roomkeeper/roomkeeper/internal/protocol"
)

// ent builds an EntityState.
func ent(id uint32, kind protocol.EntityKind, x, y float32, hp uint8) protocol.EntityState {
	return protocol.EntityState{ID: id, Kind: kind, X: x, Y: y, HP: hp}
}

// wire returns what the server sends of list (nil stays nil: no base).
func wire(list []protocol.EntityState) []protocol.WireState {
	if list == nil {
		return nil
	}
	out := make([]protocol.WireState, len(list))
	for i, e := range list {
		out[i] = e.Wire()
	}
	return out
}

// quantized returns what a client decodes of list: positions on the
// 1/PositionScale grid.
func quantized(list []protocol.EntityState) []protocol.EntityState {
	out := slices.Clone(list)
	for i := range out {
		out[i].X = protocol.Dequantize(protocol.Quantize(out[i].X))
		out[i].Y = protocol.Dequantize(protocol.Quantize(out[i].Y))
	}
	return out
}

// roundTrip encodes cur (as a delta against base when baseTick != 0),
// decodes it against the client's quantized copy of base and checks the
// header and that the result equals cur quantized. It returns the encoding.
func roundTrip(t *testing.T, h protocol.BinaryHeader, base, cur []protocol.EntityState) []byte {
	t.Helper()
	data := protocol.AppendBinarySnapshot(nil, h, wire(base), wire(cur))
	gotH, got, err := protocol.DecodeBinarySnapshot(data, quantized(base), nil)
	if err != nil {
		t.Fatalf("decode: %v (data % x)", err, data)
	}
	wantH := h
	wantH.Mode = protocol.BinaryModeDelta
	if base == nil || h.BaseTick == 0 {
		wantH.Mode, wantH.BaseTick = protocol.BinaryModeFull, 0
	}
	if gotH != wantH {
		t.Errorf("header = %+v, want %+v", gotH, wantH)
	}
	if want := quantized(cur); !slices.Equal(got, want) && len(got)+len(want) != 0 {
		t.Errorf("entities =\n%+v\nwant\n%+v", got, want)
	}
	return data
}

func TestQuantize(t *testing.T) {
	tests := []struct {
		v    float32
		want uint16
	}{
		{0, 0},
		{-1, 0},
		{float32(math.NaN()), 0},
		{float32(math.Inf(-1)), 0},
		{1.0 / 16, 1},
		{0.03, 0},     // 0.48 steps
		{0.032, 1},    // 0.512 steps
		{1.03125, 17}, // 16.5 steps rounds up
		{100.25, 1604},
		{4095.9375, 65535},
		{4096, 65535},
		{1e30, 65535},
		{float32(math.Inf(1)), 65535},
	}
	for _, tt := range tests {
		if got := protocol.Quantize(tt.v); got != tt.want {
			t.Errorf("Quantize(%v) = %d, want %d", tt.v, got, tt.want)
		}
	}
	for q := 0; q <= math.MaxUint16; q++ {
		if got := protocol.Quantize(protocol.Dequantize(uint16(q))); got != uint16(q) {
			t.Fatalf("Quantize(Dequantize(%d)) = %d", q, got)
		}
	}
}

// sampleBase is a small snapshot with every entity kind.
func sampleBase() []protocol.EntityState {
	return []protocol.EntityState{
		ent(1, protocol.EntityPlayer, 10, 20, 100),
		ent(2, protocol.EntityNPC, 11.3, 20.7, 50),
		ent(5, protocol.EntityLoot, 12, 22, 0),
		ent(9, protocol.EntityDoor, 30, 30, 1),
		ent(130, protocol.EntityNPC, 4000, 0.01, 80),
		ent(1000, protocol.EntityNPC, 7, 7, 7),
	}
}

func TestBinaryFullRoundTrip(t *testing.T) {
	h := protocol.BinaryHeader{Tick: 1234567, AckSeq: 99}
	roundTrip(t, h, nil, sampleBase())
	// A base with BaseTick 0 still means full.
	roundTrip(t, h, sampleBase(), sampleBase())
	// Out-of-range positions are clamped, not wrapped.
	roundTrip(t, h, nil, []protocol.EntityState{ent(3, protocol.EntityNPC, -5, 9999, 1)})
}

func TestBinaryDeltaRoundTrip(t *testing.T) {
	base := sampleBase()
	cur := []protocol.EntityState{
		ent(1, protocol.EntityPlayer, 10.5, 20, 100), // moved along x
		ent(2, protocol.EntityNPC, 11.3, 20.7, 45),   // hp changed
		ent(3, protocol.EntityLoot, 1, 2, 0),         // new
		// 5 removed
		ent(9, protocol.EntityNPC, 30, 31, 1),         // kind changed and moved along y
		ent(130, protocol.EntityNPC, 4000, 0.01, 80),  // unchanged
		ent(131, protocol.EntityPlayer, 0, 0, 100),    // new
		ent(1000, protocol.EntityNPC, 7.01, 6.99, 7),  // sub-quantum move
		ent(70000, protocol.EntityNPC, 4095, 4095, 3), // new, far id
	}
	h := protocol.BinaryHeader{Tick: 200, BaseTick: 190, AckSeq: 7}
	roundTrip(t, h, base, cur)
	roundTrip(t, h, cur, base) // and back: removals of the new ones
}

func TestBinaryDeltaSkipsUnchanged(t *testing.T) {
	h := protocol.BinaryHeader{Tick: 2, BaseTick: 1}
	base := sampleBase()
	empty := roundTrip(t, h, base, base)
	// magic version mode tick baseTick ackSeq removals upserts
	if len(empty) != 8 {
		t.Errorf("delta without changes is %d bytes (% x), want 8", len(empty), empty)
	}
	cur := slices.Clone(base)
	cur[3].X += 1.0 / 16              // one quantum on x: a move step
	cur[5].X += 0.01                  // below a quantum: not sent
	cur[5].Y -= 0.01                  // below a quantum: not sent
	one := roundTrip(t, h, base, cur) // a move-only record: uvarint(9<<1|1), dx, dy
	if len(one) != len(empty)+3 {
		t.Errorf("delta with one x move is %d bytes (% x), want %d", len(one), one, len(empty)+3)
	}
	full := roundTrip(t, protocol.BinaryHeader{Tick: 2}, nil, base)
	if len(full) <= len(one) {
		t.Errorf("full snapshot (%d bytes) is not larger than a one-entity delta (%d)", len(full), len(one))
	}
}

func TestBinaryEmptyLists(t *testing.T) {
	full := protocol.BinaryHeader{Tick: 1}
	delta := protocol.BinaryHeader{Tick: 2, BaseTick: 1}
	roundTrip(t, full, nil, nil)
	roundTrip(t, delta, []protocol.EntityState{}, nil)
	roundTrip(t, delta, []protocol.EntityState{}, sampleBase()) // empty base: every entity is new
	roundTrip(t, delta, sampleBase(), nil)                      // everything removed
	roundTrip(t, delta, sampleBase(), []protocol.EntityState{})
}

func TestBinaryIDsNear2To32(t *testing.T) {
	const top = math.MaxUint32
	base := []protocol.EntityState{
		ent(0, protocol.EntityDoor, 1, 1, 1),
		ent(top-5, protocol.EntityNPC, 2, 2, 2),
		ent(top-1, protocol.EntityNPC, 3, 3, 3),
		ent(top, protocol.EntityPlayer, 4, 4, 4),
	}
	cur := []protocol.EntityState{
		ent(top-5, protocol.EntityNPC, 2, 2, 2),
		ent(top-2, protocol.EntityLoot, 5, 5, 0),
		ent(top, protocol.EntityPlayer, 4, 4.5, 4),
	}
	roundTrip(t, protocol.BinaryHeader{Tick: 1, AckSeq: math.MaxUint32}, nil, base)
	roundTrip(t, protocol.BinaryHeader{Tick: math.MaxUint64, BaseTick: math.MaxUint64 - 1}, base, cur)
	roundTrip(t, protocol.BinaryHeader{Tick: 9, BaseTick: 8}, cur, base)
}

func TestBinaryLongLists(t *testing.T) {
	// Counts of 128 and more take a multi-byte uvarint, which the encoder
	// patches in after writing the list.
	base := make([]protocol.EntityState, 0, 600)
	for i := range 600 {
		base = append(base, ent(uint32(i*3+1), protocol.EntityNPC, float32(i), float32(i)/3, uint8(i)))
	}
	cur := make([]protocol.EntityState, 0, 700)
	for i, e := range base {
		switch i % 3 {
		case 0: // removed
		case 1:
			e.X += 2
			cur = append(cur, e)
		default:
			cur = append(cur, e)
		}
	}
	for i := range 200 {
		cur = append(cur, ent(uint32(5000+i), protocol.EntityLoot, 1, 1, 0))
	}
	roundTrip(t, protocol.BinaryHeader{Tick: 1}, nil, base)
	roundTrip(t, protocol.BinaryHeader{Tick: 2, BaseTick: 1}, base, cur)
	roundTrip(t, protocol.BinaryHeader{Tick: 3, BaseTick: 2}, cur, base)
}

func TestDecodeBinaryAppendsToOut(t *testing.T) {
	prefix := []protocol.EntityState{ent(77, protocol.EntityNPC, 1, 1, 1)}
	data := protocol.AppendBinarySnapshot(nil, protocol.BinaryHeader{Tick: 1}, nil, wire(sampleBase()))
	_, got, err := protocol.DecodeBinarySnapshot(data, nil, slices.Clone(prefix))
	if err != nil {
		t.Fatal(err)
	}
	if want := append(slices.Clone(prefix), quantized(sampleBase())...); !slices.Equal(got, want) {
		t.Errorf("got %+v, want %+v", got, want)
	}
	_, got, err = protocol.DecodeBinarySnapshot(data[:len(data)-1], nil, slices.Clone(prefix))
	if err == nil || !slices.Equal(got, prefix) {
		t.Errorf("on error out = %+v (err %v), want the prefix only", got, err)
	}
	dst := []byte{0xAA}
	if out := protocol.AppendBinarySnapshot(dst, protocol.BinaryHeader{Tick: 1}, nil, nil); out[0] != 0xAA || out[1] != protocol.BinaryMagic {
		t.Errorf("AppendBinarySnapshot did not append: % x", out)
	}
}

// frame builds a binary snapshot by hand, for malformed inputs.
type frame []byte

func (f frame) u(vs ...uint64) frame {
	for _, v := range vs {
		f = binary.AppendUvarint(f, v)
	}
	return f
}

func (f frame) b(bs ...byte) frame { return append(f, bs...) }

// hdr starts a frame with a good header.
func hdr(mode byte, tick, baseTick uint64) frame {
	return frame{protocol.BinaryMagic, protocol.BinaryVersion, mode}.u(tick, baseTick, 0)
}

// refusal is a malformed binary snapshot, the base it is decoded
// against and the part of the error message that names the fault.
type refusal struct {
	name string
	data frame
	base []protocol.EntityState
	msg  string
}

// refusals are the malformed snapshots every decoder must refuse; the
// wire vectors (vectors_test.go) hand them to the TypeScript SDK too.
func refusals() []refusal {
	const full, delta = protocol.BinaryModeFull, protocol.BinaryModeDelta
	const all = 0x0f
	rec := func(f frame, id uint64) frame { return f.u(id<<1).b(all, 1, 0, 0, 0, 0, 9) } // head: id << 1, flags follow
	base := []protocol.EntityState{ent(1, protocol.EntityNPC, 1, 1, 1), ent(4, protocol.EntityNPC, 2, 2, 2)}
	return []refusal{
		{"empty", frame{}, nil, "truncated at magic"},
		{"bad magic", frame{'{', protocol.BinaryVersion, full}.u(1, 0, 0, 0, 0), nil, "bad magic 0x7b"},
		{"bad version", frame{protocol.BinaryMagic, 9, full}.u(1, 0, 0, 0, 0), nil, "unsupported version 9"},
		{"bad mode", hdr(4, 1, 0).u(0, 0), nil, "unknown mode 4"},
		{"inventory flag without inventory", hdr(full|2, 1, 0).u(0, 0), nil, "truncated varint at inventory length"},
		{"inventory longer than the frame", hdr(full|2, 1, 0).u(0, 0, 5).b('{'), nil, "inventory length 5 exceeds the 1 bytes left"},
		{"inventory not JSON", hdr(full|2, 1, 0).u(0, 0, 2).b('x', 'y'), nil, "inventory"},
		{"inventory with an unknown field", hdr(delta|2, 2, 1).u(0, 0, 11).b([]byte(`{"bogus":1}`)...), base, "unknown field"},
		{"inventory then trailing bytes", hdr(full|2, 1, 0).u(0, 0, 2).b('{', '}', 0), nil, "1 trailing bytes"},
		{"full with baseTick", hdr(full, 2, 1).u(0, 0), nil, "full snapshot with baseTick"},
		{"delta without baseTick", hdr(delta, 2, 0).u(0, 0), nil, "delta snapshot without baseTick"},
		{"ackSeq overflow", frame{protocol.BinaryMagic, protocol.BinaryVersion, full}.u(1, 0, 1<<32, 0, 0), nil, "ackSeq"},
		{"varint overflow", frame{protocol.BinaryMagic, protocol.BinaryVersion, full}.b(0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01), nil, "bad or truncated varint at tick"},
		{"truncated header", hdr(full, 1, 0), nil, "removal count"},
		{"no upsert count", hdr(full, 1, 0).u(0), nil, "upsert count"},
		{"upsert count too large", hdr(full, 1, 0).u(0, 3).b(0, all), nil, "upsert count 3 exceeds the 2 bytes left"},
		{"huge upsert count", hdr(full, 1, 0).u(0, math.MaxUint64), nil, "exceeds"},
		{"removal count too large", hdr(delta, 2, 1).u(5, 1, 1), base, "removal count 5 exceeds"},
		{"truncated record", hdr(full, 1, 0).u(0, 1, 2).b(all, 1, 0, 0), nil, "truncated at y"},
		{"duplicate upsert id", rec(rec(hdr(full, 1, 0).u(0, 2), 7), 0), nil, "duplicate upsert id 7"},
		{"upsert id overflow", rec(rec(hdr(full, 1, 0).u(0, 2), math.MaxUint32), 1), nil, "upsert id overflows"},
		{"first id beyond uint32", rec(hdr(full, 1, 0).u(0, 1), 1<<32), nil, "upsert id overflows"},
		{"unknown flags", hdr(full, 1, 0).u(0, 1, 2).b(0x8f, 1, 0, 0, 0, 0, 9), nil, "unknown flags 0x8f"},
		{"target beyond uint32", hdr(full, 1, 0).u(0, 1, 2).b(0x4f, 1, 0, 0, 0, 0, 9).u(1 << 32), nil, "target 4294967296 overflows uint32"},
		{"truncated state", hdr(full, 1, 0).u(0, 1, 2).b(0x2f, 1, 0, 0, 0, 0, 9), nil, "truncated at state"},
		{"move step with a position", hdr(delta, 2, 1).u(0, 1, 2).b(0x12, 0, 0, 1, 1), base, "a move step together with a position"},
		{"move step on a new entity", hdr(delta, 2, 1).u(0, 1, 4).b(0x19, 2, 1, 1, 9), base, "without all fields"},
		{"move-only record on a new entity", hdr(delta, 2, 1).u(0, 1, 2<<1|1).b(1, 1), base, "new entity 2 without all fields (flags 0x10)"},
		{"truncated move-only record", hdr(delta, 2, 1).u(0, 1, 1<<1|1).b(1), base, "truncated at y step"},
		{"move step off the range", hdr(delta, 2, 1).u(0, 1, 1<<1|1).b(0x80, 0), []protocol.EntityState{ent(1, protocol.EntityNPC, 0, 0, 1)}, "moves off the quantized range"},
		{"full record without all fields", hdr(full, 1, 0).u(0, 1, 2).b(0x02, 1, 0), nil, "new entity 1 without all fields"},
		{"new entity without all fields", hdr(delta, 2, 1).u(0, 1, 4).b(0x08, 5), base, "new entity 2 without all fields"},
		{"update without fields", hdr(delta, 2, 1).u(0, 1, 8).b(0), base, "entity 4: update without fields"},
		{"full with removals", hdr(full, 1, 0).u(1, 4, 0), nil, "full snapshot with removals"},
		{"duplicate removal", hdr(delta, 2, 1).u(2, 1, 0, 0), base, "duplicate removal id 1"},
		{"removal of unknown id", hdr(delta, 2, 1).u(1, 2, 0), base, "removal of id 2"},
		{"removal past base", hdr(delta, 2, 1).u(1, 9, 0), base, "removal of id 9"},
		{"removal and upsert", hdr(delta, 2, 1).u(1, 4, 1, 8).b(0x08, 5), base, "removal of id 4"},
		{"removal of new upsert", hdr(delta, 2, 1).u(1, 3, 1, 6).b(all, 1, 0, 0, 0, 0, 5), base, "removal of id 3"},
		{"trailing bytes", hdr(full, 1, 0).u(0, 0).b(0), nil, "1 trailing bytes"},
		{"unsorted base", hdr(delta, 2, 1).u(0, 0), []protocol.EntityState{base[1], base[0]}, "base is not sorted"},
		{"duplicate in base", hdr(delta, 2, 1).u(0, 0), []protocol.EntityState{base[0], base[0]}, "base is not sorted"},
	}
}

func TestDecodeBinaryRefusals(t *testing.T) {
	for _, tt := range refusals() {
		t.Run(tt.name, func(t *testing.T) {
			h, out, err := protocol.DecodeBinarySnapshot(tt.data, tt.base, nil)
			wantCode(t, err, protocol.CodeBadRequest, tt.msg)
			if h != (protocol.BinaryHeader{}) || len(out) != 0 {
				t.Errorf("refused snapshot returned %+v, %+v", h, out)
			}
		})
	}
}

func TestDecodeBinaryEveryTruncation(t *testing.T) {
	base := sampleBase()
	cur := slices.Clone(base[1:])
	cur[0].HP = 3
	cur = append(cur, ent(5000, protocol.EntityLoot, 3, 3, 0))
	for _, data := range [][]byte{
		protocol.AppendBinarySnapshot(nil, protocol.BinaryHeader{Tick: 300, AckSeq: 1}, nil, wire(cur)),
		protocol.AppendBinarySnapshot(nil, protocol.BinaryHeader{Tick: 300, BaseTick: 299}, wire(base), wire(cur)),
	} {
		for n := range len(data) {
			if _, _, err := protocol.DecodeBinarySnapshot(data[:n], quantized(base), nil); err == nil {
				t.Errorf("prefix %d of % x decoded", n, data)
			}
		}
	}
}

func TestBinaryZeroAllocs(t *testing.T) {
	base, cur := benchLists()
	wbase, wcur := wire(base), wire(cur)
	h := protocol.BinaryHeader{Tick: 101, BaseTick: 100, AckSeq: 5}
	dst := make([]byte, 0, 4096)
	if n := testing.AllocsPerRun(100, func() {
		dst = protocol.AppendBinarySnapshot(dst[:0], h, wbase, wcur)
	}); n != 0 {
		t.Errorf("AppendBinarySnapshot delta allocates %v times", n)
	}
	if n := testing.AllocsPerRun(100, func() {
		dst = protocol.AppendBinarySnapshot(dst[:0], protocol.BinaryHeader{Tick: 1}, nil, wcur)
	}); n != 0 {
		t.Errorf("AppendBinarySnapshot full allocates %v times", n)
	}
	data := protocol.AppendBinarySnapshot(nil, h, wire(base), wire(cur))
	qbase := quantized(base)
	out := make([]protocol.EntityState, 0, 256)
	if n := testing.AllocsPerRun(100, func() {
		var err error
		if _, out, err = protocol.DecodeBinarySnapshot(data, qbase, out[:0]); err != nil {
			t.Fatal(err)
		}
	}); n != 0 {
		t.Errorf("DecodeBinarySnapshot allocates %v times", n)
	}
}

// The inventory channel rides at the end of a binary snapshot, flagged in
// the mode byte, and decodes to what was sent; a snapshot without it
// costs no byte more.
func TestBinaryInventoryRoundTrips(t *testing.T) {
	inv := &protocol.Inventory{Weight: 8.5,
		Items:  []protocol.ItemView{{ID: "m/loot/1", Kind: "sword", Slot: "weapon"}, {ID: "m/loot/2", Kind: "gem"}},
		Skills: []protocol.SkillView{{Name: "melee", Level: 2, XP: 7}}}
	cur := wire(sampleBase())
	for _, base := range [][]protocol.WireState{nil, cur} {
		h := protocol.BinaryHeader{Tick: 9, BaseTick: 8, Inventory: inv}
		if base == nil {
			h.BaseTick = 0
		}
		with := protocol.AppendBinarySnapshot(nil, h, base, cur)
		h.Inventory = nil
		without := protocol.AppendBinarySnapshot(nil, h, base, cur)
		var baseStates []protocol.EntityState
		for _, w := range base {
			baseStates = append(baseStates, w.Entity())
		}
		got, _, err := protocol.DecodeBinarySnapshot(with, baseStates, nil)
		if err != nil || !reflect.DeepEqual(got.Inventory, inv) {
			t.Errorf("decoded inventory %+v, %v; want %+v", got.Inventory, err, inv)
		}
		if got, _, err := protocol.DecodeBinarySnapshot(without, baseStates, nil); err != nil || got.Inventory != nil {
			t.Errorf("a snapshot without inventory decoded %+v, %v", got.Inventory, err)
		}
		if extra := len(with) - len(without); extra <= 0 || without[2]&2 != 0 {
			t.Errorf("the inventory adds %d bytes, mode byte without it 0x%02x", extra, without[2])
		}
	}
}
