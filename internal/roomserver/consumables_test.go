package roomserver

import (
	"context"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/roomkeeper/roomkeeper/internal/protocol"
	"github.com/roomkeeper/roomkeeper/internal/sim"
	"github.com/roomkeeper/roomkeeper/internal/store"
	"github.com/roomkeeper/roomkeeper/pkg/client"
)

// wounded saves character's state with hp hit points, as a fight before
// would have left it.
func wounded(t *testing.T, db *store.Postgres, character string, hp uint8) {
	t.Helper()
	ctx := context.Background()
	if err := db.EnsureCharacter(ctx, character, "user-"+character); err != nil {
		t.Fatal(err)
	}
	lease, err := db.ClaimLease(ctx, character, "demo-town", "earlier", time.Minute, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	row := encodeState("town", sim.PlayerRecord{Tag: character, X: 256, Y: 256, HP: hp, Revision: 1})
	row.Epoch = lease.Epoch
	if _, err := db.SaveStates(ctx, "demo-town", []store.CharacterState{row}); err != nil {
		t.Fatal(err)
	}
	if err := db.ReleaseLease(ctx, lease); err != nil {
		t.Fatal(err)
	}
}

func useCmd(t *testing.T, c *client.Client, item string) protocol.Ack {
	t.Helper()
	return command(t, c, protocol.FeatureInventory, protocol.ActionUse, protocol.InventoryUse{Item: item})
}

// TestAPotionHealsOnceAndIsUsedUp: inventory.use of a potion is a critical
// action: acked once the potion is destroyed in the database, the heal
// capped at full hit points; the same potion used twice at once heals
// once; what cannot be used, or is not carried, is refused with its code
// and changes nothing.
func TestAPotionHealsOnceAndIsUsedUp(t *testing.T) {
	db, _ := newDB(t)
	h := persistentHarness(t, db, nil, nil)
	waitReady(t, h)
	wounded(t, db, "pia", 40)
	give(t, db, "pia", store.Item{ItemID: "p1", Kind: "potion"}, store.Item{ItemID: "p2", Kind: "potion"},
		store.Item{ItemID: "p3", Kind: "potion"}, store.Item{ItemID: "g1", Kind: "gem"}, store.Item{ItemID: "s1", Kind: "sword"})
	give(t, db, "quin", store.Item{ItemID: "q1", Kind: "potion"})
	c := h.join(character("pia"))
	hp := func() uint8 {
		return waitFor(t, c, "a snapshot of herself", func(s client.State) bool { return s.Self.HP != 0 }).Self.HP
	}
	if got := hp(); got != 40 {
		t.Fatalf("pia starts with %d hit points, want her saved 40", got)
	}

	wantRefused(t, "a gem", useCmd(t, c, "g1"), protocol.CodeNotUsable)
	wantRefused(t, "another's potion", useCmd(t, c, "q1"), protocol.CodeNotOwner)
	wantRefused(t, "a forged id", useCmd(t, c, "demo-town/loot/999999"), protocol.CodeNotOwner)
	if ack := equipCmd(t, c, "s1", "weapon"); !ack.OK {
		t.Fatal(ack)
	}
	wantRefused(t, "the worn sword", useCmd(t, c, "s1"), protocol.CodeInvalidAction)

	ack := useCmd(t, c, "p1")
	if !ack.OK || slices.ContainsFunc(ack.Inventory, func(v protocol.ItemView) bool { return v.ID == "p1" }) {
		t.Fatalf("using p1: %+v", ack)
	}
	if it := itemRow(t, db, "p1"); it.OwnerKind != store.OwnerDestroyed {
		t.Fatalf("acked, but the database has p1 %+v", it)
	}
	// The heal is saved before the ack: a crash now would bring pia back
	// healed, not wounded with her potion gone.
	if saved, err := db.LoadState(context.Background(), "pia"); err != nil {
		t.Fatal(err)
	} else if r, err := decodeState(saved, 100, time.Now()); err != nil || r.HP != 70 {
		t.Fatalf("acked, but the saved state has %d hit points (%v), want 70", r.HP, err)
	}
	waitFor(t, c, "70 hit points", func(s client.State) bool { return s.Self.HP == 70 })

	// p2 twice at once: one use, one heal.
	var wg sync.WaitGroup
	acks := make([]protocol.Ack, 2)
	for i := range acks {
		wg.Go(func() { acks[i] = useCmd(t, c, "p2") })
	}
	wg.Wait()
	if acks[0].OK == acks[1].OK {
		t.Fatalf("p2 used twice at once: %+v", acks)
	}
	waitFor(t, c, "full hit points, not more", func(s client.State) bool { return s.Self.HP == 100 })
	events, err := db.EventsOf(context.Background(), "pia")
	uses := 0
	for _, e := range events {
		if e.Kind == "inventory.use" {
			uses++
		}
	}
	if err != nil || uses != 2 {
		t.Errorf("%d use events (%v), want p1's and p2's", uses, err)
	}
	if it := itemRow(t, db, "p3"); it.OwnerKind != store.OwnerCharacter || it.OwnerID != "pia" {
		t.Errorf("p3 was not used but is %+v", it)
	}
}

// commitThenCrash is the database as a map pod that dies right after a
// use commits sees it: the commit lands, and the pod never hears back.
type commitThenCrash struct {
	*store.Postgres
	committed chan struct{}
}

func (c *commitThenCrash) CommitCritical(ctx context.Context, ev store.CriticalEvent, moves ...store.Move) error {
	err := c.Postgres.CommitCritical(ctx, ev, moves...)
	if err == nil && ev.Kind == "inventory.use" {
		close(c.committed)
		<-ctx.Done() // gone before it hears back
		return ctx.Err()
	}
	return err
}

// TestACrashBetweenAUsesCommitAndItsAckLosesNothing: the potion's end and
// its heal commit together, so a pod that dies after the commit, before
// the ack and before the world healed, brings the character back healed
// with the potion gone: nothing lost, nothing twice. Checkpoints taken
// while the use commits do not write the unhealed character over it.
func TestACrashBetweenAUsesCommitAndItsAckLosesNothing(t *testing.T) {
	db, _ := newDB(t)
	keys := newKeys(t)
	wounded(t, db, "una", 40)
	give(t, db, "una", store.Item{ItemID: "u1", Kind: "potion"})
	crashing := &commitThenCrash{Postgres: db, committed: make(chan struct{})}
	h := persistentHarness(t, crashing, keys, nil)
	waitReady(t, h)
	c := h.join(character("una"))
	if _, err := c.Command(protocol.FeatureInventory, protocol.ActionUse, protocol.InventoryUse{Item: "u1"}); err != nil {
		t.Fatal(err)
	}
	select {
	case <-crashing.committed:
	case <-waitCtx(t).Done():
		t.Fatal("the use never committed")
	}
	// Una walks while her use hangs; a checkpoint that saves vic's walk
	// after hers would have saved her too, unhealed, over the use.
	walk(t, c, 1, 0, 6)
	vic := h.join(character("vic"))
	waitSaved(t, db, "vic", walk(t, vic, 0, 1, 6).Self)
	h.crash()

	h2 := persistentHarness(t, db, keys, nil)
	waitReady(t, h2)
	back := h2.join(character("una"))
	if got := waitFor(t, back, "una in the world", func(s client.State) bool { return s.Self.HP != 0 }).Self.HP; got != 70 {
		t.Errorf("una came back with %d hit points, want the potion's heal: 70", got)
	}
	if slices.ContainsFunc(back.Welcome().Inventory, func(v protocol.ItemView) bool { return v.ID == "u1" }) {
		t.Error("the used potion is back in una's bag")
	}
	if it := itemRow(t, db, "u1"); it.OwnerKind != store.OwnerDestroyed {
		t.Errorf("u1 is %+v, want destroyed", it)
	}
}
