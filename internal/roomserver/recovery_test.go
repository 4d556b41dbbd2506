package roomserver

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/roomkeeper/roomkeeper/internal/content"
	"github.com/roomkeeper/roomkeeper/internal/mapgen"
	"github.com/roomkeeper/roomkeeper/internal/playtest"
	"github.com/roomkeeper/roomkeeper/internal/protocol"
	"github.com/roomkeeper/roomkeeper/internal/sim"
	"github.com/roomkeeper/roomkeeper/internal/store"
	"github.com/roomkeeper/roomkeeper/internal/token"
	"github.com/roomkeeper/roomkeeper/pkg/client"
)

// The crypt's key, as the test crypt (instance demo-town) makes it.
const cryptKey = "demo-town/key"

// recoveringCrypt runs the test crypt on db with passes every 100 ms and
// the key's policy made quick: 3 ticks of cooldown, 0.2 s offline.
func recoveringCrypt(t *testing.T, db *store.Postgres, keys *token.StaticKeys, tune func(*content.Pack)) *harness {
	t.Helper()
	return recoveringMap(t, db, keys, cryptMap, tune)
}

// recoveringMap is recoveringCrypt on another map config.
func recoveringMap(t *testing.T, db *store.Postgres, keys *token.StaticKeys, mapConfig string, tune func(*content.Pack)) *harness {
	t.Helper()
	pack, _ := content.Named("crypt")
	pack.Critical = []content.CriticalPolicy{{Kind: "crypt key", Type: content.RegenerativeUnique,
		Anchors: []content.Anchor{{Room: content.AnchorKeyRoom}}, CooldownTicks: 3, OfflineTimeout: 0.2}}
	if tune != nil {
		tune(&pack)
	}
	h := persistentHarness(t, db, keys, func(c *Config) {
		c.MapConfig = []byte(mapConfig)
		c.Sim.Content = pack
		c.RecoveryInterval = 100 * time.Millisecond
		c.ResumeGrace = 100 * time.Millisecond // a player who closes is gone at once
	})
	waitReady(t, h)
	return h
}

// keyAnchor is the middle of the test crypt's key room.
func keyAnchor(h *harness) (float32, float32) {
	c := h.srv.static.Rooms[h.srv.static.RoomWith(mapgen.RoleKey)].Rect.Centre()
	return float32(c.X), float32(c.Y)
}

// waitPasses waits until the map has completed n more recovery passes.
func waitPasses(t *testing.T, h *harness, n float64) {
	t.Helper()
	target := testutil.ToFloat64(h.srv.metrics.recoveryPasses) + n
	poll(t, func() error {
		if got := testutil.ToFloat64(h.srv.metrics.recoveryPasses); got < target {
			return fmt.Errorf("%v recovery passes, waiting for %v", got, target)
		}
		return nil
	})
}

// itemRow is the item's row, or a zero Item when it has none.
func itemRow(t *testing.T, db *store.Postgres, id string) store.Item {
	t.Helper()
	items, err := db.Items(context.Background(), []string{id})
	if err != nil {
		t.Fatal(err)
	}
	if len(items) == 0 {
		return store.Item{}
	}
	return items[0]
}

// waitRecovered waits until the item lies on the map at (x, y) in the
// database, and checks the world has it there too, once.
func waitRecovered(t *testing.T, h *harness, db *store.Postgres, id string, x, y float32) {
	t.Helper()
	poll(t, func() error {
		if it := itemRow(t, db, id); it.OwnerKind != store.OwnerMap || it.OwnerID != "demo-town" || it.X != x || it.Y != y {
			return fmt.Errorf("the item is at %+v, want on demo-town at (%v,%v)", it, x, y)
		}
		// A recovery a crashed pod committed after this one restored the
		// ground shows in the world at this pod's next pass.
		var count int
		if err := h.srv.loop.Do(waitCtx(t), func(w *sim.World) { count = w.LootCount(id) }); err != nil || count != 1 {
			return fmt.Errorf("the world has %d loot entities of %s, want 1 (%w)", count, id, err)
		}
		return nil
	})
}

