package protocol

import (
	"math"
	"testing"
)

// TestEveryFieldRoundTrips changes each field of the extraFields table,
// alone, on an entity in the base and on a new one, and checks that the
// binary codec carries exactly that change and that the JSON channels
// name it.
func TestEveryFieldRoundTrips(t *testing.T) {
	values := []uint32{1, 127, 128, 255, math.MaxUint32}
	for _, f := range extraFields {
		for _, v := range values {
			base := WireState{ID: 7, Kind: EntityNPC, X: 16, Y: 32, HP: 10, State: 0, Target: 0}
			cur := base
			e := cur.Entity()
			f.set(&e, v)
			cur = e.Wire()
			if f.get(&cur) == f.get(&base) {
				continue // v does not fit the field (a byte field and 2^32-1)
			}
			data := AppendBinarySnapshot(nil, BinaryHeader{Tick: 2, BaseTick: 1}, []WireState{base}, []WireState{cur})
			_, got, err := DecodeBinarySnapshot(data, []EntityState{base.Entity()}, nil)
			if err != nil || len(got) != 1 || got[0] != cur.Entity() {
				t.Errorf("%s = %d in a delta: decoded %+v, %v; want %+v", f.name, v, got, err, cur.Entity())
			}
			if data[len(data)-1-fieldBytes(f, f.get(&cur))] != f.flag {
				t.Errorf("%s = %d: the delta record is % x, want only flag 0x%02x", f.name, v, data, f.flag)
			}
			data = AppendBinarySnapshot(nil, BinaryHeader{Tick: 2}, nil, []WireState{cur})
			if _, got, err = DecodeBinarySnapshot(data, nil, nil); err != nil || len(got) != 1 || got[0] != cur.Entity() {
				t.Errorf("%s = %d in a full snapshot: decoded %+v, %v", f.name, v, got, err)
			}
			var snap Snapshot
			snap.Channel(cur)
			if len(snap.Combat) != 1 || snap.Combat[0] != (Health{ID: 7, HP: cur.HP, State: cur.State, Target: cur.Target}) {
				t.Errorf("%s = %d: the combat channel holds %+v", f.name, v, snap.Combat)
			}
		}
	}
}

// fieldBytes is how many bytes f's value v takes on the wire.
func fieldBytes(f extraField, v uint32) int {
	if !f.varint {
		return 1
	}
	n := 1
	for ; v >= 0x80; v >>= 7 {
		n++
	}
	return n
}

func TestDoorsTravelInTheDoorsChannel(t *testing.T) {
	var snap Snapshot
	snap.Channel(WireState{ID: 3, Kind: EntityDoor, State: DoorOpen | DoorLocked})
	if len(snap.Combat) != 0 || len(snap.Doors) != 1 || snap.Doors[0] != (DoorView{ID: 3, Open: true, Locked: true}) {
		t.Errorf("a door's state went to combat %+v, doors %+v", snap.Combat, snap.Doors)
	}
}

// ExtrasChanged, which puts an entity in a JSON delta's channels, sees a
// change of every field of the table, and nothing else: a new field needs
// a case here, or this test fails.
func TestExtrasChangedSeesEveryField(t *testing.T) {
	base := WireState{ID: 7, Kind: EntityNPC, HP: 10, State: 1, Target: 3}
	change := map[string]func(*WireState){
		"hp":     func(w *WireState) { w.HP++ },
		"state":  func(w *WireState) { w.State++ },
		"target": func(w *WireState) { w.Target++ },
	}
	if len(change) != len(extraFields) {
		t.Fatalf("%d fields have a case here, the table has %d", len(change), len(extraFields))
	}
	for _, x := range extraFields {
		mutate, ok := change[x.name]
		if !ok {
			t.Fatalf("field %s has no case here", x.name)
		}
		c := base
		mutate(&c)
		if !ExtrasChanged(base, c) {
			t.Errorf("a change of %s is not seen", x.name)
		}
	}
	moved := base
	moved.X++
	if ExtrasChanged(base, base) || ExtrasChanged(base, moved) {
		t.Error("ExtrasChanged sees a change where no field of the table changed")
	}
}
