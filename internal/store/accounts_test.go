package store

import (
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"
)

func TestCreateCharacterFirstIsActive(t *testing.T) {
	t.Parallel()
	s := newStore(t)
	ctx := testCtx(t)
	first, err := s.CreateCharacter(ctx, "alice", "Ayla", false)
	if err != nil {
		t.Fatal(err)
	}
	if !first.Active || first.Name != "Ayla" || first.UserID != "alice" || !strings.HasPrefix(first.ID, "c-") {
		t.Fatalf("first character = %+v, want active Ayla of alice with a c- id", first)
	}
	second, err := s.CreateCharacter(ctx, "alice", "Bram", false)
	if err != nil {
		t.Fatal(err)
	}
	if second.Active || second.ID == first.ID {
		t.Fatalf("second character = %+v, want inactive with a new id", second)
	}
	third, err := s.CreateCharacter(ctx, "alice", "Cato", true)
	if err != nil {
		t.Fatal(err)
	}
	list, err := s.ListCharacters(ctx, "alice")
	if err != nil {
		t.Fatal(err)
	}
	if got := activeNames(list); len(list) != 3 || got != "Cato" || list[0].ID != first.ID || list[2].ID != third.ID {
		t.Fatalf("list = %+v (active %q), want Ayla, Bram, Cato oldest first with Cato active", list, got)
	}
	if other, err := s.ListCharacters(ctx, "bob"); err != nil || len(other) != 0 {
		t.Fatalf("bob's list = %+v, %v; want empty", other, err)
	}
}

// activeNames joins the names of the active characters.
func activeNames(list []Character) string {
	var names []string
	for _, c := range list {
		if c.Active {
			names = append(names, c.Name)
		}
	}
	return strings.Join(names, ",")
}

