package roomserver

import (
	"encoding/json"
	"fmt"
	"slices"
	"time"

	"github.com/roomkeeper/roomkeeper/internal/sim"
	"github.com/roomkeeper/roomkeeper/internal/store"
)

// The persisted character state's format. Bump stateSchema when the
// payload changes and teach decodeState the old one; bump simCoreVersion
// when the simulation's rules change what a state means, and add the old
// one to knownSimCores if its states still load as they are.
const (
	stateSchema    = 5
	simCoreVersion = "roomkeeper-sim/2"
)

// knownSimCores are the simulation cores whose states this one loads:
// sim/1 had no equipment, skills or encumbrance, which a sim/1 state
// simply lacks.
var knownSimCores = []string{"roomkeeper-sim/1", simCoreVersion}

// statePayload is schema 5: the map the position is on, position, hit
// points, skill experience and abilities (schema 4 had no abilities, 3 no
// skills). A character restored on another map than Map starts at that
// map's arrival from Map. Items are not in it: item_ownership holds them,
// worn ones with their slot.
type statePayload struct {
	Map       string            `json:"map"`
	X         float32           `json:"x"`
	Y         float32           `json:"y"`
	HP        uint8             `json:"hp"`
	Skills    map[string]int    `json:"skills,omitempty"`
	Abilities *abilitiesPayload `json:"abilities,omitempty"`
}

// abilitiesPayload is sim.AbilityRecord as saved: the pools, and the
// seconds left of each cooldown and buff when the state was written (the
// row's updated_at), by ability name.
type abilitiesPayload struct {
	Mana      float32            `json:"mana"`
	Stamina   float32            `json:"stamina"`
	Cooldowns map[string]float32 `json:"cooldowns,omitempty"`
	Buffs     map[string]float32 `json:"buffs,omitempty"`
}

// statePayloadV1 is schema 1, written before hit points were saved.
type statePayloadV1 struct {
	Pos [2]float32 `json:"pos"`
}

// encodeState turns a player record on mapName into the row the store
// writes, fenced by the record's lease epoch.
func encodeState(mapName string, r sim.PlayerRecord) store.CharacterState {
	p := statePayload{Map: mapName, X: r.X, Y: r.Y, HP: r.HP, Skills: r.SkillXP}
	if a := r.Abilities; a != nil {
		p.Abilities = &abilitiesPayload{Mana: a.Mana, Stamina: a.Stamina, Cooldowns: a.Cooldowns, Buffs: a.Buffs}
	}
	payload, _ := json.Marshal(p) // plain struct: cannot fail
	return store.CharacterState{CharacterID: r.Tag, SchemaVersion: stateSchema, SimCoreVersion: simCoreVersion,
		Revision: r.Revision, SavedTick: int64(r.Tick), Payload: payload, StateHash: store.HashPayload(payload), Epoch: r.Epoch}
}

// restored is a decoded state: the player to place and the map its
// position belongs to ("" for states written before maps were recorded:
// the map that loads it).
type restored struct {
	sim.PlayerSpec
	Map string
}

// decodeState turns a stored row into a player to restore at now. A hash
// that does not match, a payload that does not decode or an unknown schema
// is an error, never a silent reset: the player is refused rather than
// given a fresh character. Hit points above the maximum are clamped, not
// trusted; the abilities ran on since the row was written (the sim holds
// them to the pack).
func decodeState(s store.CharacterState, maxHP uint8, now time.Time) (restored, error) {
	if store.HashPayload(s.Payload) != s.StateHash {
		return restored{}, fmt.Errorf("character %s: %w", s.CharacterID, store.ErrCorrupt)
	}
	if !slices.Contains(knownSimCores, s.SimCoreVersion) {
		return restored{}, fmt.Errorf("character %s: %q (this server runs %s): %w",
			s.CharacterID, s.SimCoreVersion, simCoreVersion, store.ErrUnknownSimCore)
	}
	r := restored{PlayerSpec: sim.PlayerSpec{Tag: s.CharacterID, Restore: true, Revision: s.Revision}}
	switch s.SchemaVersion {
	case 1:
		var v1 statePayloadV1
		if err := json.Unmarshal(s.Payload, &v1); err != nil {
			return restored{}, undecodable(s, err)
		}
		r.X, r.Y, r.HP = v1.Pos[0], v1.Pos[1], maxHP // v1 did not save hit points
	case 2, 3, 4, 5: // each the next without something: 2 the map, 3 skills, 4 abilities
		var p statePayload
		if err := json.Unmarshal(s.Payload, &p); err != nil {
			return restored{}, undecodable(s, err)
		}
		r.X, r.Y, r.HP, r.Map, r.SkillXP = p.X, p.Y, p.HP, p.Map, p.Skills
		if a := p.Abilities; a != nil {
			r.Abilities = &sim.AbilityRecord{Mana: a.Mana, Stamina: a.Stamina, Cooldowns: a.Cooldowns, Buffs: a.Buffs}
			r.Away = float32(max(0, now.Sub(s.UpdatedAt).Seconds()))
		}
	default:
		return restored{}, fmt.Errorf("character %s: schema %d: %w", s.CharacterID, s.SchemaVersion, store.ErrUnknownSchema)
	}
	r.HP = min(r.HP, maxHP) // a position off the walkable map is refused by sim.World.JoinPlayer
	return r, nil
}

// undecodable is the error of a payload whose hash matches but that does
// not decode as its schema: corrupt when written.
func undecodable(s store.CharacterState, err error) error {
	return fmt.Errorf("character %s: schema %d payload does not decode (%w): %w", s.CharacterID, s.SchemaVersion, err, store.ErrCorrupt)
}
