package store

import (
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"
)

// TestReplayPassesOnACleanHistoryAndFindsAnEditedRow: checkpoints around
// pickups, an equip and a drop replay clean; an item given to the
// character by hand (no critical event) is found at the checkpoint after
// it, named.
func TestReplayPassesOnACleanHistoryAndFindsAnEditedRow(t *testing.T) {
	t.Parallel()
	s := newStore(t)
	ctx := testCtx(t)
	commit := committer(t, s)
	mustEnsure(t, s, "ann")
	rev := int64(0)
	checkpoint := func() {
		t.Helper()
		rev++
		if _, err := s.SaveStates(ctx, "town-1", leased(t, s, "town-1", state("ann", rev))); err != nil {
			t.Fatal(err)
		}
	}
	checkpoint()
	for _, item := range []string{"sword-1", "apple-1"} {
		if err := commit(pickup("p-"+item, "ann", "town-1", item)); err != nil {
			t.Fatal(err)
		}
	}
	checkpoint()
	ev := CriticalEvent{EventID: "eq", CharacterID: "ann", MapInstance: "town-1", Kind: "inventory.equip", ItemID: "sword-1", Tick: 5}
	if err := s.CommitCritical(ctx, withLease(t, s, ev), equipMove("ann", "sword-1", "", "hand")); err != nil {
		t.Fatal(err)
	}
	if err := commit(drop("d-apple", "ann", "town-1", "apple-1", 1, 1)); err != nil {
		t.Fatal(err)
	}
	checkpoint()
	checkpoint() // nothing between: replays to itself

	clean, err := s.ReplayCharacter(ctx, "ann")
	if err != nil {
		t.Fatal(err)
	}
	if clean.Checked != 3 || clean.Skipped != 0 || len(clean.Divergences) != 0 {
		t.Fatalf("clean history: %+v, want 3 pairs checked, no divergence", clean)
	}

	mustExec(t, s, `INSERT INTO item_ownership (item_id, kind, owner_kind, owner_id, revision) VALUES ('gem-1', 'gem', 'character', 'ann', 1)`)
	checkpoint()
	if err := commit(pickup("p-shield", "ann", "town-1", "shield-1")); err != nil {
		t.Fatal(err)
	}
	checkpoint()
	edited, err := s.ReplayCharacter(ctx, "ann")
	if err != nil {
		t.Fatal(err)
	}
	if edited.Checked != 5 || len(edited.Divergences) != 1 {
		t.Fatalf("after the edit: %+v, want one divergence in 5 pairs", edited)
	}
	d := edited.Divergences[0]
	if d.To.Revision != 5 || !slices.Equal(d.Unexpected, []string{"gem-1"}) || len(d.Missing) != 0 {
		t.Errorf("divergence %+v, want revision 5 holding gem-1 unexplained", d)
	}
}

