package store

import (
	"errors"
	"fmt"
	"sync"
	"testing"
)

// pickup is a fixture: character chr takes item from the floor of map.
func pickup(eventID, chr, mapInstance, item string) (CriticalEvent, Move) {
	ev := CriticalEvent{EventID: eventID, CharacterID: chr, MapInstance: mapInstance, Kind: "loot.pickup",
		ItemID: item, Tick: 100, Payload: []byte(`{"slot":1}`)}
	return ev, Move{FromKind: OwnerMap, FromID: mapInstance,
		To: Item{ItemID: item, Kind: "sword", OwnerKind: OwnerCharacter, OwnerID: chr}}
}

// drop is a fixture: character chr puts item on the floor of map at (x, y).
func drop(eventID, chr, mapInstance, item string, x, y float32) (CriticalEvent, Move) {
	ev := CriticalEvent{EventID: eventID, CharacterID: chr, MapInstance: mapInstance, Kind: "inventory.drop",
		ItemID: item, Tick: 200}
	return ev, Move{FromKind: OwnerCharacter, FromID: chr,
		To: Item{ItemID: item, OwnerKind: OwnerMap, OwnerID: mapInstance, X: x, Y: y}}
}

func TestCommitCriticalMovesItems(t *testing.T) {
	t.Parallel()
	s := newStore(t)
	ctx := testCtx(t)
	commit := committer(t, s)

	if err := commit(pickup("e1", "alice", "town-1", "sword-1")); err != nil {
		t.Fatalf("first pickup of a spawned item: %v", err)
	}
	held, err := s.ItemsOf(ctx, "alice")
	if err != nil {
		t.Fatal(err)
	}
	if len(held) != 1 || held[0].ItemID != "sword-1" || held[0].Kind != "sword" || held[0].Revision != 1 {
		t.Fatalf("alice holds %+v", held)
	}

	if err := commit(drop("e2", "alice", "town-1", "sword-1", 3.5, -2)); err != nil {
		t.Fatalf("drop: %v", err)
	}
	onMap, err := s.ItemsOn(ctx, "town-1")
	if err != nil {
		t.Fatal(err)
	}
	if len(onMap) != 1 || onMap[0].X != 3.5 || onMap[0].Y != -2 || onMap[0].Kind != "sword" || onMap[0].Revision != 2 {
		t.Fatalf("town-1 has %+v", onMap)
	}
	if held, _ := s.ItemsOf(ctx, "alice"); len(held) != 0 {
		t.Fatalf("alice still holds %+v", held)
	}

	if err := commit(pickup("e3", "bob", "town-1", "sword-1")); err != nil {
		t.Fatalf("pickup of a dropped item: %v", err)
	}
	events, err := s.EventsOf(ctx, "alice")
	if err != nil {
		t.Fatal(err)
	}
	if len(events) != 2 || events[0].EventID != "e1" || events[1].EventID != "e2" ||
		string(events[0].Payload) != `{"slot":1}` || events[1].Payload != nil || events[0].CreatedAt.IsZero() {
		t.Fatalf("alice's events = %+v", events)
	}
}

func TestCommitCriticalIsIdempotent(t *testing.T) {
	t.Parallel()
	s := newStore(t)
	ctx := testCtx(t)
	commit := committer(t, s)
	if err := commit(pickup("e1", "alice", "town-1", "sword-1")); err != nil {
		t.Fatal(err)
	}
	if err := commit(drop("e2", "alice", "town-1", "sword-1", 0, 0)); err != nil {
		t.Fatal(err)
	}
	// A retry of e1 whose acknowledgement was lost: nil, and the item stays on the map.
	if err := commit(pickup("e1", "alice", "town-1", "sword-1")); err != nil {
		t.Fatalf("retry of a committed event: %v", err)
	}
	if onMap, _ := s.ItemsOn(ctx, "town-1"); len(onMap) != 1 || onMap[0].Revision != 2 {
		t.Fatalf("a retried event moved the item: %+v", onMap)
	}
	if n := count(t, s, `SELECT count(*) FROM critical_events`); n != 2 {
		t.Fatalf("%d events, want 2", n)
	}
}

