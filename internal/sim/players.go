package sim

import "slices"

// PlayerSpec is who joins: a fresh player at the spawn, or one restored
// from its last checkpoint.
type PlayerSpec struct {
	// Tag names the player outside the world (its character id).
	Tag string
	// Restore places the player at X, Y with HP instead of at the spawn.
	Restore bool
	X, Y    float32
	HP      uint8
	// Revision is the checkpoint revision the state came from.
	Revision  int64
	Inventory []Item
	// Epoch is the authority lease epoch the player was admitted under.
	// The world only carries it into records: the store fences writes by it.
	Epoch int64
}

// PlayerRecord is a player's persistent state at one tick: an immutable
// copy the persistence goroutine writes while the world moves on.
type PlayerRecord struct {
	Tag      string
	X, Y     float32
	HP       uint8
	Revision int64
	Tick     uint64
	Epoch    int64
}

// JoinPlayer adds a player and returns its entity id.
func (w *World) JoinPlayer(spec PlayerSpec) uint32 {
	id := w.AddPlayer()
	p := w.find(id)
	p.tag, p.revision, p.inventory, p.epoch = spec.Tag, spec.Revision, slices.Clone(spec.Inventory), spec.Epoch
	if spec.Restore && !w.static.Blocked(float64(spec.X), float64(spec.Y)) {
		p.X, p.Y, p.HP = spec.X, spec.Y, spec.HP
	}
	return id
}

// CollectDirty returns a record of every player that changed since the
// last collection (every player with all), each with its next revision.
func (w *World) CollectDirty(all bool) []PlayerRecord {
	var out []PlayerRecord
	for i := range w.entities {
		if e := &w.entities[i]; e.Kind == KindPlayer && e.tag != "" && (e.dirty || all) {
			out = append(out, w.record(e))
		}
	}
	return out
}

// Record returns one player's record with its next revision, for a save on
// leave or disconnect.
func (w *World) Record(player uint32) (PlayerRecord, bool) {
	e := w.find(player)
	if e == nil || e.Kind != KindPlayer || e.tag == "" {
		return PlayerRecord{}, false
	}
	return w.record(e), true
}

func (w *World) record(e *Entity) PlayerRecord {
	e.revision++
	e.dirty = false
	return PlayerRecord{Tag: e.tag, X: e.X, Y: e.Y, HP: e.HP, Revision: e.revision, Tick: w.tick, Epoch: e.epoch}
}

// Tag is the player's outside name.
func (w *World) Tag(player uint32) string {
	if e := w.find(player); e != nil {
		return e.tag
	}
	return ""
}
