package protocol_test

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"math"
	"reflect"
	"slices"
	"testing"

	"github.com/roomkeeper/roomkeeper/internal/protocol"
)

func FuzzDecodeEnvelope(f *testing.F) {
	for _, seed := range []string{
		`{"v":1,"kind":"command","seq":42,"feature":"movement","action":"input","payload":{"inputs":[{"seq":101,"x":1,"y":0}]}}`,
		`{"v":1,"kind":"hello","payload":{"ticket":"abc","codec":"binary"}}`,
		`{"v":1,"kind":"hello","payload":{"resume":"tok","lastSeq":9}}`,
		`{"v":1,"kind":"ping","ackTick":77,"payload":{"clientTime":1.5}}`,
		`{"v":1,"kind":"command","feature":"portal","action":"enter","payload":null}`,
		`{"v":1,"kind":"welcome"}`,
		`{"v":1e400}`,
		`[1,2,3]`,
		`{"v":1,"kind":"ping","payload":"<\u00e9>"}`,
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		env, err := protocol.DecodeEnvelope(data)
		if err != nil {
			wantCode(t, err, protocol.CodeBadRequest, "")
			return
		}
		again, err := json.Marshal(env)
		if err != nil {
			t.Fatalf("re-marshal %+v: %v", env, err)
		}
		env2, err := protocol.DecodeEnvelope(again)
		if err != nil {
			t.Fatalf("re-encoded %s does not decode: %v", again, err)
		}
		p1, p2 := env.Payload, env2.Payload
		env.Payload, env2.Payload = nil, nil
		if !reflect.DeepEqual(env, env2) {
			t.Fatalf("round trip changed the envelope: %+v -> %+v", env, env2)
		}
		if !sameJSON(t, p1, p2) {
			t.Fatalf("round trip changed the payload: %s -> %s", p1, p2)
		}
		// Whatever the payload, strict decoding refuses or accepts it
		// without panicking.
		var in protocol.MovementInput
		if err := protocol.DecodePayload(env2, &in); err != nil {
			wantCode(t, err, protocol.CodeBadRequest, "payload")
		}
	})
}

// sameJSON reports whether a and b hold the same JSON value (encoding/json
// re-escapes strings, so the bytes may differ).
func sameJSON(t *testing.T, a, b []byte) bool {
	if len(a) == 0 || len(b) == 0 {
		return len(a) == len(b)
	}
	return reflect.DeepEqual(jsonValue(t, a), jsonValue(t, b))
}

func jsonValue(t *testing.T, data []byte) any {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		t.Fatalf("payload %q is not JSON: %v", data, err)
	}
	return v
}

// fuzzBase is the client's copy of the acknowledged snapshot that fuzzed
// deltas apply to; quantized, as a decoded snapshot always is.
func fuzzBase() []protocol.EntityState {
	return quantized([]protocol.EntityState{
		ent(1, protocol.EntityPlayer, 10, 20, 100),
		ent(2, protocol.EntityNPC, 11, 21, 50),
		ent(3, protocol.EntityLoot, 12, 22, 0),
		ent(200, protocol.EntityDoor, 13, 23, 1),
		ent(math.MaxUint32, protocol.EntityNPC, 14, 24, 9),
	})
}

