package client

import (
	"cmp"
	"encoding/json"
	"fmt"
	"slices"
	"sync"

	"github.com/roomkeeper/roomkeeper/internal/protocol"
)

// decodeServer parses a server envelope.
func decodeServer(data []byte) (protocol.Envelope, error) {
	var env protocol.Envelope
	if err := json.Unmarshal(data, &env); err != nil {
		return env, fmt.Errorf("server sent malformed JSON: %w", err)
	}
	if env.V != protocol.Version {
		return env, fmt.Errorf("server speaks protocol v%d, this client v%d", env.V, protocol.Version)
	}
	return env, nil
}

// decodeLoose unmarshals a server payload, tolerating fields a newer
// server may add.
func decodeLoose(env protocol.Envelope, v any) error {
	if err := json.Unmarshal(env.Payload, v); err != nil {
		return fmt.Errorf("server %s payload: %w", env.Kind, err)
	}
	return nil
}

func serverError(env protocol.Envelope) error {
	var e protocol.Error
	if err := decodeLoose(env, &e); err != nil {
		return err
	}
	return &ServerError{Code: e.Code, Message: e.Message}
}

// applyJSONSnapshot returns the entities after a JSON snapshot: the
// snapshot's own for a full one, base with the changes for a delta.
func applyJSONSnapshot(base []protocol.EntityState, snap protocol.Snapshot) []protocol.EntityState {
	byID := make(map[uint32]protocol.EntityState, len(base)+len(snap.Presence.Add))
	if snap.Mode == protocol.ModeDelta {
		for _, e := range base {
			byID[e.ID] = e
		}
	}
	for _, id := range snap.Presence.Remove {
		delete(byID, id)
	}
	for _, a := range snap.Presence.Add {
		byID[a.ID] = protocol.EntityState{ID: a.ID, Kind: a.Kind}
	}
	for _, p := range snap.Movement {
		e := byID[p.ID]
		e.ID, e.X, e.Y = p.ID, p.X, p.Y
		byID[p.ID] = e
	}
	for _, h := range snap.Combat {
		e := byID[h.ID]
		e.ID, e.HP, e.State, e.Target = h.ID, h.HP, h.State, h.Target
		byID[h.ID] = e
	}
	for _, d := range snap.Doors {
		e := byID[d.ID]
		e.ID, e.State = d.ID, doorState(d)
		byID[d.ID] = e
	}
	out := make([]protocol.EntityState, 0, len(byID))
	for _, e := range byID {
		out = append(out, e)
	}
	sortByID(out)
	return out
}

// doorState is a door's state bits as the binary codec carries them.
func doorState(d protocol.DoorView) uint8 {
	var s uint8
	if d.Open {
		s |= protocol.DoorOpen
	}
	if d.Locked {
		s |= protocol.DoorLocked
	}
	return s
}

// snapshotHistory keeps recent decoded snapshots by tick, as delta bases.
type snapshotHistory struct {
	mu      sync.Mutex
	entries [historySize]struct {
		tick     uint64
		entities []protocol.EntityState
	}
}

func (h *snapshotHistory) put(tick uint64, entities []protocol.EntityState) {
	h.mu.Lock()
	defer h.mu.Unlock()
	e := &h.entries[tick%historySize]
	e.tick, e.entities = tick, entities
}

func (h *snapshotHistory) get(tick uint64) ([]protocol.EntityState, bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	e := &h.entries[tick%historySize]
	return e.entities, e.tick == tick && e.entities != nil
}

func sortByID(list []protocol.EntityState) {
	slices.SortFunc(list, func(a, b protocol.EntityState) int { return cmp.Compare(a.ID, b.ID) })
}
