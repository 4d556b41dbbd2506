package roomserver

import (
	"errors"
	"testing"

	"github.com/roomkeeper/roomkeeper/internal/sim"
	"github.com/roomkeeper/roomkeeper/internal/store"
)

func TestStateRoundTrip(t *testing.T) {
	row := encodeState("town", sim.PlayerRecord{Tag: "c1", X: 10.5, Y: 20, HP: 77, Revision: 4, Tick: 99, Epoch: 12})
	if row.SchemaVersion != stateSchema || row.Revision != 4 || row.SavedTick != 99 || row.StateHash == "" || row.Epoch != 12 {
		t.Fatalf("row = %+v", row)
	}
	spec, err := decodeState(row, 100)
	if err != nil || spec.X != 10.5 || spec.Y != 20 || spec.HP != 77 || spec.Revision != 4 || !spec.Restore || spec.Tag != "c1" || spec.Map != "town" {
		t.Fatalf("decoded %+v %v", spec, err)
	}
}

func TestStateSchema2IsMigrated(t *testing.T) {
	payload := []byte(`{"x":3,"y":4,"hp":50}`)
	spec, err := decodeState(store.CharacterState{CharacterID: "old", SchemaVersion: 2, Revision: 2, Payload: payload,
		StateHash: hashPayload(payload)}, 100)
	if err != nil || spec.X != 3 || spec.Y != 4 || spec.HP != 50 || spec.Map != "" {
		t.Fatalf("migrated %+v %v, want (3,4) with 50 hit points on the map that loads it", spec, err)
	}
}

func TestStateSchema1IsMigrated(t *testing.T) {
	payload := []byte(`{"pos":[3,4]}`)
	spec, err := decodeState(store.CharacterState{CharacterID: "old", SchemaVersion: 1, Revision: 2, Payload: payload,
		StateHash: hashPayload(payload)}, 100)
	if err != nil || spec.X != 3 || spec.Y != 4 || spec.HP != 100 {
		t.Fatalf("migrated %+v %v, want (3,4) with full hit points", spec, err)
	}
}

func TestStateRefusesCorruptAndUnknown(t *testing.T) {
	row := encodeState("town", sim.PlayerRecord{Tag: "c1", X: 1, Y: 1, HP: 1, Revision: 1})
	tampered := row
	tampered.Payload = []byte(`{"x":999,"y":999,"hp":255}`)
	if _, err := decodeState(tampered, 100); !errors.Is(err, store.ErrCorrupt) {
		t.Errorf("tampered payload: %v, want ErrCorrupt", err)
	}
	future := row
	future.SchemaVersion = 99
	if _, err := decodeState(future, 100); !errors.Is(err, store.ErrUnknownSchema) {
		t.Errorf("schema 99: %v, want ErrUnknownSchema", err)
	}
}
