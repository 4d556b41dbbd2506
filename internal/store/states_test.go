package store

import (
	"bytes"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
)

// state is a fixture: a state of character id at rev with a payload that
// names both.
func state(id string, rev int64) CharacterState {
	payload := fmt.Appendf(nil, `{"id":%q,"rev":%d}`, id, rev)
	return CharacterState{CharacterID: id, SchemaVersion: 3, SimCoreVersion: "sim-1", Revision: rev,
		SavedTick: rev * 30, Payload: payload, StateHash: HashPayload(payload)}
}

func TestSaveAndLoadState(t *testing.T) {
	t.Parallel()
	s := newStore(t)
	ctx := testCtx(t)
	mustEnsure(t, s, "a", "b")
	if _, err := s.LoadState(ctx, "a"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("load before any save: error = %v, want ErrNotFound", err)
	}
	res, err := s.SaveStates(ctx, "town-1", leased(t, s, "town-1", state("a", 1), state("b", 5)))
	if err != nil {
		t.Fatal(err)
	}
	if res != (SaveResult{Saved: 2}) {
		t.Fatalf("result = %+v, want 2 saved", res)
	}
	got, err := s.LoadState(ctx, "b")
	if err != nil {
		t.Fatal(err)
	}
	want := state("b", 5)
	if got.SchemaVersion != 3 || got.SimCoreVersion != "sim-1" || got.Revision != 5 || got.SavedTick != 150 ||
		!bytes.Equal(got.Payload, want.Payload) || got.StateHash != want.StateHash || got.UpdatedAt.IsZero() {
		t.Fatalf("loaded %+v, want %+v", got, want)
	}
}

func TestSaveStatesNeverGoesBack(t *testing.T) {
	t.Parallel()
	s := newStore(t)
	ctx := testCtx(t)
	mustEnsure(t, s, "a", "b", "c")
	if _, err := s.SaveStates(ctx, "town-1", leased(t, s, "town-1", state("a", 5), state("b", 5))); err != nil {
		t.Fatal(err)
	}
	// a older, b equal (a retry), c new.
	res, err := s.SaveStates(ctx, "town-1", leased(t, s, "town-1", state("a", 4), state("b", 5), state("c", 1)))
	if err != nil {
		t.Fatal(err)
	}
	if res != (SaveResult{Saved: 1, Stale: 2}) {
		t.Fatalf("result = %+v, want 1 saved, 2 stale", res)
	}
	for id, rev := range map[string]int64{"a": 5, "b": 5, "c": 1} {
		got, err := s.LoadState(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		if got.Revision != rev {
			t.Errorf("%s at revision %d, want %d", id, got.Revision, rev)
		}
	}
}

func TestSaveStatesBatchOddities(t *testing.T) {
	t.Parallel()
	s := newStore(t)
	ctx := testCtx(t)
	mustEnsure(t, s, "a")
	noHash := state("a", 2)
	noHash.StateHash = ""
	// The same character twice (newest wins) and a character that does not exist.
	res, err := s.SaveStates(ctx, "town-1", leased(t, s, "town-1", state("a", 1), noHash, state("deleted", 1)))
	if err != nil {
		t.Fatal(err)
	}
	if res != (SaveResult{Saved: 1, Stale: 2}) {
		t.Fatalf("result = %+v, want 1 saved, 2 stale", res)
	}
	got, err := s.LoadState(ctx, "a")
	if err != nil {
		t.Fatal(err)
	}
	if got.Revision != 2 || got.StateHash != HashPayload(got.Payload) {
		t.Fatalf("loaded revision %d hash %s", got.Revision, got.StateHash)
	}

	bad := state("a", 3)
	bad.StateHash = HashPayload([]byte("something else"))
	if _, err := s.SaveStates(ctx, "town-1", leased(t, s, "town-1", bad)); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("wrong hash: error = %v, want ErrCorrupt", err)
	}
	if res, err := s.SaveStates(ctx, "town-1", nil); err != nil || res != (SaveResult{}) {
		t.Fatalf("empty batch: %+v, %v", res, err)
	}
}

func TestSaveStatesConcurrentOverlappingBatches(t *testing.T) {
	t.Parallel()
	s := newStore(t)
	const n = 200
	var batch []CharacterState
	for i := range n {
		id := fmt.Sprintf("c%03d", i)
		mustEnsure(t, s, id)
		batch = append(batch, state(id, 1))
	}
	batch = leased(t, s, "town-1", batch...)
	reversed := make([]CharacterState, n)
	for i, st := range batch {
		st.Revision = 2
		reversed[n-1-i] = st
	}
	var wg sync.WaitGroup
	errs := make([]error, 8)
	for i := range errs {
		b := batch
		if i%2 == 1 {
			b = reversed
		}
		wg.Go(func() { _, errs[i] = s.SaveStates(testCtx(t), "town-1", b) })
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	if n := count(t, s, `SELECT count(*) FROM character_state WHERE revision = 2`); n != len(batch) {
		t.Fatalf("%d states at revision 2, want %d", n, len(batch))
	}
}

func TestSaveStatesAuditsAndPrunesTheWindow(t *testing.T) {
	t.Parallel()
	s := newStore(t)
	ctx := testCtx(t)
	mustEnsure(t, s, "a")
	if _, err := s.DB().ExecContext(ctx, `INSERT INTO checkpoint_audit (map_instance, saved, stale, duration_ms, at)
VALUES ('old', 1, 0, 1, now() - interval '25 hours'), ('recent', 1, 0, 1, now() - interval '23 hours')`); err != nil {
		t.Fatal(err)
	}
	if _, err := s.SaveStates(ctx, "town-1", leased(t, s, "town-1", state("a", 1), state("a", 1))); err != nil {
		t.Fatal(err)
	}
	if n := count(t, s, `SELECT count(*) FROM checkpoint_audit WHERE map_instance = 'old'`); n != 0 {
		t.Error("an audit row older than a day survived")
	}
	if n := count(t, s, `SELECT count(*) FROM checkpoint_audit WHERE map_instance = 'recent'`); n != 1 {
		t.Error("an audit row younger than a day was pruned")
	}
	if n := count(t, s, `SELECT count(*) FROM checkpoint_audit
WHERE map_instance = 'town-1' AND saved = 1 AND stale = 1 AND duration_ms > 0`); n != 1 {
		t.Error("no audit row for the batch")
	}
}

func TestLoadStateRefusesCorruptPayload(t *testing.T) {
	t.Parallel()
	s := newStore(t)
	ctx := testCtx(t)
	mustEnsure(t, s, "a")
	if _, err := s.SaveStates(ctx, "town-1", leased(t, s, "town-1", state("a", 1))); err != nil {
		t.Fatal(err)
	}
	if _, err := s.DB().ExecContext(ctx, `UPDATE character_state SET payload = 'tampered' WHERE character_id = 'a'`); err != nil {
		t.Fatal(err)
	}
	_, err := s.LoadState(ctx, "a")
	if !errors.Is(err, ErrCorrupt) || !strings.Contains(err.Error(), "character a") {
		t.Fatalf("error = %v, want ErrCorrupt naming character a", err)
	}
}
