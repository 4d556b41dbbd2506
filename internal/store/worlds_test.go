package store

import (
	"bytes"
	"errors"
	"fmt"
	"sync"
	"testing"
)

// world is a fixture: a checkpoint of instance at rev under claim.
func world(claim WorldState, rev int64) WorldState {
	payload := fmt.Appendf(nil, "world %s rev %d", claim.MapInstance, rev)
	return WorldState{MapInstance: claim.MapInstance, SchemaVersion: 1, SimCoreVersion: "sim-1", Revision: rev,
		SavedTick: rev * 150, Payload: payload, Epoch: claim.Epoch}
}

func mustClaim(t testing.TB, s *Postgres, instance, pod string) WorldState {
	t.Helper()
	c, err := s.ClaimWorld(testCtx(t), instance, pod)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func mustLoadWorld(t *testing.T, s *Postgres, instance string) WorldState {
	t.Helper()
	w, err := s.LoadWorld(testCtx(t), instance)
	if err != nil {
		t.Fatal(err)
	}
	return w
}

func TestWorldCheckpointsAreIdempotentByRevision(t *testing.T) {
	t.Parallel()
	s := newStore(t)
	ctx := testCtx(t)
	if _, err := s.LoadWorld(ctx, "crypt-1"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("load before any claim: %v, want ErrNotFound", err)
	}
	claim := mustClaim(t, s, "crypt-1", "pod-a")
	if claim.Revision != 0 || claim.Epoch != 1 {
		t.Fatalf("first claim %+v, want revision 0 (no world yet), epoch 1", claim)
	}
	if _, err := s.LoadWorld(ctx, "crypt-1"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("load of a claimed world never written: %v, want ErrNotFound", err)
	}
	for _, rev := range []int64{1, 2, 2, 1} { // a write repeated, and one older than the stored
		if err := s.SaveWorld(ctx, world(claim, rev)); err != nil {
			t.Fatalf("save revision %d: %v", rev, err)
		}
	}
	got := mustLoadWorld(t, s, "crypt-1")
	want := world(claim, 2)
	if got.Revision != 2 || got.SavedTick != 300 || !bytes.Equal(got.Payload, want.Payload) || got.StateHash != HashPayload(want.Payload) ||
		got.SchemaVersion != 1 || got.SimCoreVersion != "sim-1" || got.Pod != "pod-a" || got.Released {
		t.Fatalf("stored %+v, want revision 2 of pod-a", got)
	}
}

func TestAStaleWorldWriterIsFenced(t *testing.T) {
	t.Parallel()
	s := newStore(t)
	ctx := testCtx(t)
	old := mustClaim(t, s, "crypt-1", "old")
	if err := s.SaveWorld(ctx, world(old, 1)); err != nil {
		t.Fatal(err)
	}
	successor := mustClaim(t, s, "crypt-1", "new")
	if successor.Epoch != old.Epoch+1 || successor.Revision != 1 || !bytes.Equal(successor.Payload, world(old, 1).Payload) {
		t.Fatalf("the successor's claim %+v: want the old pod's revision 1 under epoch %d", successor, old.Epoch+1)
	}
	if err := s.SaveWorld(ctx, world(old, 2)); !errors.Is(err, ErrWorldFenced) {
		t.Fatalf("the old pod's write after the claim: %v, want ErrWorldFenced", err)
	}
	if err := s.SaveWorld(ctx, world(successor, 2)); err != nil {
		t.Fatal(err)
	}
	if got := mustLoadWorld(t, s, "crypt-1"); got.Revision != 2 || got.Pod != "new" || !bytes.Equal(got.Payload, world(successor, 2).Payload) {
		t.Fatalf("stored %+v, want the successor's revision 2", got)
	}
	if other := mustClaim(t, s, "crypt-2", "new"); other.Epoch != 1 || other.Revision != 0 {
		t.Fatalf("another map's claim %+v: maps are fenced apart", other)
	}
}

// TestConcurrentWorldClaimsLeaveOneWriter: pods claiming a map at once
// get different epochs, and only the newest one's writes land.
func TestConcurrentWorldClaimsLeaveOneWriter(t *testing.T) {
	t.Parallel()
	s := newStore(t)
	claims := make([]WorldState, 8)
	var wg sync.WaitGroup
	for i := range claims {
		wg.Go(func() { claims[i] = mustClaim(t, s, "town-1", fmt.Sprint("pod-", i)) })
	}
	wg.Wait()
	epochs := map[int64]bool{}
	written := 0
	for i, c := range claims {
		epochs[c.Epoch] = true
		if err := s.SaveWorld(testCtx(t), world(c, int64(i+1))); err == nil {
			written++
		} else if !errors.Is(err, ErrWorldFenced) {
			t.Fatal(err)
		}
	}
	if len(epochs) != len(claims) || written != 1 {
		t.Fatalf("%d epochs for %d claims, %d writers, want one each and one writer", len(epochs), len(claims), written)
	}
}

func TestAReleasedWorldSaysSoUntilTheNextClaim(t *testing.T) {
	t.Parallel()
	s := newStore(t)
	ctx := testCtx(t)
	if c, err := s.WorldClaimOf(ctx, "town-1"); err != nil || c != (WorldClaim{}) {
		t.Fatalf("claim of a map nobody claimed: %+v, %v", c, err)
	}
	claim := mustClaim(t, s, "town-1", "old")
	last := world(claim, 1)
	last.Released = true
	if err := s.SaveWorld(ctx, last); err != nil {
		t.Fatal(err)
	}
	if c, err := s.WorldClaimOf(ctx, "town-1"); err != nil || c != (WorldClaim{Epoch: claim.Epoch, Pod: "old", Released: true}) {
		t.Fatalf("after the last write: %+v, %v, want released by old", c, err)
	}
	mustClaim(t, s, "town-1", "new")
	if c, _ := s.WorldClaimOf(ctx, "town-1"); c.Released || c.Pod != "new" {
		t.Fatalf("after the next claim: %+v, want held by new", c)
	}
}

func TestACorruptWorldIsRefused(t *testing.T) {
	t.Parallel()
	s := newStore(t)
	ctx := testCtx(t)
	claim := mustClaim(t, s, "crypt-1", "a")
	wrong := world(claim, 1)
	wrong.StateHash = HashPayload([]byte("something else"))
	if err := s.SaveWorld(ctx, wrong); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("a write with a wrong hash: %v, want ErrCorrupt", err)
	}
	if err := s.SaveWorld(ctx, world(claim, 1)); err != nil {
		t.Fatal(err)
	}
	if _, err := s.DB().ExecContext(ctx, `UPDATE map_state SET payload = 'bit rot' WHERE map_instance = 'crypt-1'`); err != nil {
		t.Fatal(err)
	}
	if _, err := s.LoadWorld(ctx, "crypt-1"); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("load of a corrupt world: %v, want ErrCorrupt", err)
	}
	if _, err := s.ClaimWorld(ctx, "crypt-1", "b"); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("claim of a corrupt world: %v, want ErrCorrupt", err)
	}
}

// BenchmarkSaveWorld writes a crowded crypt's world checkpoint (23 KB, as
// sim's BenchmarkWorldCheckpoint makes it), as the room server's world
// writer does every checkpoint interval, off the tick.
func BenchmarkSaveWorld(b *testing.B) {
	s := newStore(b)
	claim, err := s.ClaimWorld(testCtx(b), "crypt-1", "pod")
	if err != nil {
		b.Fatal(err)
	}
	payload := bytes.Repeat([]byte("world-23k"), 23000/9)
	rev := int64(0)
	for b.Loop() {
		rev++
		if err := s.SaveWorld(testCtx(b), WorldState{MapInstance: "crypt-1", SchemaVersion: 1, SimCoreVersion: "sim",
			Revision: rev, Payload: payload, Epoch: claim.Epoch}); err != nil {
			b.Fatal(err)
		}
	}
}