func TestCommitCriticalRefusesItemsNotWhereExpected(t *testing.T) {
	t.Parallel()
	s := newStore(t)
	ctx := testCtx(t)
	commit := committer(t, s)
	if err := commit(pickup("e1", "alice", "town-1", "sword-1")); err != nil {
		t.Fatal(err)
	}
	cases := map[string]func() (CriticalEvent, Move){
		"pickup of a held item":       func() (CriticalEvent, Move) { return pickup("x1", "bob", "town-1", "sword-1") },
		"drop of someone else's item": func() (CriticalEvent, Move) { return drop("x2", "bob", "town-1", "sword-1", 0, 0) },
		"drop of an item never stored": func() (CriticalEvent, Move) {
			return drop("x3", "bob", "town-1", "shield-1", 0, 0)
		},
	}
	for name, fixture := range cases {
		if err := commit(fixture()); !errors.Is(err, ErrItemTaken) {
			t.Errorf("%s: error = %v, want ErrItemTaken", name, err)
		}
	}
	if n := count(t, s, `SELECT count(*) FROM critical_events`); n != 1 {
		t.Fatalf("%d events stored, want only the successful one", n)
	}
	if held, _ := s.ItemsOf(ctx, "alice"); len(held) != 1 {
		t.Fatalf("alice lost the item: %+v", held)
	}
}

func TestCommitCriticalRaceOneWinner(t *testing.T) {
	t.Parallel()
	s := newStore(t)
	commit := committer(t, s)
	const players = 16
	for _, item := range []string{"never-stored", "dropped"} {
		if item == "dropped" {
			if err := commit(pickup("setup-1", "owner", "town-1", item)); err != nil {
				t.Fatal(err)
			}
			if err := commit(drop("setup-2", "owner", "town-1", item, 0, 0)); err != nil {
				t.Fatal(err)
			}
		}
		errs := make([]error, players)
		var wg sync.WaitGroup
		for i := range players {
			chr := fmt.Sprint("p", i)
			wg.Go(func() { errs[i] = commit(pickup(item+"-"+chr, chr, "town-1", item)) })
		}
		wg.Wait()
		winners := 0
		for _, err := range errs {
			switch {
			case err == nil:
				winners++
			case !errors.Is(err, ErrItemTaken):
				t.Errorf("%s: unexpected error: %v", item, err)
			}
		}
		if winners != 1 {
			t.Fatalf("%s: %d players picked it up, want 1", item, winners)
		}
		if n := count(t, s, `SELECT count(*) FROM critical_events WHERE item_id = $1 AND kind = 'loot.pickup' AND event_id NOT LIKE 'setup%'`, item); n != 1 {
			t.Fatalf("%s: %d pickup events, want 1", item, n)
		}
	}
}

func TestCommitCriticalRefusesMalformed(t *testing.T) {
	t.Parallel()
	s := newStore(t)
	e, m := pickup("", "alice", "town-1", "sword-1")
	if err := s.CommitCritical(testCtx(t), e, m); err == nil {
		t.Error("empty event id accepted")
	}
	e, m = pickup("e1", "alice", "town-1", "sword-1")
	m.To.OwnerKind = "guild"
	if err := s.CommitCritical(testCtx(t), e, m); err == nil {
		t.Error("unknown owner kind accepted")
	}
}

// committer lets a fixture's pair feed CommitCritical directly:
// commit(pickup(...)).
func committer(t testing.TB, s *Postgres) func(CriticalEvent, Move) error {
	return func(e CriticalEvent, m Move) error { return s.CommitCritical(testCtx(t), withLease(t, s, e), m) }
}

// equipMove is a fixture: character chr moves item between slots ("" the bag).
func equipMove(chr, item, from, to string) Move {
	return Move{FromKind: OwnerCharacter, FromID: chr, FromSlot: from,
		To: Item{ItemID: item, OwnerKind: OwnerCharacter, OwnerID: chr, Slot: to}}
}

