package store

import (
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"
)

// A recovery and pickups racing for one item serialize: in every round
// exactly one pickup wins and the winner holds the item at the end. A
// recovery that wins was ordered before the pickup (it moved the item on
// the map, then the pickup took it from there), so it never takes the
// item from the player who picked it up; it has one audit row, a losing
// one none. TestRecoverRacingPickups counts winners only; this checks
// each round's end state against the one serial order it allows.
func TestRecoverAndPickupsSerializePerRound(t *testing.T) {
	t.Parallel()
	s := newStore(t)
	const rounds, pickers = 20, 4
	// Leases claimed up front: each pickup is then one transaction, racing
	// the recovery on equal terms.
	epochs := make([]int64, pickers)
	for i := range pickers {
		epochs[i] = withLease(t, s, CriticalEvent{CharacterID: fmt.Sprint("c", i), MapInstance: "crypt-1"}).Epoch
	}
	first := 0
	for round := range rounds {
		item := fmt.Sprint("k", round)
		pickErrs, recErr := raceRound(t, s, item, epochs)
		won := make([]bool, pickers)
		for i, err := range pickErrs {
			won[i] = err == nil
		}
		checkRound(t, s, item, won, recErr == nil)
		if recErr == nil {
			first++
		}
	}
	t.Logf("the recovery came first in %d of %d rounds", first, rounds)
}

// raceRound puts item on the map at (1, 1), then runs one pickup per
// epoch (character c<i>) and a recovery of it from there, all at once.
// Losers must find the item taken; any other failure ends the test.
func raceRound(t *testing.T, s *Postgres, item string, epochs []int64) (pickErrs []error, recErr error) {
	t.Helper()
	ctx := testCtx(t)
	if err := s.Recover(ctx, Recovery{EventID: "make-" + item, ItemID: item, Kind: "crypt key",
		MapInstance: "crypt-1", Reason: "missing", ToX: 1, ToY: 1}); err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	pickErrs = make([]error, len(epochs))
	for i, epoch := range epochs {
		wg.Go(func() {
			ev, move := pickup(fmt.Sprintf("p-%s-%d", item, i), fmt.Sprint("c", i), "crypt-1", item)
			ev.Epoch = epoch
			pickErrs[i] = s.CommitCritical(ctx, ev, move)
		})
	}
	wg.Go(func() {
		recErr = s.Recover(ctx, Recovery{EventID: "back-" + item, ItemID: item, Kind: "crypt key", MapInstance: "crypt-1",
			Reason: "unreachable", FromKind: OwnerMap, FromID: "crypt-1", FromX: 1, FromY: 1, ToX: 9, ToY: 9, Now: time.Now()})
	})
	wg.Wait()
	for _, err := range append(pickErrs, recErr) {
		if err != nil && !errors.Is(err, ErrItemTaken) {
			t.Fatalf("%s: a loser must find the item taken, got %v", item, err)
		}
	}
	return pickErrs, recErr
}

// checkRound checks one round's item: held by its one winning picker,
// moved once more if the recovery won, and audited for it only then.
func checkRound(t *testing.T, s *Postgres, item string, won []bool, recovered bool) {
	t.Helper()
	winner := ""
	for i, w := range won {
		if w && winner != "" {
			t.Fatalf("%s: two pickups won (%s and c%d)", item, winner, i)
		}
		if w {
			winner = fmt.Sprint("c", i)
		}
	}
	items, err := s.Items(testCtx(t), []string{item})
	if err != nil || len(items) != 1 {
		t.Fatalf("%s: %+v %v", item, items, err)
	}
	moves, audits := int64(1), 0 // the pickup; the recovery's row only if it won
	if recovered {
		moves, audits = 2, 1
	}
	if it := items[0]; winner == "" || it.OwnerKind != OwnerCharacter || it.OwnerID != winner || it.Revision != 1+moves {
		t.Errorf("%s: winner %q, recovered %v, item %+v", item, winner, recovered, it)
	}
	if n := count(t, s, `SELECT count(*) FROM item_recovery_audit WHERE event_id = $1`, "back-"+item); n != audits {
		t.Errorf("%s: %d audit rows for the recovery (won: %v)", item, n, recovered)
	}
}

// checkpointAt stores a last checkpoint of chr written at at.
func checkpointAt(t *testing.T, s *Postgres, chr string, at time.Time) {
	t.Helper()
	if _, err := s.DB().ExecContext(testCtx(t), `INSERT INTO character_state
    (character_id, schema_version, sim_core_version, revision, saved_tick, payload, state_hash, updated_at)
VALUES ($1, 1, 'test', 1, 1, '\x00', 'test', $2)`, chr, at); err != nil {
		t.Fatal(err)
	}
}

// An offline holder is away since its latest sign of life: its last
// checkpoint when that is after its lease ended, the item's last move
// when it has neither. Items on a map or destroyed have no holder: never
// online, never offline for any time.
func TestCriticalItemsOfflineSinceTheLatestSign(t *testing.T) {
	t.Parallel()
	s := newStore(t)
	ctx := testCtx(t)
	now := time.Now()
	mustEnsure(t, s, "saved", "never")
	if _, err := s.ClaimLease(ctx, "saved", "crypt-1", "pod", time.Minute, now.Add(-2*time.Hour)); err != nil {
		t.Fatal(err)
	}
	checkpointAt(t, s, "saved", now.Add(-10*time.Minute))
	hold(t, s, "saved", "k1", now.Add(-3*time.Hour))
	hold(t, s, "never", "k2", now.Add(-30*time.Minute))
	if err := s.Recover(ctx, Recovery{EventID: "r3", ItemID: "k3", Kind: "crypt key", MapInstance: "crypt-1",
		Reason: "missing", ToX: 1, ToY: 1}); err != nil {
		t.Fatal(err)
	}
	hold(t, s, "saved", "k4", now)
	if err := s.Destroy(ctx, "k4", "d4", "crypt-1", "consumed"); err != nil {
		t.Fatal(err)
	}
	items, err := s.CriticalItems(ctx, []string{"crypt key"}, now)
	if err != nil || len(items) != 4 {
		t.Fatalf("items %+v %v", items, err)
	}
	want := []struct {
		owner   string
		offline time.Duration
	}{{OwnerCharacter, 10 * time.Minute}, {OwnerCharacter, 30 * time.Minute}, {OwnerMap, 0}, {OwnerDestroyed, 0}}
	for i, w := range want {
		it := items[i]
		if it.ItemID != fmt.Sprint("k", i+1) || it.OwnerKind != w.owner || it.Online || (it.OfflineFor-w.offline).Abs() > time.Second {
			t.Errorf("item %d: %s held by %s, online %v, offline for %v; want %s offline for %v",
				i, it.ItemID, it.OwnerKind, it.Online, it.OfflineFor, w.owner, w.offline)
		}
	}
}
