package roomserver

import (
	"cmp"
	"context"
	"errors"

	"github.com/roomkeeper/roomkeeper/internal/content"
	"github.com/roomkeeper/roomkeeper/internal/protocol"
	"github.com/roomkeeper/roomkeeper/internal/sim"
	"github.com/roomkeeper/roomkeeper/internal/store"
)

// guestPrefix marks the user ids of disposable guests: they play but are
// never written to the database.
const guestPrefix = "guest-"

// persisted reports whether a seat's character is saved.
func (s *Server) persisted(st *seat) bool {
	return s.db != nil && !st.isGuest()
}

// admit checks a joining character against the database and returns how
// to place it: the character must belong to the ticket's user, must not be
// authoritative in another map (its lease; a character arriving through a
// portal takes the lease its transfer handed over), and comes back with
// its last checkpoint and the items it owns. A stored state that is
// corrupt or of an unknown schema refuses the join rather than resetting
// the character.
func (s *Server) admit(ctx context.Context, st *seat) (sim.PlayerSpec, error) {
	if !s.persisted(st) {
		spec := sim.PlayerSpec{}
		if st.transfer != "" { // a guest keeps nothing, but arrives at the portal
			spec.Restore, spec.HP = true, s.cfg.Sim.MaxHP
			spec.X, spec.Y = s.arrival(st.fromMap)
		}
		return spec, nil
	}
	// A transfer's ticket is the source pod's, for the character and user
	// whose join checked them: the character exists and is the user's, and
	// a handover's fifty arrivals spare their pool two statements each.
	if st.transfer == "" {
		if err := s.db.EnsureCharacter(ctx, st.character, st.user); err != nil {
			return sim.PlayerSpec{}, s.storeError(err, "checking the character")
		}
	}
	var arrived store.ArrivalResult
	var lease store.Lease
	var err error
	switch {
	case st.transfer != "":
		arrived = s.acceptTransfer(st)
		err, lease, st.returned = arrived.Err, arrived.Lease, arrived.Returned
	case st.restoring:
		lease, err = s.db.resumeLease(ctx, st.character, st.restoredEpoch)
	default:
		lease, err = s.db.claimLease(ctx, st.character)
	}
	st.setLease(lease)
	if err != nil {
		return sim.PlayerSpec{}, s.storeError(err, "claiming the character")
	}
	if st.transfer == "" { // an arrival's batch loaded it
		arrived = s.loadStored(ctx, st.character)
	}
	spec, err := s.placeCharacter(st, arrived)
	if err != nil {
		s.releaseLease(st)
		return sim.PlayerSpec{}, err
	}
	spec.Epoch = st.lease().Epoch
	return spec, nil
}

// loadStored reads the character's checkpoint and items, as an arrival's
// batch does.
func (s *Server) loadStored(ctx context.Context, character string) store.ArrivalResult {
	var r store.ArrivalResult
	r.State, r.StateErr = s.db.LoadState(ctx, character)
	if r.StateErr == nil || errors.Is(r.StateErr, store.ErrNotFound) {
		r.Items, r.Err = s.db.ItemsOf(ctx, character)
	}
	return r
}

// placeCharacter restores the character as stored and places it: at the
// arrival of this map when it came through a portal or its state is on
// another map, back where it stood when its transfer failed, else where
// it was. A stored state that is corrupt or of an unknown schema refuses
// the join rather than resetting the character.
func (s *Server) placeCharacter(st *seat, stored store.ArrivalResult) (sim.PlayerSpec, error) {
	r := restored{PlayerSpec: sim.PlayerSpec{Tag: st.character, HP: s.cfg.Sim.MaxHP}}
	var err error
	switch {
	case errors.Is(stored.StateErr, store.ErrNotFound): // a new character starts at the spawn
	case stored.StateErr != nil:
		return r.PlayerSpec, s.storeError(stored.StateErr, "loading the character")
	default:
		if r, err = decodeState(stored.State, s.cfg.Sim.MaxHP, s.deps.Clock()); err != nil {
			return r.PlayerSpec, s.storeError(err, "loading the character")
		}
	}
	if stored.Err != nil {
		return r.PlayerSpec, s.storeError(stored.Err, "loading the inventory")
	}
	switch {
	case st.returned:
		r.Restore, r.X, r.Y = true, stored.Transfer.FromX, stored.Transfer.FromY
	case st.handedOver: // where the transfer's checkpoint left it
		r.Restore = true
	case st.transfer != "":
		r.Restore = true
		r.X, r.Y = s.arrival(cmp.Or(r.Map, st.fromMap))
	case r.Restore && r.Map != "" && r.Map != s.cfg.Map:
		r.X, r.Y = s.arrival(r.Map)
	}
	for _, it := range stored.Items {
		item := sim.Item{ID: it.ItemID, Kind: it.Kind}
		if slot, ok := content.ParseSlot(it.Slot); ok {
			r.Worn = append(r.Worn, sim.Worn{Item: item, Slot: slot})
		} else {
			r.Inventory = append(r.Inventory, item)
		}
	}
	return r.PlayerSpec, nil
}

// arrival is where a player coming from map from appears on this map.
func (s *Server) arrival(from string) (float32, float32) {
	p := s.static.Arrival(from)
	return float32(p.X), float32(p.Y)
}

// saveSeated writes the state of a seat of this map before its character
// joins again, so the new seat loads what the old one had.
func (s *Server) saveSeated(ctx context.Context, st *seat) {
	if s.db == nil {
		return
	}
	var record sim.PlayerRecord
	var ok bool
	if s.loop.Do(ctx, func(w *sim.World) { record, ok = w.Record(st.player) }) == nil && ok {
		s.db.checkpoints.add(record) // what the flush cannot write stays pending, retried
		s.noteFailure(opCheckpoint, s.db.checkpoints.flush(ctx))
	}
}

// releaseLease gives up the lease of a seat that was not seated after
// all; one that cannot be released expires by itself.
func (s *Server) releaseLease(st *seat) {
	lease := st.lease()
	if s.db == nil || lease.CharacterID == "" {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), s.cfg.CriticalTimeout)
	defer cancel()
	s.noteFailure(opReleaseLease, s.db.ReleaseLease(ctx, lease))
}

// storeError maps a store error to what the client is told. Failures an
// operator must see (the database unavailable or slow, corrupt state,
// anything unexpected) are logged here, once, with their cause; the client
// gets the code and no internals.
func (s *Server) storeError(err error, doing string) error {
	pe := classifyStoreError(err, doing)
	switch pe.Code {
	case protocol.CodePersistenceUnavailable, protocol.CodeInternal:
		s.deps.Log.Warn("Database call failed", "doing", doing, "code", pe.Code, "err", err)
	}
	return pe
}