// An equip moves an item between the bag and a slot; a swap takes the old
// item off and puts the new one on in one transaction; a slot holds one
// item, and a move from a slot the item is not in is refused.
func TestEquipMovesBetweenBagAndSlots(t *testing.T) {
	t.Parallel()
	s := newStore(t)
	ctx := testCtx(t)
	commit := committer(t, s)
	for i, item := range []string{"s1", "s2"} {
		if err := commit(pickup(fmt.Sprint("p", i), "ann", "town-1", item)); err != nil {
			t.Fatal(err)
		}
	}
	equip := func(id, item string, moves ...Move) error {
		ev := CriticalEvent{EventID: id, CharacterID: "ann", MapInstance: "town-1", Kind: "inventory.equip", ItemID: item, Tick: 5}
		return s.CommitCritical(ctx, withLease(t, s, ev), moves...)
	}
	slots := func() map[string]string {
		items, err := s.ItemsOf(ctx, "ann")
		if err != nil {
			t.Fatal(err)
		}
		at := map[string]string{}
		for _, it := range items {
			at[it.ItemID] = it.Slot
		}
		return at
	}
	if err := equip("e1", "s1", equipMove("ann", "s1", "", "weapon")); err != nil {
		t.Fatal(err)
	}
	if err := equip("e2", "s2", equipMove("ann", "s2", "", "weapon")); !errors.Is(err, ErrItemTaken) {
		t.Errorf("a second item into a full slot: %v, want ErrItemTaken", err)
	}
	if err := equip("e3", "s2", equipMove("ann", "s2", "head", "weapon")); !errors.Is(err, ErrItemTaken) {
		t.Errorf("from a slot the item is not in: %v, want ErrItemTaken", err)
	}
	if err := equip("e4", "s2", equipMove("ann", "s1", "weapon", ""), equipMove("ann", "s2", "", "weapon")); err != nil {
		t.Fatalf("the swap: %v", err)
	}
	if got := slots(); got["s1"] != "" || got["s2"] != "weapon" {
		t.Errorf("after the swap: %v", got)
	}
	if err := equip("e5", "s9", equipMove("ann", "s1", "", "offhand")); err == nil || errors.Is(err, ErrItemTaken) {
		t.Errorf("an event naming an item no move moves: %v", err)
	}
	if err := equip("e6", "s1", Move{FromKind: OwnerCharacter, FromID: "ann", To: Item{ItemID: "s1", OwnerKind: OwnerMap, OwnerID: "town-1", Slot: "head"}}); err == nil {
		t.Error("an item worn by a map was accepted")
	}
	events, _ := s.EventsOf(ctx, "ann")
	if len(events) != 4 {
		t.Errorf("%d events, want the 2 pickups, the equip and the swap", len(events))
	}
}

// An event with the actor's State writes it in the event's transaction:
// both land, or neither (an item taken meanwhile leaves the state as it
// was); a state of another character is refused.
func TestACriticalEventCommitsItsActorsState(t *testing.T) {
	t.Parallel()
	s := newStore(t)
	ctx := testCtx(t)
	commit := committer(t, s)
	if err := commit(pickup("p1", "bea", "town-1", "potion-1")); err != nil {
		t.Fatal(err)
	}
	use := func(id string, hp byte) error {
		ev := withLease(t, s, CriticalEvent{EventID: id, CharacterID: "bea", MapInstance: "town-1", Kind: "inventory.use", ItemID: "potion-1", Tick: 9})
		payload := []byte(fmt.Sprintf(`{"hp":%d}`, hp))
		ev.State = &CharacterState{CharacterID: "bea", SchemaVersion: 5, SimCoreVersion: "sim", Revision: int64(hp), SavedTick: 9,
			Payload: payload, StateHash: HashPayload(payload), Epoch: ev.Epoch}
		return s.CommitCritical(ctx, ev, Move{FromKind: OwnerCharacter, FromID: "bea", To: Item{ItemID: "potion-1", OwnerKind: OwnerDestroyed}})
	}
	if err := use("u1", 70); err != nil {
		t.Fatal(err)
	}
	if st, err := s.LoadState(ctx, "bea"); err != nil || string(st.Payload) != `{"hp":70}` {
		t.Fatalf("after the use: %s %v, want its state", st.Payload, err)
	}
	if err := use("u2", 99); !errors.Is(err, ErrItemTaken) {
		t.Fatalf("the potion used again: %v, want ErrItemTaken", err)
	}
	if st, _ := s.LoadState(ctx, "bea"); string(st.Payload) != `{"hp":70}` {
		t.Errorf("a refused use wrote its state: %s", st.Payload)
	}
	ev, m := pickup("p2", "bea", "town-1", "potion-2")
	ev.State = &CharacterState{CharacterID: "cid", Revision: 200}
	if err := s.CommitCritical(ctx, withLease(t, s, ev), m); err == nil {
		t.Error("a state of another character was committed with bea's event")
	}
}