// audits are the item's recovery audit rows.
func audits(t *testing.T, db *store.Postgres, id string) []store.AuditRow {
	t.Helper()
	rows, err := db.RecoveryAudit(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	return rows
}

// A key lying where the generator put it is fine: passes run and recover
// nothing. Destroyed, it comes back at its anchor, audited once.
func TestADestroyedKeyComesBackAtItsAnchor(t *testing.T) {
	db, _ := newDB(t)
	const cooldown = 30 // ten passes
	h := recoveringCrypt(t, db, nil, func(p *content.Pack) { p.Critical[0].CooldownTicks = cooldown })
	waitPasses(t, h, 3)
	if rows := audits(t, db, cryptKey); len(rows) != 0 {
		t.Fatalf("a key at its spawn was recovered: %+v", rows)
	}
	// Say a player carried it off and it was consumed: first a row (as a
	// drop at its spawn would make), then destroyed.
	x0, y0 := keyAnchor(h)
	if _, err := db.DB().ExecContext(context.Background(), `INSERT INTO item_ownership (item_id, kind, owner_kind, owner_id, x, y, revision)
VALUES ($1, 'crypt key', 'map', 'demo-town', $2, $3, 1)`, cryptKey, x0, y0); err != nil {
		t.Fatal(err)
	}
	destroyedAt := h.srv.loop.Stats().Tick
	if err := db.Destroy(context.Background(), cryptKey, "test-destroy", "demo-town", "consumed"); err != nil {
		t.Fatal(err)
	}
	x, y := keyAnchor(h)
	waitRecovered(t, h, db, cryptKey, x, y)
	rows := audits(t, db, cryptKey)
	recovered := 0
	for _, r := range rows {
		if r.Reason == "destroyed" {
			recovered++
			if r.OldOwnerKind != store.OwnerDestroyed || r.NewOwnerID != "demo-town" || r.NewX != x || r.NewY != y {
				t.Errorf("audit row %+v", r)
			}
			if r.Tick < int64(destroyedAt)+cooldown {
				t.Errorf("recovered at tick %d, destroyed at %d: within the %d-tick cooldown", r.Tick, destroyedAt, cooldown)
			}
		}
	}
	if recovered != 1 {
		t.Errorf("%d recovery audit rows, want 1: %+v", recovered, rows)
	}
	if n := testutil.ToFloat64(h.srv.metrics.recoveries.WithLabelValues("destroyed")); n != 1 {
		t.Errorf("recoveries metric %v, want 1", n)
	}
}

// A key kept by a character offline past the policy's timeout is taken
// back to its anchor; one whose holder plays keeps it.
func TestAKeyHeldOfflineTooLongIsRecovered(t *testing.T) {
	db, _ := newDB(t)
	h := recoveringCrypt(t, db, nil, nil)
	give(t, db, "zed", store.Item{ItemID: cryptKey, Kind: "crypt key"})
	x, y := keyAnchor(h)
	waitRecovered(t, h, db, cryptKey, x, y)
	rows := audits(t, db, cryptKey)
	if len(rows) != 1 || rows[0].Reason != "holder_offline" || rows[0].OldOwnerID != "zed" {
		t.Fatalf("audit rows %+v, want one holder_offline from zed", rows)
	}
	if held, _ := db.ItemsOf(context.Background(), "zed"); len(held) != 0 {
		t.Errorf("zed still holds %+v", held)
	}

	db2, _ := newDB(t)
	h2 := recoveringCrypt(t, db2, nil, nil)
	give(t, db2, "amy", store.Item{ItemID: cryptKey, Kind: "crypt key"})
	amy := h2.join(character("amy"))
	waitFor(t, amy, "amy's inventory", func(s client.State) bool { return s.Inventory != nil })
	waitPasses(t, h2, 5)
	if it := itemRow(t, db2, cryptKey); it.OwnerID != "amy" {
		t.Errorf("amy, online, lost the key: %+v", it)
	}
}

// relicPack is the crypt with an instance_quota item: two relics kept
// available at two points by the spawn, taken back 0.2 s after their
// holder left.
func relicPack(h func(*content.Pack)) func(*content.Pack) {
	return func(p *content.Pack) {
		p.Items = append(slices.Clone(p.Items), content.ItemDef{Kind: "relic", Weight: 1})
		p.Critical = append(p.Critical, content.CriticalPolicy{Kind: "relic", Type: content.InstanceQuota, Quota: 2,
			Anchors: relicAnchors, OfflineTimeout: 0.2})
		if h != nil {
			h(p)
		}
	}
}

// relicAnchors are set by the test from the map's spawn.
var relicAnchors []content.Anchor

// relics counts the stored relics that are not destroyed, and those of
// them that lie on the map.
func relics(t *testing.T, db *store.Postgres) (live, lying int) {
	t.Helper()
	if err := db.DB().QueryRowContext(context.Background(), `SELECT count(*) FILTER (WHERE owner_kind <> 'destroyed'),
count(*) FILTER (WHERE owner_kind = 'map') FROM item_ownership WHERE kind = 'relic'`).Scan(&live, &lying); err != nil {
		t.Fatal(err)
	}
	return live, lying
}

// waitRelicsLying waits until both relics lie on the map, checking on
// the way that there are never more than two.
func waitRelicsLying(t *testing.T, db *store.Postgres) {
	t.Helper()
	poll(t, func() error {
		live, lying := relics(t, db)
		if live > 2 {
			t.Fatalf("%d relics", live)
		}
		if lying != 2 {
			return fmt.Errorf("%d of %d relics lying on the map", lying, live)
		}
		return nil
	})
}

// An instance_quota item is made up to its quota and never beyond, while
// players race to pick the items up, leave with them, and the map takes
// them back; every recovery has its one audit row.
func TestAnInstanceQuotaNeverExceedsItsQuota(t *testing.T) {
	// One spawn point: every player starts by the relics.
	oneSpawn := strings.Replace(cryptMap, `"seed":7`, `"seed":7,"spawnPoints":1`, 1)
	static, err := mapgen.Generate(mustConfig(t, oneSpawn))
	if err != nil {
		t.Fatal(err)
	}
	sx, sy := float32(static.PlayerSpawn.X), float32(static.PlayerSpawn.Y)
	relicAnchors = []content.Anchor{{X: sx + 4, Y: sy}, {X: sx - 4, Y: sy}}
	db, _ := newDB(t)
	h := recoveringMap(t, db, nil, oneSpawn, relicPack(nil))
	waitRelicsLying(t, db)
	for round := range 3 {
		var players []*client.Client
		for i := range 3 {
			players = append(players, h.join(character(fmt.Sprintf("r%d-%d", round, i))))
		}
		for _, c := range players { // all in sight before anyone moves: the race starts even
			waitFor(t, c, "both relics in sight", func(s client.State) bool {
				return relicAt(s, relicAnchors[0]) != nil && relicAt(s, relicAnchors[1]) != nil
			})
		}
		var wg sync.WaitGroup
		for _, c := range players {
			wg.Go(func() { raceForRelics(t, c) })
		}
		wg.Wait()
		if live, lying := relics(t, db); live > 2 || lying != 0 {
			t.Fatalf("round %d: %d relics, %d still lying after the race", round, live, lying)
		}
		for _, c := range players {
			_ = c.Close()
		}
		waitRelicsLying(t, db) // the holders are gone: their relics come back

	}
	var audits, recovered int
	if err := db.DB().QueryRowContext(context.Background(), `SELECT count(*) FROM item_recovery_audit WHERE kind = 'relic'`).Scan(&audits); err != nil {
		t.Fatal(err)
	}
	for _, reason := range []string{"quota_short", "holder_offline", "missing", "destroyed", "unreachable"} {
		recovered += int(testutil.ToFloat64(h.srv.metrics.recoveries.WithLabelValues(reason)))
	}
	if audits != recovered || audits < 2 {
		t.Errorf("%d audit rows for %d recoveries", audits, recovered)
	}
}

// raceForRelics has c, which saw both relics, walk to each and try to
// pick it up (another player may be quicker). It runs on its own
// goroutine, so it reports with Error, never Fatal.
func raceForRelics(t *testing.T, c *client.Client) {
	ctx := waitCtx(t)
	for _, a := range relicAnchors {
		relic := relicAt(c.Snapshot(), a)
		if relic == nil {
			continue // taken already
		}
		if err := playtest.WalkTo(ctx, c, *relic); err != nil {
			t.Error(err)
			return
		}
		if _, err := c.Do(ctx, protocol.FeatureLoot, protocol.ActionPickup, protocol.LootPickup{Entity: relic.ID}); err != nil {
			t.Error(err)
		}
	}
}

// relicAt is the loot lying at anchor a, nil for none.
func relicAt(s client.State, a content.Anchor) *protocol.EntityState {
	for _, e := range s.Entities {
		if e.Kind == protocol.EntityLoot && e.X == a.X && e.Y == a.Y {
			return &e
		}
	}
	return nil
}

func mustConfig(t *testing.T, raw string) mapgen.Config {
	t.Helper()
	cfg, err := mapgen.ParseConfig([]byte(raw))
	if err != nil {
		t.Fatal(err)
	}
	return cfg
}

// A map killed while a recovery commits leaves the key in one place: the
// transaction is all or nothing, and the restarted map finishes the job,
// with one audit row for the one recovery.
func TestACrashDuringARecoveryLosesAndDuplicatesNothing(t *testing.T) {
	db, _ := newDB(t)
	keys := newKeys(t)
	give(t, db, "zed", store.Item{ItemID: cryptKey, Kind: "crypt key"})
	release := stallCommits(t, db, stallAtTheMove, cryptKey)
	h := recoveringCrypt(t, db, keys, nil)
	poll(t, func() error { // the recovery is in its transaction, waiting for the row
		var n int
		err := db.DB().QueryRowContext(context.Background(),
			`SELECT count(*) FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND query LIKE '%SET owner_kind = ''map''%'`).Scan(&n)
		if err == nil && n == 0 {
			err = errors.New("no recovery waiting")
		}
		return err
	})
	h.crash()
	release()
	h2 := recoveringCrypt(t, db, keys, nil)
	x, y := keyAnchor(h2)
	waitRecovered(t, h2, db, cryptKey, x, y)
	waitPasses(t, h2, 3)
	if rows := audits(t, db, cryptKey); len(rows) != 1 {
		t.Errorf("%d audit rows, want 1: %+v", len(rows), rows)
	}
}

// A deleted character's key is destroyed with it, and its map brings it
// back to the key room.
func TestADeletedCharactersKeyComesBack(t *testing.T) {
	db, _ := newDB(t)
	h := recoveringCrypt(t, db, nil, func(p *content.Pack) { p.Critical[0].OfflineTimeout = 3600 })
	give(t, db, "ulf", store.Item{ItemID: cryptKey, Kind: "crypt key"})
	waitPasses(t, h, 3)
	if it := itemRow(t, db, cryptKey); it.OwnerID != "ulf" {
		t.Fatalf("the key left ulf before the delete: %+v", it)
	}
	if err := db.DeleteCharacter(context.Background(), "user-ulf", "ulf", []string{"crypt key"}); err != nil {
		t.Fatal(err)
	}
	x, y := keyAnchor(h)
	waitRecovered(t, h, db, cryptKey, x, y)
	rows := audits(t, db, cryptKey)
	if len(rows) != 2 || rows[0].Reason != "owner_deleted" || rows[1].Reason != "destroyed" {
		t.Errorf("audit rows %+v, want owner_deleted then destroyed", rows)
	}
}
