package roomserver

import (
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/roomkeeper/roomkeeper/internal/sim"
	"github.com/roomkeeper/roomkeeper/internal/store"
)

func TestStateRoundTrip(t *testing.T) {
	row := encodeState("town", sim.PlayerRecord{Tag: "c1", X: 10.5, Y: 20, HP: 77, Revision: 4, Tick: 99, Epoch: 12})
	if row.SchemaVersion != stateSchema || row.Revision != 4 || row.SavedTick != 99 || row.StateHash == "" || row.Epoch != 12 {
		t.Fatalf("row = %+v", row)
	}
	spec, err := decodeState(row, 100, time.Now())
	if err != nil || spec.X != 10.5 || spec.Y != 20 || spec.HP != 77 || spec.Revision != 4 || !spec.Restore || spec.Tag != "c1" || spec.Map != "town" {
		t.Fatalf("decoded %+v %v", spec, err)
	}
}

func TestStateSchema2IsMigrated(t *testing.T) {
	payload := []byte(`{"x":3,"y":4,"hp":50}`)
	spec, err := decodeState(store.CharacterState{CharacterID: "old", SchemaVersion: 2, SimCoreVersion: "roomkeeper-sim/1", Revision: 2, Payload: payload,
		StateHash: store.HashPayload(payload)}, 100, time.Now())
	if err != nil || spec.X != 3 || spec.Y != 4 || spec.HP != 50 || spec.Map != "" {
		t.Fatalf("migrated %+v %v, want (3,4) with 50 hit points on the map that loads it", spec, err)
	}
}

func TestStateSchema1IsMigrated(t *testing.T) {
	payload := []byte(`{"pos":[3,4]}`)
	spec, err := decodeState(store.CharacterState{CharacterID: "old", SchemaVersion: 1, SimCoreVersion: "roomkeeper-sim/1", Revision: 2, Payload: payload,
		StateHash: store.HashPayload(payload)}, 100, time.Now())
	if err != nil || spec.X != 3 || spec.Y != 4 || spec.HP != 100 {
		t.Fatalf("migrated %+v %v, want (3,4) with full hit points", spec, err)
	}
}

// A schema 3 state, written by sim/1 before skills, loads with no
// experience; the next checkpoint writes the current schema.
func TestStateSchema3IsMigrated(t *testing.T) {
	payload := []byte(`{"map":"town","x":3,"y":4,"hp":60}`)
	spec, err := decodeState(store.CharacterState{CharacterID: "old", SchemaVersion: 3, SimCoreVersion: "roomkeeper-sim/1", Revision: 7,
		Payload: payload, StateHash: store.HashPayload(payload)}, 100, time.Now())
	if err != nil || spec.X != 3 || spec.HP != 60 || spec.Map != "town" || len(spec.SkillXP) != 0 {
		t.Fatalf("migrated %+v %v", spec, err)
	}
	row := encodeState("town", sim.PlayerRecord{Tag: "old", X: 3, Y: 4, HP: 60, Revision: 8, SkillXP: map[string]int{"melee": 6}})
	if row.SchemaVersion != stateSchema || row.SimCoreVersion != simCoreVersion {
		t.Errorf("the next checkpoint is schema %d, %s", row.SchemaVersion, row.SimCoreVersion)
	}
}

// A schema 4 state, written before abilities were kept, loads with full
// pools and nothing cooling down; a schema 5 state's abilities ran on
// for the time since the row was written.
func TestStateKeepsAbilitiesThatRunOnWhileAway(t *testing.T) {
	payload := []byte(`{"map":"town","x":3,"y":4,"hp":60,"skills":{"melee":2}}`)
	spec, err := decodeState(store.CharacterState{CharacterID: "old", SchemaVersion: 4, SimCoreVersion: simCoreVersion, Revision: 7,
		Payload: payload, StateHash: store.HashPayload(payload)}, 100, time.Now())
	if err != nil || spec.Abilities != nil || spec.SkillXP["melee"] != 2 {
		t.Fatalf("schema 4: %+v %v, want no ability record", spec, err)
	}
	kept := &sim.AbilityRecord{Mana: 12, Stamina: 40, Cooldowns: map[string]float32{"firebolt": 2}}
	row := encodeState("town", sim.PlayerRecord{Tag: "c", HP: 60, Revision: 3, Abilities: kept})
	written := time.Date(2026, 11, 29, 1, 0, 0, 0, time.UTC)
	row.UpdatedAt = written
	spec, err = decodeState(row, 100, written.Add(90*time.Second))
	if err != nil || !reflect.DeepEqual(spec.Abilities, kept) || spec.Away != 90 {
		t.Fatalf("schema 5 read 90 s later: %+v away %v, %v", spec.Abilities, spec.Away, err)
	}
	if spec, _ = decodeState(row, 100, written.Add(-time.Minute)); spec.Away != 0 {
		t.Errorf("a row written after now (a clock behind the database's): away %v, want 0", spec.Away)
	}
}

