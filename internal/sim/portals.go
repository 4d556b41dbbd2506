package sim

import (
	"errors"
	"slices"

	"github.com/roomkeeper/roomkeeper/internal/mapgen"
)

// KindPortal is a portal to another map. Portals never move; a player
// standing within a portal's radius may enter it.
const KindPortal Kind = 5

// Errors of entering a portal; the room server maps them to protocol codes.
var (
	ErrNoPortal  = errors.New("no such portal")
	ErrLeaving   = errors.New("already on the way through a portal")
	ErrNotPlayer = errors.New("not a player")
)

// Portal is a portal entity: its entity id and the anchor it stands on.
type Portal struct {
	Entity uint32
	mapgen.PortalAnchor
}

// spawnPortals turns the map's portal anchors into entities, in anchor
// order, so their ids are the same on every start of the map.
func (w *World) spawnPortals() {
	for _, a := range w.static.Portals {
		e := w.spawn(KindPortal, float32(a.X), float32(a.Y))
		e.HP = 0
		w.portals = append(w.portals, Portal{Entity: e.ID, PortalAnchor: a})
	}
}

// Portals lists the map's portals, in anchor order.
func (w *World) Portals() []Portal { return slices.Clone(w.portals) }

// EnterPortal starts a player's way through a portal: the player must be
// alive, within the portal's radius, and not on its way already. From
// then on its inputs are ignored until LeaveThroughPortal takes it out of
// the world or StayAfterPortal gives it back control.
func (w *World) EnterPortal(player, portal uint32) (Portal, error) {
	p, state := w.findPlayer(player)
	if p == nil {
		return Portal{}, ErrNotPlayer
	}
	i := slices.IndexFunc(w.portals, func(pt Portal) bool { return pt.Entity == portal })
	switch {
	case i < 0:
		return Portal{}, ErrNoPortal
	case p.HP == 0:
		return Portal{}, ErrDead
	case w.leaving[player]:
		return Portal{}, ErrLeaving
	}
	pt := w.portals[i]
	r := float32(pt.Radius)
	if dx, dy := float32(pt.X)-p.X, float32(pt.Y)-p.Y; dx*dx+dy*dy > r*r {
		return Portal{}, ErrOutOfRange
	}
	if w.leaving == nil {
		w.leaving = map[uint32]bool{}
	}
	w.leaving[player] = true
	state.inputs = state.inputs[:0]
	return pt, nil
}

// Leaving reports whether the player is on its way through a portal.
func (w *World) Leaving(player uint32) bool { return w.leaving[player] }

// StayAfterPortal gives a player back control after its transfer failed.
func (w *World) StayAfterPortal(player uint32) {
	delete(w.leaving, player)
}

// LeaveThroughPortal takes a player that entered a portal out of the
// world and returns its final record, for the transfer's checkpoint. The
// next frame no longer has it, so every observer loses it in the same tick.
// A player without a tag (a guest, never saved) leaves all the same, with
// no record.
func (w *World) LeaveThroughPortal(player uint32) (PlayerRecord, bool) {
	record, ok := w.Record(player)
	w.RemovePlayer(player)
	return record, ok
}

// SetLeaseEpoch changes the lease epoch a player's records carry, after
// its map took the lease back.
func (w *World) SetLeaseEpoch(player uint32, epoch int64) {
	if _, p := w.findPlayer(player); p != nil {
		p.epoch = epoch
	}
}