func FuzzDecodeBinarySnapshot(f *testing.F) {
	base := fuzzBase()
	next := slices.Clone(base[1:])
	next[0].X += 1
	next[1].HP = 7
	next = append(next, ent(7, protocol.EntityNPC, 1, 2, 3))
	f.Add(protocol.AppendBinarySnapshot(nil, protocol.BinaryHeader{Tick: 5, AckSeq: 3}, nil, wire(base)))
	f.Add(protocol.AppendBinarySnapshot(nil, protocol.BinaryHeader{Tick: 6, BaseTick: 5}, wire(base), wire(next)))
	f.Add(protocol.AppendBinarySnapshot(nil, protocol.BinaryHeader{Tick: 6, BaseTick: 5}, wire(base), nil))
	f.Add([]byte{protocol.BinaryMagic, protocol.BinaryVersion, 0, 1, 0, 0, 0, 0x80})
	f.Fuzz(func(t *testing.T, data []byte) {
		h, got, err := protocol.DecodeBinarySnapshot(data, base, nil)
		if err != nil {
			wantCode(t, err, protocol.CodeBadRequest, "binary snapshot")
			if len(got) != 0 {
				t.Fatalf("refused snapshot returned %d entities", len(got))
			}
			return
		}
		if len(got) > len(base)+len(data)/2 {
			t.Fatalf("%d bytes decoded to %d entities", len(data), len(got))
		}
		var reBase []protocol.EntityState
		if h.Mode == protocol.BinaryModeDelta {
			reBase = base
		}
		again := protocol.AppendBinarySnapshot(nil, h, wire(reBase), wire(got))
		h2, got2, err := protocol.DecodeBinarySnapshot(again, base, nil)
		if err != nil {
			t.Fatalf("re-encoding % x does not decode: %v", again, err)
		}
		// DeepEqual: the header's inventory is a pointer, and two decodes
		// make two of them; what they point to must match.
		if !reflect.DeepEqual(h2, h) || !slices.Equal(got, got2) {
			t.Fatalf("re-encoding changed the snapshot:\n%+v %+v %+v\n%+v %+v %+v", h, h.Inventory, got, h2, h2.Inventory, got2)
		}
	})
}

// entitiesFromBytes builds two sorted entity lists, a base and a current
// one, from fuzz bytes: 8 bytes per entity (id step, membership and change
// bits, kind, hp, then x and y off the quantization grid, or x as raw float
// bits).
func entitiesFromBytes(data []byte) (base, cur []protocol.EntityState) {
	var id uint32
	for ; len(data) >= 8; data = data[8:] {
		step := uint32(data[0])
		if step == 255 { // jump far, to reach IDs near 2^32
			step = math.MaxUint32 / 3
		}
		if step > math.MaxUint32-id {
			break
		}
		id += step + 1
		e := protocol.EntityState{
			ID:   id,
			Kind: protocol.EntityKind(data[2]),
			HP:   data[3],
			X:    float32(binary.LittleEndian.Uint16(data[4:])) / 15.5,
			Y:    float32(binary.LittleEndian.Uint16(data[6:])) / 16.5,
		}
		if data[1]&64 != 0 { // any float: NaN, infinities, negatives, huge
			e.X = math.Float32frombits(binary.LittleEndian.Uint32(data[4:]))
		}
		if data[1]&1 != 0 {
			base = append(base, e)
		}
		if data[1]&2 != 0 {
			// Change some fields in cur, keep others.
			if data[1]&4 != 0 {
				e.X += 0.7
			}
			if data[1]&8 != 0 {
				e.HP ^= 0x55
			}
			if data[1]&16 != 0 {
				e.Kind++
			}
			if data[1]&32 != 0 {
				e.Y = -e.Y // clamps to 0
			}
			cur = append(cur, e)
		}
	}
	return base, cur
}

func FuzzBinaryRoundTrip(f *testing.F) {
	f.Add([]byte{0, 3, 1, 100, 0, 1, 0, 2, 5, 7, 2, 50, 9, 9, 9, 9, 255, 1, 3, 0, 1, 1, 1, 1}, uint64(10), uint32(3))
	f.Add([]byte{}, uint64(1), uint32(0))
	f.Add(bytes.Repeat([]byte{1, 3, 2, 1, 0xff, 0xff, 0x10, 0}, 64), uint64(math.MaxUint64), uint32(math.MaxUint32))
	f.Fuzz(func(t *testing.T, data []byte, tick uint64, ackSeq uint32) {
		// 64 entities are plenty (TestBinaryLongLists covers long lists);
		// longer inputs only slow the fuzzer's minimization down.
		base, cur := entitiesFromBytes(data[:min(len(data), 64*8)])
		if tick < 2 {
			tick = 2
		}
		full := protocol.BinaryHeader{Tick: tick, AckSeq: ackSeq}
		delta := protocol.BinaryHeader{Tick: tick, BaseTick: tick - 1, AckSeq: ackSeq}
		roundTrip(t, full, nil, cur)
		roundTrip(t, delta, base, cur)
		if base == nil {
			base = []protocol.EntityState{}
		}
		roundTrip(t, delta, base, cur)
		roundTrip(t, delta, cur, base)
	})
}
