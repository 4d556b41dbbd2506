package roomserver

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/roomkeeper/roomkeeper/internal/content"
	"github.com/roomkeeper/roomkeeper/internal/mapgen"
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
	pack, _ := content.Named("crypt")
	pack.Critical = []content.CriticalPolicy{{Kind: "crypt key", Type: content.RegenerativeUnique,
		Anchors: []content.Anchor{{Room: content.AnchorKeyRoom}}, CooldownTicks: 3, OfflineTimeout: 0.2}}
	if tune != nil {
		tune(&pack)
	}
	h := persistentHarness(t, db, keys, func(c *Config) {
		c.MapConfig = []byte(cryptMap)
		c.Sim.Content = pack
		c.RecoveryInterval = 100 * time.Millisecond
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
		return nil
	})
	var count int
	if err := h.srv.loop.Do(waitCtx(t), func(w *sim.World) { count = w.LootCount(id) }); err != nil {
		t.Fatal(err)
	}
	if count != 1 {
		t.Errorf("the world has %d loot entities of %s, want 1", count, id)
	}
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
	h := recoveringCrypt(t, db, nil, nil)
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
			if r.OldOwnerKind != store.OwnerDestroyed || r.NewOwnerID != "demo-town" || r.NewX != x || r.NewY != y || r.Tick <= 0 {
				t.Errorf("audit row %+v", r)
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
