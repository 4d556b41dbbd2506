package protocol_test

import (
	"encoding/json"
	"slices"
	"testing"

	"github.com/roomkeeper/roomkeeper/internal/protocol"
)

// benchLists returns a 64-entity snapshot and the next one, in which about
// half the entities moved and a few lost hit points: a crowded area at
// 20 Hz snapshots.
func benchLists() (base, cur []protocol.EntityState) {
	base = make([]protocol.EntityState, 64)
	for i := range base {
		kind := protocol.EntityNPC
		if i%8 == 0 {
			kind = protocol.EntityPlayer
		}
		base[i] = protocol.EntityState{
			ID:   uint32(1000 + i*37),
			Kind: kind,
			X:    512 + float32(i%8)*3.3,
			Y:    768 + float32(i/8)*2.7,
			HP:   100,
		}
	}
	cur = slices.Clone(base)
	for i := range cur {
		if i%2 == 0 {
			cur[i].X += 0.25 // 5 units/s at 20 Hz
			cur[i].Y -= 0.125
		}
		if i%16 == 3 {
			cur[i].HP -= 12
		}
	}
	return base, cur
}

func BenchmarkAppendBinaryDelta64(b *testing.B) {
	base, cur := benchLists()
	wbase, wcur := wire(base), wire(cur)
	h := protocol.BinaryHeader{Tick: 101, BaseTick: 100, AckSeq: 5}
	dst := make([]byte, 0, 4096)
	b.ReportAllocs()
	for b.Loop() {
		dst = protocol.AppendBinarySnapshot(dst[:0], h, wbase, wcur)
	}
	b.ReportMetric(float64(len(dst)), "bytes/snapshot")
}

func BenchmarkAppendBinaryFull64(b *testing.B) {
	_, cur := benchLists()
	wcur := wire(cur)
	h := protocol.BinaryHeader{Tick: 101, AckSeq: 5}
	dst := make([]byte, 0, 4096)
	b.ReportAllocs()
	for b.Loop() {
		dst = protocol.AppendBinarySnapshot(dst[:0], h, nil, wcur)
	}
	b.ReportMetric(float64(len(dst)), "bytes/snapshot")
}

func BenchmarkDecodeBinaryDelta64(b *testing.B) {
	base, cur := benchLists()
	data := protocol.AppendBinarySnapshot(nil, protocol.BinaryHeader{Tick: 101, BaseTick: 100}, wire(base), wire(cur))
	qbase := quantized(base)
	out := make([]protocol.EntityState, 0, 128)
	b.ReportAllocs()
	for b.Loop() {
		var err error
		if _, out, err = protocol.DecodeBinarySnapshot(data, qbase, out[:0]); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkMarshalSnapshotJSON64 is the JSON codec's cost for the same 64
// entities (full mode), for comparison with the binary benchmarks.
func BenchmarkMarshalSnapshotJSON64(b *testing.B) {
	_, cur := benchLists()
	snap := protocol.Snapshot{Tick: 101, AckSeq: 5, Mode: protocol.ModeFull}
	for _, e := range cur {
		snap.Presence.Add = append(snap.Presence.Add, protocol.Arrival{ID: e.ID, Kind: e.Kind})
		snap.Movement = append(snap.Movement, protocol.Position{ID: e.ID, X: e.X, Y: e.Y})
		snap.Combat = append(snap.Combat, protocol.Health{ID: e.ID, HP: e.HP})
	}
	var data []byte
	b.ReportAllocs()
	for b.Loop() {
		var err error
		if data, err = json.Marshal(snap); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(len(data)), "bytes/snapshot")
}
