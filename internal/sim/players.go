package sim

import "slices"

// playerState is what a player has beyond its entity: the input backlog,
// what it carries, and its persistence bookkeeping.
type playerState struct {
	inputs  []Input
	lastSeq uint32
	// standing is the least the backlog held after a step since
	// windowFrom: inputs that waited the whole window (see trimStanding).
	standing   int
	windowFrom uint64
	inventory  []Item
	dropping   []string // item ids with a drop being committed
	tag        string   // the room server's name for the player (its character)
	revision   int64    // last persisted revision
	epoch      int64    // authority lease epoch, carried into records
	dirty      bool     // changed since the last checkpoint
	nextAttack uint64   // the tick its attack cooldown ends
	respawnAt  uint64   // while dead: the tick it comes back; 0 while alive
	target     uint32   // whom it attacked last, while that one lives
}

// player is e's player state; e must be a player.
func (w *World) player(e *Entity) *playerState { return &w.players.rows[e.slot] }

// findPlayer returns player id's entity and state, or nils when id is not
// a player here.
func (w *World) findPlayer(id uint32) (*Entity, *playerState) {
	e := w.find(id)
	if e == nil || e.Kind != KindPlayer {
		return nil, nil
	}
	return e, w.player(e)
}

// livingPlayer returns player id's entity and state, or ErrNoPlayer when
// id is no player here, or ErrDead while it waits for its respawn.
func (w *World) livingPlayer(id uint32) (*Entity, *playerState, error) {
	e, p := w.findPlayer(id)
	switch {
	case p == nil:
		return nil, nil, ErrNoPlayer
	case e.HP == 0:
		return nil, nil, ErrDead
	}
	return e, p, nil
}

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
	e, p := w.findPlayer(id)
	p.tag, p.revision, p.inventory, p.epoch = spec.Tag, spec.Revision, slices.Clone(spec.Inventory), spec.Epoch
	if spec.Restore && !w.Blocked(float64(spec.X), float64(spec.Y)) {
		e.X, e.Y, e.HP = spec.X, spec.Y, spec.HP
	}
	if e.HP == 0 {
		p.respawnAt = w.tick + 1 // saved while dead: it comes back at once
	}
	return id
}

// CollectDirty returns a record of every player that changed since the
// last collection (every player with all), each with its next revision.
func (w *World) CollectDirty(all bool) []PlayerRecord {
	var out []PlayerRecord
	for i := range w.entities {
		e := &w.entities[i]
		if e.Kind != KindPlayer {
			continue
		}
		if p := w.player(e); p.tag != "" && (p.dirty || all) {
			out = append(out, w.record(e, p))
		}
	}
	return out
}

// Record returns one player's record with its next revision, for a save on
// leave or disconnect.
func (w *World) Record(player uint32) (PlayerRecord, bool) {
	e, p := w.findPlayer(player)
	if p == nil || p.tag == "" {
		return PlayerRecord{}, false
	}
	return w.record(e, p), true
}

func (w *World) record(e *Entity, p *playerState) PlayerRecord {
	p.revision++
	p.dirty = false
	return PlayerRecord{Tag: p.tag, X: e.X, Y: e.Y, HP: e.HP, Revision: p.revision, Tick: w.tick, Epoch: p.epoch}
}

// Tag is the player's outside name.
func (w *World) Tag(player uint32) string {
	if _, p := w.findPlayer(player); p != nil {
		return p.tag
	}
	return ""
}
