package roomserver

import (
	"context"
	"errors"
	"strings"

	"github.com/roomkeeper/roomkeeper/internal/protocol"
	"github.com/roomkeeper/roomkeeper/internal/sim"
	"github.com/roomkeeper/roomkeeper/internal/store"
)

// guestPrefix marks the user ids of disposable guests: they play but are
// never written to the database.
const guestPrefix = "guest-"

// persisted reports whether a seat's character is saved.
func (s *Server) persisted(st *seat) bool {
	return s.persist != nil && !strings.HasPrefix(st.user, guestPrefix)
}

// admit checks a joining character against the database and returns how
// to place it: the character must belong to the ticket's user, must not be
// authoritative in another map (its lease), and comes back with its last
// checkpoint and the items it owns. A stored state that is corrupt or of an
// unknown schema refuses the join rather than resetting the character.
func (s *Server) admit(ctx context.Context, st *seat) (sim.PlayerSpec, error) {
	if !s.persisted(st) {
		return sim.PlayerSpec{}, nil
	}
	db := s.deps.Store
	if err := db.EnsureCharacter(ctx, st.character, st.user); err != nil {
		return sim.PlayerSpec{}, storeError(err, "checking the character")
	}
	lease, err := db.ClaimLease(ctx, st.character, s.cfg.Instance, s.cfg.Pod, s.cfg.LeaseTTL, s.deps.Clock())
	if err != nil {
		return sim.PlayerSpec{}, storeError(err, "claiming the character")
	}
	st.lease = lease
	spec, err := s.loadCharacter(ctx, st.character)
	if err != nil {
		s.releaseLease(st)
		return sim.PlayerSpec{}, err
	}
	return spec, nil
}

func (s *Server) loadCharacter(ctx context.Context, character string) (sim.PlayerSpec, error) {
	db := s.deps.Store
	spec := sim.PlayerSpec{Tag: character}
	state, err := db.LoadState(ctx, character)
	switch {
	case errors.Is(err, store.ErrNotFound): // a new character starts at the spawn
	case err != nil:
		return spec, storeError(err, "loading the character")
	default:
		if spec, err = decodeState(state, s.cfg.Sim.MaxHP); err != nil {
			return spec, storeError(err, "loading the character")
		}
	}
	items, err := db.ItemsOf(ctx, character)
	if err != nil {
		return spec, storeError(err, "loading the inventory")
	}
	for _, it := range items {
		spec.Inventory = append(spec.Inventory, sim.Item{ID: it.ItemID, Kind: it.Kind})
	}
	return spec, nil
}

// saveSeated writes the state of a character already seated here before it
// joins again, so the new seat loads what the old one had.
func (s *Server) saveSeated(ctx context.Context, character string) {
	if s.persist == nil {
		return
	}
	for _, st := range s.seats.all() {
		if st.character != character {
			continue
		}
		var record sim.PlayerRecord
		var ok bool
		if s.loop.Do(ctx, func(w *sim.World) { record, ok = w.Record(st.player) }) == nil && ok {
			s.persist.add(record)
			_ = s.persist.flush(ctx)
		}
	}
}

func (s *Server) releaseLease(st *seat) {
	if s.persist == nil || st.lease.CharacterID == "" {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), s.cfg.CriticalTimeout)
	defer cancel()
	_ = s.deps.Store.ReleaseLease(ctx, st.lease)
}

// storeError maps a store error to what the client is told.
func storeError(err error, doing string) error {
	switch {
	case errors.Is(err, store.ErrNotOwner):
		return protocol.Errorf(protocol.CodeNotOwner, "the character belongs to another user")
	case errors.Is(err, store.ErrLeaseHeld):
		return protocol.Errorf(protocol.CodeAlreadyTaken, "the character is active in another map")
	case errors.Is(err, store.ErrItemTaken):
		return protocol.Errorf(protocol.CodeAlreadyTaken, "someone else has it")
	case errors.Is(err, store.ErrCorrupt), errors.Is(err, store.ErrUnknownSchema):
		return protocol.Errorf(protocol.CodeInternal, "%s: %v", doing, err)
	case errors.Is(err, store.ErrUnavailable), errors.Is(err, context.DeadlineExceeded):
		return protocol.Errorf(protocol.CodePersistenceUnavailable, "%s: the database is unavailable, try again", doing)
	default:
		return protocol.Errorf(protocol.CodeInternal, "%s failed", doing)
	}
}

func itemViews(items []sim.Item) []protocol.ItemView {
	views := make([]protocol.ItemView, len(items))
	for i, it := range items {
		views[i] = protocol.ItemView{ID: it.ID, Kind: it.Kind}
	}
	return views
}
