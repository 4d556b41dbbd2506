package store

import (
	"bytes"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
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

// history is the character's checkpoint_history as revisions, newest first.
func history(t *testing.T, s *Postgres, id string) []int64 {
	t.Helper()
	records, err := s.CheckpointHistory(testCtx(t), id)
	if err != nil {
		t.Fatal(err)
	}
	revs := make([]int64, len(records))
	for i, r := range records {
		revs[i] = r.Revision
	}
	return revs
}

// TestCheckpointHistoryRecordsWrittenStatesOnly: one history row per state
// written, equal to character_state; stale and fenced states leave none.
func TestCheckpointHistoryRecordsWrittenStatesOnly(t *testing.T) {
	t.Parallel()
	s := newStore(t)
	ctx := testCtx(t)
	mustEnsure(t, s, "a", "b", "c", "d")
	if _, err := s.SaveStates(ctx, "town-1", leased(t, s, "town-1", state("a", 5), state("b", 5))); err != nil {
		t.Fatal(err)
	}
	// a older, b equal (a retry), c new: only c is written.
	if _, err := s.SaveStates(ctx, "town-1", leased(t, s, "town-1", state("a", 4), state("b", 5), state("c", 1))); err != nil {
		t.Fatal(err)
	}
	// d's lease on town-1 expired and forest-1 took it over: town-1's
	// state is fenced out, forest-1's is written.
	old, err := s.ClaimLease(ctx, "d", "town-1", "pod-a", time.Minute, time.Now().Add(-time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	taken, err := s.ClaimLease(ctx, "d", "forest-1", "pod-b", time.Hour, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	fenced := state("d", 9)
	fenced.Epoch = old.Epoch
	if res, err := s.SaveStates(ctx, "town-1", []CharacterState{fenced}); err != nil || res.Saved != 0 {
		t.Fatalf("fenced checkpoint: %+v, %v; want nothing saved", res, err)
	}
	if got := history(t, s, "d"); len(got) != 0 {
		t.Fatalf("a fenced state was recorded: %v", got)
	}
	written := state("d", 3)
	written.Epoch = taken.Epoch
	if _, err := s.SaveStates(ctx, "forest-1", []CharacterState{written}); err != nil {
		t.Fatal(err)
	}

	for id, want := range map[string][]int64{"a": {5}, "b": {5}, "c": {1}, "d": {3}} {
		if got := history(t, s, id); !slices.Equal(got, want) {
			t.Errorf("%s: history %v, want %v", id, got, want)
		}
	}
	for id, instance := range map[string]string{"a": "town-1", "d": "forest-1"} {
		records, err := s.CheckpointHistory(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		st, err := s.LoadState(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		want := CheckpointRecord{CharacterID: id, Revision: st.Revision, SavedTick: st.SavedTick,
			StateHash: st.StateHash, MapInstance: instance, At: st.UpdatedAt}
		if len(records) != 1 || records[0].CharacterID != want.CharacterID || records[0].Revision != want.Revision ||
			records[0].SavedTick != want.SavedTick || records[0].StateHash != want.StateHash ||
			records[0].MapInstance != want.MapInstance || !records[0].At.Equal(want.At) {
			t.Errorf("%s: history %+v, want [%+v]", id, records, want)
		}
	}
	if got, err := s.CheckpointHistory(ctx, "nobody"); err != nil || len(got) != 0 {
		t.Errorf("unknown character: %v, %v; want none", got, err)
	}
}

// TestCheckpointHistoryWindowIsBounded: however many checkpoints ran, a
// character keeps checkpointHistoryWindow rows at most: its last that many
// revisions, a skipped revision leaving an older one in its slot. The
// transfer's checkpoint counts like any other.
func TestCheckpointHistoryWindowIsBounded(t *testing.T) {
	t.Parallel()
	s := newStore(t)
	ctx := testCtx(t)
	mustEnsure(t, s, "a", "b")
	const checkpoints = 3 * checkpointHistoryWindow // 48
	for rev := int64(1); rev <= checkpoints; rev++ {
		batch := []CharacterState{state("a", rev)}
		if rev%2 == 0 { // b is dirty every other checkpoint: its revision goes up by two
			batch = append(batch, state("b", rev))
		}
		if _, err := s.SaveStates(ctx, "town-1", leased(t, s, "town-1", batch...)); err != nil {
			t.Fatal(err)
		}
	}
	var wantA, wantB []int64
	for rev := int64(checkpoints); rev > checkpoints-checkpointHistoryWindow; rev-- {
		wantA = append(wantA, rev)
		if rev%2 == 0 {
			wantB = append(wantB, rev)
		}
	}
	if got := history(t, s, "a"); !slices.Equal(got, wantA) {
		t.Errorf("a: history %v, want %v", got, wantA)
	}
	if got := history(t, s, "b"); !slices.Equal(got, wantB) {
		t.Errorf("b: history %v, want %v", got, wantB)
	}

	// A jump of more than a window (records merged during an outage) takes
	// one slot; the others keep the revisions before the jump.
	if _, err := s.SaveStates(ctx, "town-1", leased(t, s, "town-1", state("a", 100))); err != nil {
		t.Fatal(err)
	}
	wantA = append([]int64{100}, slices.DeleteFunc(wantA, func(rev int64) bool { return rev%checkpointHistoryWindow == 100%checkpointHistoryWindow })...)
	if got := history(t, s, "a"); !slices.Equal(got, wantA) {
		t.Errorf("a after a jump: history %v, want %v", got, wantA)
	}

	// The checkpoint a transfer commits is recorded the same way: b's 49
	// takes a slot its even revisions left free.
	lease, err := s.ClaimLease(ctx, "b", "town-1", "pod", time.Hour, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	cp := state("b", checkpoints+1)
	cp.Epoch = lease.Epoch
	tr := Transfer{ID: "x1", CharacterID: "b", FromInstance: "town-1", ToInstance: "crypt-1", ToMap: "crypt",
		ExpiresAt: time.Now().Add(time.Minute)}
	if err := s.BeginTransfer(ctx, tr, cp); err != nil {
		t.Fatal(err)
	}
	wantB = append([]int64{checkpoints + 1}, wantB...)
	if got := history(t, s, "b"); !slices.Equal(got, wantB) {
		t.Errorf("b after its transfer: history %v, want %v", got, wantB)
	}
	if n := count(t, s, `SELECT count(*) FROM checkpoint_history`); n != len(wantA)+len(wantB) {
		t.Errorf("%d history rows in all, want %d", n, len(wantA)+len(wantB))
	}
}

// TestCheckpointHistoryAfterARestore: character_state set back by hand (a
// restore from a backup) does not break the next checkpoints: they write
// their slots over the rows from before the restore.
func TestCheckpointHistoryAfterARestore(t *testing.T) {
	t.Parallel()
	s := newStore(t)
	ctx := testCtx(t)
	mustEnsure(t, s, "a")
	for rev := int64(1); rev <= 20; rev++ {
		if _, err := s.SaveStates(ctx, "town-1", leased(t, s, "town-1", state("a", rev))); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := s.DB().ExecContext(ctx, `UPDATE character_state SET revision = 3 WHERE character_id = 'a'`); err != nil {
		t.Fatal(err)
	}
	restored := state("a", 4)
	restored.Payload = []byte(`{"restored":true}`)
	restored.StateHash = ""
	if res, err := s.SaveStates(ctx, "town-1", leased(t, s, "town-1", restored)); err != nil || res.Saved != 1 {
		t.Fatalf("checkpoint after the restore: %+v, %v", res, err)
	}
	records, err := s.CheckpointHistory(ctx, "a")
	if err != nil {
		t.Fatal(err)
	}
	if len(records) != checkpointHistoryWindow {
		t.Fatalf("%d records, want %d", len(records), checkpointHistoryWindow)
	}
	last := records[len(records)-1] // 4 is the lowest revision left
	if last.Revision != 4 || last.StateHash != HashPayload(restored.Payload) {
		t.Fatalf("revision 4 is %+v, want the one written after the restore", last)
	}
}
