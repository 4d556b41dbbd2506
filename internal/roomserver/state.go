package roomserver

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"

	"github.com/roomkeeper/roomkeeper/internal/sim"
	"github.com/roomkeeper/roomkeeper/internal/store"
)

// The persisted character state's format. Bump stateSchema when the
// payload changes and teach decodeState the old one.
const (
	stateSchema    = 2
	simCoreVersion = "roomkeeper-sim/1"
)

// statePayload is schema 2: position and hit points.
type statePayload struct {
	X  float32 `json:"x"`
	Y  float32 `json:"y"`
	HP uint8   `json:"hp"`
}

// statePayloadV1 is schema 1, written before hit points were saved.
type statePayloadV1 struct {
	Pos [2]float32 `json:"pos"`
}

// encodeState turns a player record into the row the store writes.
func encodeState(r sim.PlayerRecord) store.CharacterState {
	payload, _ := json.Marshal(statePayload{X: r.X, Y: r.Y, HP: r.HP}) // plain struct: cannot fail
	return store.CharacterState{CharacterID: r.Tag, SchemaVersion: stateSchema, SimCoreVersion: simCoreVersion,
		Revision: r.Revision, SavedTick: int64(r.Tick), Payload: payload, StateHash: hashPayload(payload)}
}

func hashPayload(payload []byte) string {
	sum := sha256.Sum256(payload)
	return hex.EncodeToString(sum[:])
}

// decodeState turns a stored row into a player to restore. A hash that does
// not match or an unknown schema is an error, never a silent reset: the
// player is refused rather than given a fresh character.
func decodeState(s store.CharacterState, maxHP uint8) (sim.PlayerSpec, error) {
	if hashPayload(s.Payload) != s.StateHash {
		return sim.PlayerSpec{}, fmt.Errorf("character %s: %w", s.CharacterID, store.ErrCorrupt)
	}
	spec := sim.PlayerSpec{Tag: s.CharacterID, Restore: true, Revision: s.Revision}
	switch s.SchemaVersion {
	case 1:
		var v1 statePayloadV1
		if err := json.Unmarshal(s.Payload, &v1); err != nil {
			return sim.PlayerSpec{}, fmt.Errorf("character %s: schema 1 payload: %w", s.CharacterID, err)
		}
		spec.X, spec.Y, spec.HP = v1.Pos[0], v1.Pos[1], maxHP // v1 did not save hit points
	case 2:
		var v2 statePayload
		if err := json.Unmarshal(s.Payload, &v2); err != nil {
			return sim.PlayerSpec{}, fmt.Errorf("character %s: schema 2 payload: %w", s.CharacterID, err)
		}
		spec.X, spec.Y, spec.HP = v2.X, v2.Y, v2.HP
	default:
		return sim.PlayerSpec{}, fmt.Errorf("character %s: schema %d: %w", s.CharacterID, s.SchemaVersion, store.ErrUnknownSchema)
	}
	return spec, nil
}