// TestReplayHoldsUnderConcurrentActions: one character's critical actions
// from several goroutines at once, checkpointed all along, replay with no
// divergence: its events commit in seq order, so each checkpoint saw a
// prefix of them.
func TestReplayHoldsUnderConcurrentActions(t *testing.T) {
	t.Parallel()
	s := newStore(t)
	ctx := testCtx(t)
	mustEnsure(t, s, "bea")
	lease, err := s.ClaimLease(ctx, "bea", "town-1", "pod", time.Hour, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	var actions, checkpoints sync.WaitGroup
	errs := make(chan error, 5)
	for g := range 4 {
		actions.Go(func() {
			for i := range 15 {
				ev, move := pickup(fmt.Sprint("p-", g, "-", i), "bea", "town-1", fmt.Sprint("item-", g, "-", i))
				ev.Epoch = lease.Epoch
				if err := s.CommitCritical(ctx, ev, move); err != nil {
					errs <- err
					return
				}
				if i%3 == 2 {
					ev, move := drop(fmt.Sprint("d-", g, "-", i), "bea", "town-1", fmt.Sprint("item-", g, "-", i), 1, 1)
					ev.Epoch = lease.Epoch
					if err := s.CommitCritical(ctx, ev, move); err != nil {
						errs <- err
						return
					}
				}
			}
		})
	}
	done := make(chan struct{})
	checkpoints.Go(func() { // checkpoint back to back until the actions are over
		for rev := int64(1); ; rev++ {
			cp := state("bea", rev)
			cp.Epoch = lease.Epoch
			if _, err := s.SaveStates(ctx, "town-1", []CharacterState{cp}); err != nil {
				errs <- err
				return
			}
			select {
			case <-done:
				return
			default:
			}
		}
	})
	actions.Wait()
	close(done)
	checkpoints.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	r, err := s.ReplayCharacter(ctx, "bea")
	if err != nil {
		t.Fatal(err)
	}
	if r.Checked < 2 || len(r.Divergences) != 0 {
		t.Fatalf("replay under concurrent actions: %d checked, divergences %+v", r.Checked, r.Divergences)
	}
	t.Logf("%d checkpoint pairs replayed", r.Checked)
}

// TestCharacterTimeline: a character's checkpoints, transfer, actions and
// the recovery of its item, in time order.
func TestCharacterTimeline(t *testing.T) {
	t.Parallel()
	s := newStore(t)
	ctx := testCtx(t)
	commit := committer(t, s)
	mustEnsure(t, s, "cid")
	start := time.Now().Add(-time.Minute)
	if err := commit(pickup("p1", "cid", "town-1", "key-1")); err != nil {
		t.Fatal(err)
	}
	if _, err := s.SaveStates(ctx, "town-1", leased(t, s, "town-1", state("cid", 1))); err != nil {
		t.Fatal(err)
	}
	mustExec(t, s, `INSERT INTO transfers (id, character_id, from_instance, to_instance, to_map, state, expires_at)
VALUES ('x1', 'cid', 'town-1', 'crypt-1', 'crypt', 'completed', now())`)
	mustExec(t, s, `INSERT INTO item_recovery_audit (event_id, item_id, reason, map_instance, old_owner_kind, old_owner_id, new_owner_kind, new_owner_id)
VALUES ('r1', 'key-1', 'holder_offline', 'town-1', 'character', 'cid', 'map', 'town-1')`)
	entries, err := s.CharacterTimeline(ctx, "cid", start, 0)
	if err != nil {
		t.Fatal(err)
	}
	var kinds []string
	for i, e := range entries {
		kinds = append(kinds, e.What)
		if i > 0 && e.At.Before(entries[i-1].At) {
			t.Errorf("entry %d (%+v) before the one above it", i, e)
		}
	}
	if want := []string{"event", "checkpoint", "transfer", "recovery"}; !slices.Equal(kinds, want) {
		t.Errorf("timeline %v, want %v: %+v", kinds, want, entries)
	}
}

// TestBansEndAndCanBeLifted: a ban is in force until its time, a new one
// replaces it, and lifting it ends it.
func TestBansEndAndCanBeLifted(t *testing.T) {
	t.Parallel()
	s := newStore(t)
	ctx := testCtx(t)
	now := time.Now()
	if err := s.BanUser(ctx, Ban{UserID: "u1", Until: now.Add(time.Hour), Reason: "spam", BannedBy: "mod"}); err != nil {
		t.Fatal(err)
	}
	if b, ok, err := s.BanOf(ctx, "u1", now); err != nil || !ok || b.Reason != "spam" || b.BannedBy != "mod" {
		t.Fatalf("in force: %+v %v %v", b, ok, err)
	}
	if _, ok, _ := s.BanOf(ctx, "u1", now.Add(2*time.Hour)); ok {
		t.Error("a ban still in force after its end")
	}
	if _, ok, _ := s.BanOf(ctx, "u2", now); ok {
		t.Error("a user never banned is banned")
	}
	if err := s.BanUser(ctx, Ban{UserID: "u1", Until: now.Add(3 * time.Hour), Reason: "again", BannedBy: "mod2"}); err != nil {
		t.Fatal(err)
	}
	if b, ok, _ := s.BanOf(ctx, "u1", now.Add(2*time.Hour)); !ok || b.Reason != "again" {
		t.Errorf("the new ban: %+v %v", b, ok)
	}
	if lifted, err := s.LiftBan(ctx, "u1"); err != nil || !lifted {
		t.Fatalf("lift: %v %v", lifted, err)
	}
	if _, ok, _ := s.BanOf(ctx, "u1", now); ok {
		t.Error("banned after the ban was lifted")
	}
}
