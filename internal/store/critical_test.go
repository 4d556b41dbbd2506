package store

import (
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/roomkeeper/roomkeeper/internal/content"
)

var keyPolicy = content.CriticalPolicy{Kind: "crypt key", Type: content.RegenerativeUnique,
	Anchors: []content.Anchor{{Room: content.AnchorKeyRoom}}, CooldownTicks: 600, OfflineTimeout: 600}

// hold stores item as character chr's, moved at updated.
func hold(t *testing.T, s *Postgres, chr, item string, updated time.Time) {
	t.Helper()
	if _, err := s.DB().ExecContext(testCtx(t), `INSERT INTO item_ownership (item_id, kind, owner_kind, owner_id, revision, updated_at)
VALUES ($1, 'crypt key', 'character', $2, 1, $3)`, item, chr, updated); err != nil {
		t.Fatal(err)
	}
}

// A holder with a live lease is online; one without has been offline
// since the latest of its lease's end, its last checkpoint and the item's
// last move.
func TestCriticalItemsKnowWhoIsOnline(t *testing.T) {
	t.Parallel()
	s := newStore(t)
	ctx := testCtx(t)
	now := time.Now()
	mustEnsure(t, s, "on", "off")
	hold(t, s, "on", "k1", now.Add(-time.Hour))
	hold(t, s, "off", "k2", now.Add(-time.Hour))
	if _, err := s.ClaimLease(ctx, "on", "crypt-1", "pod", time.Minute, now); err != nil {
		t.Fatal(err)
	}
	lease, err := s.ClaimLease(ctx, "off", "crypt-1", "pod", time.Minute, now.Add(-20*time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	_ = lease // expired 19 minutes ago
	items, err := s.CriticalItems(ctx, []string{"crypt key"}, now)
	if err != nil || len(items) != 2 {
		t.Fatalf("items %+v %v", items, err)
	}
	if !items[0].Online || items[0].OfflineFor != 0 {
		t.Errorf("the online holder: %+v", items[0])
	}
	if off := items[1].OfflineFor; items[1].Online || off < 18*time.Minute || off > 20*time.Minute {
		t.Errorf("the offline holder: online %v, offline for %v, want about 19m", items[1].Online, off)
	}
	if items, _ := s.CriticalItems(ctx, []string{"gem"}, now); len(items) != 0 {
		t.Errorf("kinds not asked for: %+v", items)
	}
}

// recoveryOf is a fixture: the item goes from chr to the map at (5, 6).
func recoveryOf(eventID, item, chr string) Recovery {
	return Recovery{EventID: eventID, ItemID: item, Kind: "crypt key", MapInstance: "crypt-1", Tick: 90, Reason: "holder_offline",
		FromKind: OwnerCharacter, FromID: chr, ToX: 5, ToY: 6, Now: time.Now()}
}

// A recovery moves the item and writes one audit row; the same event again
// changes nothing; an item that moved meanwhile is not taken, and no row
// is written; a holder who came back keeps it.
func TestRecoverMovesOnceWithOneAuditRow(t *testing.T) {
	t.Parallel()
	s := newStore(t)
	ctx := testCtx(t)
	mustEnsure(t, s, "zed", "amy")
	hold(t, s, "zed", "k1", time.Now())
	for range 2 {
		if err := s.Recover(ctx, recoveryOf("r1", "k1", "zed")); err != nil {
			t.Fatal(err)
		}
	}
	items, _ := s.Items(ctx, []string{"k1"})
	if it := items[0]; it.OwnerKind != OwnerMap || it.OwnerID != "crypt-1" || it.X != 5 || it.Y != 6 || it.Revision != 2 {
		t.Errorf("after the recovery: %+v", it)
	}
	rows, err := s.RecoveryAudit(ctx, "k1")
	if err != nil || len(rows) != 1 {
		t.Fatalf("audit %+v %v", rows, err)
	}
	if r := rows[0]; r.EventID != "r1" || r.Tick != 90 || r.Reason != "holder_offline" || r.OldOwnerKind != OwnerCharacter ||
		r.OldOwnerID != "zed" || r.NewOwnerKind != OwnerMap || r.NewOwnerID != "crypt-1" || r.NewX != 5 || r.NewY != 6 {
		t.Errorf("audit row %+v", r)
	}
	events, err := s.EventsOf(ctx, "zed")
	if err != nil || len(events) != 1 || events[0].EventID != "r1" || events[0].Kind != EventRecovered || events[0].ItemID != "k1" {
		t.Errorf("zed's critical events %+v %v, want the one recovery", events, err)
	}
	if err := s.Recover(ctx, recoveryOf("r2", "k1", "zed")); !errors.Is(err, ErrItemTaken) {
		t.Errorf("recovering from zed again: %v, want ErrItemTaken", err)
	}
	hold(t, s, "amy", "k2", time.Now())
	if _, err := s.ClaimLease(ctx, "amy", "crypt-1", "pod", time.Minute, time.Now()); err != nil {
		t.Fatal(err)
	}
	if err := s.Recover(ctx, recoveryOf("r3", "k2", "amy")); !errors.Is(err, ErrItemTaken) {
		t.Errorf("recovering from amy, who came back: %v, want ErrItemTaken", err)
	}
	if n := count(t, s, `SELECT count(*) FROM item_recovery_audit`); n != 1 {
		t.Errorf("%d audit rows, want 1", n)
	}
	fresh := Recovery{EventID: "r4", ItemID: "q1", Kind: "relic", MapInstance: "crypt-1", Reason: "quota_short", ToX: 1, ToY: 1}
	if err := s.Recover(ctx, fresh); err != nil {
		t.Fatal(err)
	}
	fresh.EventID = "r5"
	if err := s.Recover(ctx, fresh); !errors.Is(err, ErrItemTaken) {
		t.Errorf("making an item that exists: %v, want ErrItemTaken", err)
	}
}

// A recovery racing pickups of the same item: exactly one move wins each
// time, the item has one owner, and every recovery that won has its one
// audit row.
func TestRecoverRacingPickups(t *testing.T) {
	t.Parallel()
	s := newStore(t)
	ctx := testCtx(t)
	commit := committer(t, s)
	var recovered, picked atomic.Int32
	for round := range 20 {
		item := fmt.Sprint("k", round)
		if err := s.Recover(ctx, Recovery{EventID: "make-" + item, ItemID: item, Kind: "crypt key", MapInstance: "crypt-1",
			Reason: "missing", ToX: 1, ToY: 1}); err != nil {
			t.Fatal(err)
		}
		var wg sync.WaitGroup
		for i := range 4 {
			wg.Go(func() {
				if err := commit(pickup(fmt.Sprintf("p-%s-%d", item, i), fmt.Sprint("c", i), "crypt-1", item)); err == nil {
					picked.Add(1)
				}
			})
		}
		wg.Go(func() {
			r := Recovery{EventID: "back-" + item, ItemID: item, Kind: "crypt key", MapInstance: "crypt-1", Reason: "unreachable",
				FromKind: OwnerMap, FromID: "crypt-1", FromX: 1, FromY: 1, ToX: 9, ToY: 9, Now: time.Now()}
			if err := s.Recover(ctx, r); err == nil {
				recovered.Add(1)
			} else if !errors.Is(err, ErrItemTaken) {
				t.Error(err)
			}
		})
		wg.Wait()
	}
	if n := count(t, s, `SELECT count(*) FROM item_ownership`); n != 20 {
		t.Errorf("%d item rows, want 20", n)
	}
	if audits := count(t, s, `SELECT count(*) FROM item_recovery_audit WHERE reason = 'unreachable'`); audits != int(recovered.Load()) {
		t.Errorf("%d audit rows for %d recoveries", audits, recovered.Load())
	}
	if picked.Load()+recovered.Load() < 20 {
		t.Errorf("%d pickups and %d recoveries in 20 rounds: every round one of them wins", picked.Load(), recovered.Load())
	}
}

// Deleting a character destroys its critical items (audited, for their
// map to bring back) and takes its other items with it.
func TestDeletingACharacterReleasesItsItems(t *testing.T) {
	t.Parallel()
	s := newStore(t)
	ctx := testCtx(t)
	c, err := s.ActiveCharacter(ctx, "alice")
	if err != nil {
		t.Fatal(err)
	}
	hold(t, s, c.ID, "crypt-1/key", time.Now())
	if _, err := s.DB().ExecContext(ctx, `INSERT INTO item_ownership (item_id, kind, owner_kind, owner_id, slot, revision)
VALUES ('s1', 'sword', 'character', $1, 'weapon', 1)`, c.ID); err != nil {
		t.Fatal(err)
	}
	if err := s.DeleteCharacter(ctx, "alice", c.ID, []string{keyPolicy.Kind}); err != nil {
		t.Fatal(err)
	}
	items, _ := s.Items(ctx, []string{"crypt-1/key", "s1"})
	if len(items) != 1 || items[0].ItemID != "crypt-1/key" || items[0].OwnerKind != OwnerDestroyed {
		t.Fatalf("after the delete: %+v", items)
	}
	rows, _ := s.RecoveryAudit(ctx, "crypt-1/key")
	if len(rows) != 1 || rows[0].Reason != "owner_deleted" || rows[0].OldOwnerID != c.ID || rows[0].NewOwnerKind != OwnerDestroyed {
		t.Errorf("audit %+v", rows)
	}
	if err := s.Destroy(ctx, "nothing", "d1", "crypt-1", "test"); !errors.Is(err, ErrNotFound) {
		t.Errorf("destroying an item with no row: %v", err)
	}
}

// Destroying with an event id already used does nothing, even after a
// recovery brought the item back.
func TestDestroyIsIdempotentByEventID(t *testing.T) {
	t.Parallel()
	s := newStore(t)
	ctx := testCtx(t)
	mustEnsure(t, s, "zed")
	hold(t, s, "zed", "k1", time.Now())
	for range 2 {
		if err := s.Destroy(ctx, "k1", "d1", "crypt-1", "consumed"); err != nil {
			t.Fatal(err)
		}
	}
	back := Recovery{EventID: "r1", ItemID: "k1", Kind: "crypt key", MapInstance: "crypt-1", Reason: "destroyed",
		FromKind: OwnerDestroyed, ToX: 5, ToY: 6, Now: time.Now()}
	if err := s.Recover(ctx, back); err != nil {
		t.Fatal(err)
	}
	if err := s.Destroy(ctx, "k1", "d1", "crypt-1", "consumed"); err != nil {
		t.Fatal(err)
	}
	items, _ := s.Items(ctx, []string{"k1"})
	if it := items[0]; it.OwnerKind != OwnerMap || it.Revision != 3 {
		t.Errorf("after a repeated destroy: %+v, want on the map at revision 3", it)
	}
	if n := count(t, s, `SELECT count(*) FROM item_recovery_audit WHERE item_id = 'k1'`); n != 2 {
		t.Errorf("%d audit rows, want the destroy and the recovery", n)
	}
}