// A state from a simulation core this server does not know (a newer
// release rolled back) is refused with an error naming both versions.
func TestStateFromAnUnknownSimCoreIsRefused(t *testing.T) {
	row := encodeState("town", sim.PlayerRecord{Tag: "c1", X: 1, Y: 1, HP: 1, Revision: 1})
	row.SimCoreVersion = "roomkeeper-sim/3"
	_, err := decodeState(row, 100, time.Now())
	if !errors.Is(err, store.ErrUnknownSimCore) || !strings.Contains(err.Error(), "roomkeeper-sim/3") || !strings.Contains(err.Error(), simCoreVersion) {
		t.Errorf("sim/3: %v, want ErrUnknownSimCore naming both versions", err)
	}
}

func TestStateRefusesCorruptAndUnknown(t *testing.T) {
	row := encodeState("town", sim.PlayerRecord{Tag: "c1", X: 1, Y: 1, HP: 1, Revision: 1})
	tampered := row
	tampered.Payload = []byte(`{"x":999,"y":999,"hp":255}`)
	if _, err := decodeState(tampered, 100, time.Now()); !errors.Is(err, store.ErrCorrupt) {
		t.Errorf("tampered payload: %v, want ErrCorrupt", err)
	}
	future := row
	future.SchemaVersion = 99
	if _, err := decodeState(future, 100, time.Now()); !errors.Is(err, store.ErrUnknownSchema) {
		t.Errorf("schema 99: %v, want ErrUnknownSchema", err)
	}
}

// TestStateThatDoesNotDecodeIsCorrupt: a payload whose hash matches but
// that is not its schema's JSON is the corrupt-state error, not internal.
func TestStateThatDoesNotDecodeIsCorrupt(t *testing.T) {
	for _, payload := range []string{`{"x":"far"}`, `not json`, `{"x":1e39}`} {
		row := store.CharacterState{CharacterID: "c", SchemaVersion: stateSchema, SimCoreVersion: simCoreVersion,
			Payload: []byte(payload), StateHash: store.HashPayload([]byte(payload))}
		if _, err := decodeState(row, 100, time.Now()); !errors.Is(err, store.ErrCorrupt) {
			t.Errorf("payload %s: %v, want ErrCorrupt", payload, err)
		}
	}
}

// TestRestoredHitPointsAreClamped: a stored value above the maximum is
// not trusted.
func TestRestoredHitPointsAreClamped(t *testing.T) {
	row := encodeState("town", sim.PlayerRecord{Tag: "c1", X: 1, Y: 1, HP: 250, Revision: 1})
	spec, err := decodeState(row, 100, time.Now())
	if err != nil || spec.HP != 100 {
		t.Fatalf("restored %+v %v, want 100 hit points", spec, err)
	}
}

// TestEveryPersistentFieldRoundTrips keeps the state payload in step with
// the simulation's record: a field added to sim.PlayerRecord fails here
// until the payload saves it and decodeState restores it into the spec.
func TestEveryPersistentFieldRoundTrips(t *testing.T) {
	bookkeeping := map[string]bool{"Tag": true, "Revision": true, "Tick": true, "Epoch": true}
	var record sim.PlayerRecord
	rv := reflect.ValueOf(&record).Elem()
	for i := range rv.NumField() {
		f := rv.Field(i)
		switch f.Kind() {
		case reflect.Float32:
			f.SetFloat(float64(i) + 0.5)
		case reflect.Uint8:
			f.SetUint(uint64(i + 1))
		case reflect.String:
			f.SetString("c1")
		case reflect.Int64, reflect.Uint64:
			// bookkeeping: revision, tick, epoch
		case reflect.Map:
			f.Set(reflect.ValueOf(map[string]int{"melee": i + 1}))
		case reflect.Pointer:
			f.Set(reflect.ValueOf(&sim.AbilityRecord{Mana: 5, Stamina: 6,
				Cooldowns: map[string]float32{"firebolt": 1.5}, Buffs: map[string]float32{"battle cry": 7}}))
		default:
			t.Fatalf("sim.PlayerRecord.%s is a %s: teach this test and the state payload", rv.Type().Field(i).Name, f.Kind())
		}
	}
	spec, err := decodeState(encodeState("town", record), 255, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	sv := reflect.ValueOf(spec.PlayerSpec)
	for i := range rv.NumField() {
		name := rv.Type().Field(i).Name
		if bookkeeping[name] {
			continue
		}
		got := sv.FieldByName(name)
		if !got.IsValid() || !reflect.DeepEqual(got.Interface(), rv.Field(i).Interface()) {
			t.Errorf("sim.PlayerRecord.%s = %v is not restored (got %v): add it to statePayload and bump stateSchema", name, rv.Field(i), got)
		}
	}
}
