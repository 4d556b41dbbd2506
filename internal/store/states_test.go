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
	records, err := s.CheckpointHistory(testCtx(t), id, 0)
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
		records, err := s.CheckpointHistory(ctx, id, 0)
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
	if got, err := s.CheckpointHistory(ctx, "nobody", 0); err != nil || len(got) != 0 {
		t.Errorf("unknown character: %v, %v; want none", got, err)
	}
}

// TestCheckpointHistoryIsAppendOnly: every checkpoint written adds a row,
// the transfer's checkpoint too; nothing is overwritten (retention prunes
// by age, retention_test.go), and the history reads newest first.
func TestCheckpointHistoryIsAppendOnly(t *testing.T) {
	t.Parallel()
	s := newStore(t)
	ctx := testCtx(t)
	mustEnsure(t, s, "a", "b")
	const checkpoints = 40
	var wantA, wantB []int64
	for rev := int64(1); rev <= checkpoints; rev++ {
		batch := []CharacterState{state("a", rev)}
		wantA = append([]int64{rev}, wantA...)
		if rev%2 == 0 { // b is dirty every other checkpoint: its revision goes up by two
			batch = append(batch, state("b", rev))
			wantB = append([]int64{rev}, wantB...)
		}
		if _, err := s.SaveStates(ctx, "town-1", leased(t, s, "town-1", batch...)); err != nil {
			t.Fatal(err)
		}
	}
	if got := history(t, s, "a"); !slices.Equal(got, wantA) {
		t.Errorf("a: history %v, want %v", got, wantA)
	}
	if got, err := s.CheckpointHistory(ctx, "a", 3); err != nil || len(got) != 3 || got[0].Revision != checkpoints {
		t.Errorf("a's last 3: %+v, %v", got, err)
	}

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
}

// TestCheckpointHistoryRecordsItemsAndEvents: each row says which items
// the character held (a worn one with its slot) and the newest critical
// event its checkpoint saw, the ground a replay starts from.
func TestCheckpointHistoryRecordsItemsAndEvents(t *testing.T) {
	t.Parallel()
	s := newStore(t)
	ctx := testCtx(t)
	commit := committer(t, s)
	mustEnsure(t, s, "ann")
	rev := int64(0)
	checkpoint := func() CheckpointRecord {
		t.Helper()
		rev++
		if _, err := s.SaveStates(ctx, "town-1", leased(t, s, "town-1", state("ann", rev))); err != nil {
			t.Fatal(err)
		}
		records, err := s.CheckpointHistory(ctx, "ann", 1)
		if err != nil || len(records) != 1 {
			t.Fatalf("history: %+v, %v", records, err)
		}
		return records[0]
	}
	lastSeq := func() int64 {
		return int64(count(t, s, `SELECT COALESCE(max(seq), 0) FROM critical_events WHERE character_id = 'ann'`))
	}
	if r := checkpoint(); r.Items == nil || len(r.Items) != 0 || r.EventsSeq != 0 {
		t.Errorf("before any item: %+v", r)
	}
	for _, item := range []string{"sword-1", "apple-1"} {
		if err := commit(pickup("p-"+item, "ann", "town-1", item)); err != nil {
			t.Fatal(err)
		}
	}
	if r := checkpoint(); !slices.Equal(r.Items, []string{"apple-1", "sword-1"}) || r.EventsSeq != lastSeq() {
		t.Errorf("after two pickups: %+v, want both items and events up to %d", r, lastSeq())
	}
	ev := CriticalEvent{EventID: "eq", CharacterID: "ann", MapInstance: "town-1", Kind: "inventory.equip", ItemID: "sword-1", Tick: 5}
	if err := s.CommitCritical(ctx, withLease(t, s, ev), equipMove("ann", "sword-1", "", "hand")); err != nil {
		t.Fatal(err)
	}
	if err := commit(drop("d-apple", "ann", "town-1", "apple-1", 1, 1)); err != nil {
		t.Fatal(err)
	}
	if r := checkpoint(); !slices.Equal(r.Items, []string{"sword-1@hand"}) || r.EventsSeq != lastSeq() {
		t.Errorf("after an equip and a drop: %+v, want the worn sword and events up to %d", r, lastSeq())
	}
}

// TestCheckpointHistoryAfterARestore: character_state set back by hand (a
// restore from a backup) does not break the next checkpoints: the one
// after the restore is the newest row, and the rows from before stay.
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
	records, err := s.CheckpointHistory(ctx, "a", 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(records) != 21 {
		t.Fatalf("%d records, want 21", len(records))
	}
	if newest := records[0]; newest.Revision != 4 || newest.StateHash != HashPayload(restored.Payload) {
		t.Fatalf("newest is %+v, want the one written after the restore", newest)
	}
}