func TestCreateCharacterBound(t *testing.T) {
	t.Parallel()
	s := newStore(t)
	ctx := testCtx(t)
	for i := range MaxCharactersPerUser {
		if _, err := s.CreateCharacter(ctx, "alice", fmt.Sprint("c", i), false); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := s.CreateCharacter(ctx, "alice", "one too many", false); !errors.Is(err, ErrTooManyCharacters) {
		t.Fatalf("error = %v, want ErrTooManyCharacters", err)
	}
	if _, err := s.CreateCharacter(ctx, "bob", "own bound", false); err != nil {
		t.Fatalf("another user: %v", err)
	}
}

func TestActiveCharacterCreatesDefaultOnce(t *testing.T) {
	t.Parallel()
	s := newStore(t)
	const callers = 16
	got := make([]Character, callers)
	errs := make([]error, callers)
	var wg sync.WaitGroup
	for i := range callers {
		wg.Go(func() { got[i], errs[i] = s.ActiveCharacter(testCtx(t), "alice") })
	}
	wg.Wait()
	for i := range callers {
		if errs[i] != nil {
			t.Fatal(errs[i])
		}
		if got[i].ID != got[0].ID || !got[i].Active || got[i].Name != DefaultCharacterName {
			t.Fatalf("caller %d got %+v, caller 0 got %+v: want the same active %q", i, got[i], got[0], DefaultCharacterName)
		}
	}
	if n := count(t, s, `SELECT count(*) FROM characters WHERE user_id = 'alice'`); n != 1 {
		t.Fatalf("alice has %d characters, want 1", n)
	}
	again, err := s.ActiveCharacter(testCtx(t), "alice")
	if err != nil || again.ID != got[0].ID {
		t.Fatalf("later call = %+v, %v; want %s", again, err, got[0].ID)
	}
}

func TestActiveCharacterAfterDeletingTheActiveOne(t *testing.T) {
	t.Parallel()
	s := newStore(t)
	ctx := testCtx(t)
	first, err := s.CreateCharacter(ctx, "alice", "Ayla", false)
	if err != nil {
		t.Fatal(err)
	}
	second, err := s.CreateCharacter(ctx, "alice", "Bram", false)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.DeleteCharacter(ctx, "alice", first.ID, nil); err != nil {
		t.Fatal(err)
	}
	list, err := s.ListCharacters(ctx, "alice")
	if err != nil || len(list) != 1 || activeNames(list) != "" {
		t.Fatalf("after deleting the active one: %+v, %v; want Bram alone, inactive", list, err)
	}
	active, err := s.ActiveCharacter(ctx, "alice")
	if err != nil || active.ID != second.ID || !active.Active {
		t.Fatalf("active = %+v, %v; want Bram (%s) activated, not a new character", active, err, second.ID)
	}
}

func TestCharacterOwnership(t *testing.T) {
	t.Parallel()
	s := newStore(t)
	ctx := testCtx(t)
	mine, err := s.CreateCharacter(ctx, "alice", "Ayla", false)
	if err != nil {
		t.Fatal(err)
	}
	if c, err := s.CharacterOf(ctx, "alice", mine.ID); err != nil || c != mine {
		t.Fatalf("own character = %+v, %v; want %+v", c, err, mine)
	}
	if _, err := s.CharacterOf(ctx, "bob", mine.ID); !errors.Is(err, ErrNotOwner) {
		t.Fatalf("someone else's: error = %v, want ErrNotOwner", err)
	}
	if _, err := s.CharacterOf(ctx, "alice", "c-missing"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("missing: error = %v, want ErrNotFound", err)
	}
	if err := s.DeleteCharacter(ctx, "bob", mine.ID, nil); !errors.Is(err, ErrNotOwner) {
		t.Fatalf("delete someone else's: error = %v, want ErrNotOwner", err)
	}
	if err := s.DeleteCharacter(ctx, "alice", "c-missing", nil); !errors.Is(err, ErrNotFound) {
		t.Fatalf("delete missing: error = %v, want ErrNotFound", err)
	}
	if err := s.DeleteCharacter(ctx, "alice", mine.ID, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := s.CharacterOf(ctx, "alice", mine.ID); !errors.Is(err, ErrNotFound) {
		t.Fatalf("after delete: error = %v, want ErrNotFound", err)
	}
}

// TestDeleteCharacterTakesItsStateAlong: the cascade leaves no state,
// checkpoint history or lease behind a deleted character.
func TestDeleteCharacterTakesItsStateAlong(t *testing.T) {
	t.Parallel()
	s := newStore(t)
	ctx := testCtx(t)
	c, err := s.ActiveCharacter(ctx, "alice")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.SaveStates(ctx, "town-1", leased(t, s, "town-1", state(c.ID, 1))); err != nil {
		t.Fatal(err)
	}
	if n := count(t, s, `SELECT count(*) FROM checkpoint_history WHERE character_id = $1`, c.ID); n != 1 {
		t.Fatalf("%d checkpoint history rows before the delete, want 1", n)
	}
	if err := s.DeleteCharacter(ctx, "alice", c.ID, nil); err != nil {
		t.Fatal(err)
	}
	if n := count(t, s, `SELECT count(*) FROM character_state WHERE character_id = $1`, c.ID); n != 0 {
		t.Fatalf("%d state rows left", n)
	}
	if n := count(t, s, `SELECT count(*) FROM checkpoint_history WHERE character_id = $1`, c.ID); n != 0 {
		t.Fatalf("%d checkpoint history rows left", n)
	}
}

// TestDeleteCharacterRacingItsPickup: a character deleted while its map
// commits its pickup of a critical item never leaves the item held by a
// character that no longer exists. Either the pickup commits first and
// the delete destroys the item, with its owner_deleted audit row, or the
// delete commits first and the pickup, its lease gone, is refused.
func TestDeleteCharacterRacingItsPickup(t *testing.T) {
	t.Parallel()
	s := newStore(t)
	ctx := testCtx(t)
	for round := range 20 {
		c, err := s.CreateCharacter(ctx, "alice", fmt.Sprint("hero", round), true)
		if err != nil {
			t.Fatal(err)
		}
		item := fmt.Sprint("key-", round)
		ev, move := pickup("p-"+item, c.ID, "crypt-1", item)
		move.To.Kind = "" // the item keeps its critical kind
		lease, err := s.ClaimLease(ctx, c.ID, "crypt-1", "pod", time.Hour, time.Now())
		if err != nil {
			t.Fatal(err)
		}
		ev.Epoch = lease.Epoch
		if err := s.Recover(ctx, Recovery{EventID: "make-" + item, ItemID: item, Kind: keyPolicy.Kind,
			MapInstance: "crypt-1", Reason: "missing", ToX: 1, ToY: 1}); err != nil {
			t.Fatal(err)
		}
		var wg sync.WaitGroup
		var pickErr, delErr error
		wg.Go(func() { pickErr = s.CommitCritical(ctx, ev, move) })
		wg.Go(func() { delErr = s.DeleteCharacter(ctx, "alice", c.ID, []string{keyPolicy.Kind}) })
		wg.Wait()
		if delErr != nil || (pickErr != nil && !errors.Is(pickErr, ErrLeaseLost)) {
			t.Fatalf("round %d: delete %v, pickup %v (want nil or ErrLeaseLost)", round, delErr, pickErr)
		}
		checkAfterDelete(t, s, item, c.ID, pickErr == nil)
	}
}

// checkAfterDelete checks where item is after its picker chr was deleted:
// destroyed and audited if the pickup committed, else still on the map.
func checkAfterDelete(t *testing.T, s *Postgres, item, chr string, picked bool) {
	t.Helper()
	items, err := s.Items(testCtx(t), []string{item})
	if err != nil || len(items) != 1 {
		t.Fatalf("%s: %+v %v", item, items, err)
	}
	audits := count(t, s, `SELECT count(*) FROM item_recovery_audit
WHERE item_id = $1 AND reason = 'owner_deleted' AND old_owner_id = $2`, item, chr)
	switch it := items[0]; {
	case picked && (it.OwnerKind != OwnerDestroyed || audits != 1):
		t.Errorf("%s picked up, then its holder deleted: %+v, %d owner_deleted rows", item, it, audits)
	case !picked && (it.OwnerKind != OwnerMap || audits != 0):
		t.Errorf("%s not picked up: %+v, %d owner_deleted rows", item, it, audits)
	}
}

// TestAccountsOutage: with the database gone every accounts call fails
// with ErrUnavailable, and works again once it is back.
func TestAccountsOutage(t *testing.T) {
	t.Parallel()
	own, s := ownStore(t, "accounts_outage")
	c, err := s.ActiveCharacter(testCtx(t), "alice")
	if err != nil {
		t.Fatal(err)
	}
	if err := own.Kill(); err != nil {
		t.Fatal(err)
	}
	checkAll(t, "database killed", accountCalls(t, s, c.ID), ErrUnavailable)
	if err := own.Restart(); err != nil {
		t.Fatal(err)
	}
	if _, err := s.ActiveCharacter(testCtx(t), "alice"); err != nil {
		t.Fatalf("after restart: %v", err)
	}
}

// accountCalls runs each accounts method once.
func accountCalls(t *testing.T, s *Postgres, id string) map[string]error {
	ctx := testCtx(t)
	errs := map[string]error{}
	_, errs["ListCharacters"] = s.ListCharacters(ctx, "alice")
	_, errs["CreateCharacter"] = s.CreateCharacter(ctx, "alice", "x", false)
	_, errs["ActiveCharacter"] = s.ActiveCharacter(ctx, "bob")
	_, errs["CharacterOf"] = s.CharacterOf(ctx, "alice", id)
	errs["DeleteCharacter"] = s.DeleteCharacter(ctx, "alice", id, nil)
	return errs
}

// TestWithCharacterCap: at the cap create does not run and the caller gets
// ErrCharacterCap; under it create runs.
func TestWithCharacterCap(t *testing.T) {
	s := newStore(t)
	ctx := testCtx(t)
	made := 0
	create := func() error {
		made++
		_, err := s.CreateCharacter(ctx, fmt.Sprintf("u%d", made), "x", false)
		return err
	}
	for range 2 {
		if err := s.WithCharacterCap(ctx, 2, create); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.WithCharacterCap(ctx, 2, create); !errors.Is(err, ErrCharacterCap) || made != 2 {
		t.Fatalf("at the cap: %v, create ran %d times; want ErrCharacterCap and 2", err, made)
	}
}
