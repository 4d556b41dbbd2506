package store

import (
	"testing"
	"time"
)

// TestEventLogAppendsAcrossHoursAndDropsOldOnes: a batch spanning hours
// with no partition yet creates them and lands whole, in order; reading
// filters by map and by character; retention drops the hours wholly older
// than its cutoff and keeps the rest.
func TestEventLogAppendsAcrossHoursAndDropsOldOnes(t *testing.T) {
	t.Parallel()
	s := newStore(t)
	ctx := testCtx(t)
	now := time.Now().UTC().Truncate(time.Hour).Add(30 * time.Minute)
	var batch []LoggedEvent
	for i := range 6 { // one event an hour, the oldest five hours ago
		at := now.Add(time.Duration(i-5) * time.Hour)
		batch = append(batch, LoggedEvent{At: at, MapInstance: "town-1", Tick: int64(i * 100), Seq: int64(i + 1),
			EventID: int64(10 * (i + 1)), Type: "death", Entity: 7, Character: "", By: 3, ByCharacter: "ann", X: 1.5, Y: 2.5})
	}
	batch = append(batch, LoggedEvent{At: now, MapInstance: "crypt-1", Seq: 1, Type: "loot_removed",
		Entity: 9, By: 4, ByCharacter: "bob", ItemID: "gem-1"})
	if err := s.AppendEvents(ctx, batch); err != nil {
		t.Fatal(err)
	}
	all, err := s.Events(ctx, EventFilter{From: now.Add(-6 * time.Hour), To: now.Add(time.Hour)})
	if err != nil {
		t.Fatal(err)
	}
	if len(all) != 7 || all[0].Seq != 1 || all[6].Seq != 6 || all[6].EventID != 60 || all[0].ByCharacter != "ann" || all[0].X != 1.5 {
		t.Fatalf("read back %+v", all)
	}
	if got, _ := s.Events(ctx, EventFilter{From: now.Add(-6 * time.Hour), To: now.Add(time.Hour), Character: "bob"}); len(got) != 1 || got[0].ItemID != "gem-1" {
		t.Errorf("bob's events: %+v", got)
	}
	if got, _ := s.Events(ctx, EventFilter{From: now.Add(-6 * time.Hour), To: now.Add(time.Hour), MapInstance: "town-1"}); len(got) != 6 {
		t.Errorf("town-1's events: %d, want 6", len(got))
	}
	partitions := func() int {
		return count(t, s, `SELECT count(*) FROM pg_inherits WHERE inhparent = 'event_log'::regclass`)
	}
	if n := partitions(); n != 6 {
		t.Fatalf("%d partitions, want one per hour (6)", n)
	}

	// 24 hours kept: nothing goes. Three hours (the cutoff half past the
	// hour three hours back): the two hours that ended before it go, the
	// one it falls in stays.
	pruned, err := s.Prune(ctx, Retention{EventLog: 24 * time.Hour}, PruneOptions{Now: now})
	if err != nil || pruned.EventLogPartitions != 0 {
		t.Fatalf("24 h: %+v, %v", pruned, err)
	}
	pruned, err = s.Prune(ctx, Retention{EventLog: 3 * time.Hour}, PruneOptions{Now: now})
	if err != nil || pruned.EventLogPartitions != 2 || partitions() != 4 {
		t.Fatalf("3 h: %+v, %v, %d partitions left", pruned, err, partitions())
	}
	left, _ := s.Events(ctx, EventFilter{From: now.Add(-6 * time.Hour), To: now.Add(time.Hour), MapInstance: "town-1"})
	if len(left) != 4 || left[0].Seq != 3 {
		t.Errorf("left: %+v, want seq 3 to 6", left)
	}
}

// TestEnsureEventLogPartitionsIsSafeToRace: pods and the manager creating
// the same hours at once each end with them there, once.
func TestEnsureEventLogPartitionsIsSafeToRace(t *testing.T) {
	t.Parallel()
	s := newStore(t)
	ctx := testCtx(t)
	now := time.Now()
	errs := make(chan error, 8)
	for range 8 {
		go func() { errs <- s.EnsureEventLogPartitions(ctx, now, now.Add(3*time.Hour)) }()
	}
	for range 8 {
		if err := <-errs; err != nil {
			t.Error(err)
		}
	}
	if n := count(t, s, `SELECT count(*) FROM pg_inherits WHERE inhparent = 'event_log'::regclass`); n != 4 {
		t.Errorf("%d partitions, want 4", n)
	}
	if err := s.AppendEvents(ctx, []LoggedEvent{{At: now.Add(2 * time.Hour), MapInstance: "m", Seq: 1, Type: "join"}}); err != nil {
		t.Error(err)
	}
}
