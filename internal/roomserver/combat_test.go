package roomserver

import (
	"context"
	"math"
	"slices"
	"testing"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/roomkeeper/roomkeeper/internal/content"
	"github.com/roomkeeper/roomkeeper/internal/playtest"
	"github.com/roomkeeper/roomkeeper/internal/protocol"
	"github.com/roomkeeper/roomkeeper/pkg/client"
)

// Attacks over a real socket: refusals come with their codes and are
// counted by reason; a hit lands (the target's hit points drop in the
// snapshots) and the next attack within the cooldown is refused.
func TestAttacksOverASocket(t *testing.T) {
	h := newHarness(t, nil)
	c := h.join()
	ctx := waitCtx(t)
	attack := func(target uint32) protocol.Ack {
		t.Helper()
		ack, err := c.Do(ctx, protocol.FeatureCombat, protocol.ActionAttack, protocol.CombatAttack{Target: target})
		if err != nil {
			t.Fatal(err)
		}
		return ack
	}
	for name, target := range map[string]uint32{"oneself": c.Welcome().PlayerID, "nothing": math.MaxUint32} {
		if ack := attack(target); ack.OK || ack.Code != protocol.CodeInvalidAction {
			t.Errorf("attacking %s: %+v, want invalid_action", name, ack)
		}
	}
	if n := testutil.ToFloat64(h.srv.metrics.attacksRefused.WithLabelValues("not_a_target")); n != 2 {
		t.Errorf("refused attacks counted as not_a_target: %v, want 2", n)
	}

	var npc protocol.EntityState
	landed := false
	for range 20 { // the NPCs wander: walk up to the nearest until a hit is in range
		s := waitFor(t, c, "an NPC in sight", func(s client.State) bool { return nearestNPC(s).ID != 0 })
		npc = nearestNPC(s)
		if err := playtest.WalkTo(ctx, c, npc); err != nil {
			t.Fatal(err)
		}
		ack := attack(npc.ID)
		if ack.OK {
			landed = true
			break
		}
		if ack.Code != protocol.CodeOutOfRange {
			t.Fatalf("attacking NPC %d next to it: %+v", npc.ID, ack)
		}
	}
	if !landed {
		t.Fatal("no attack landed in 20 tries")
	}
	if ack := attack(npc.ID); ack.OK || ack.Code != protocol.CodeCooldown {
		t.Errorf("a second attack at once: %+v, want cooldown", ack)
	}
	waitFor(t, c, "the NPC's hit points drop", func(s client.State) bool {
		for _, e := range s.Entities {
			if e.ID == npc.ID {
				return e.HP < npc.HP
			}
		}
		return true // it died: the hit took it all
	})
}

// nearestNPC is the NPC nearest to the player, or a zero entity.
func nearestNPC(s client.State) protocol.EntityState {
	var best protocol.EntityState
	bestD := float32(math.MaxFloat32)
	for _, e := range s.Entities {
		if d := playtest.Dist(e, s.Self); e.Kind == protocol.EntityNPC && d < bestD {
			best, bestD = e, d
		}
	}
	return best
}

// A kill's drop goes to exactly one of two players who pick it up at the
// same moment, in memory and in the database.
func TestADropGoesToOneOfTwoTakers(t *testing.T) {
	db, _ := newDB(t)
	h := persistentHarness(t, db, nil, trophyMap)
	waitReady(t, h)
	a, b := h.join(character("alice")), h.join(character("bob"))
	ctx := waitCtx(t)
	drop := dropOf(t, a, killNearestNPC(t, a))
	walkTo(t, a, drop)
	walkTo(t, b, drop)
	seqA, errA := a.Command(protocol.FeatureLoot, protocol.ActionPickup, protocol.LootPickup{Entity: drop.ID})
	seqB, errB := b.Command(protocol.FeatureLoot, protocol.ActionPickup, protocol.LootPickup{Entity: drop.ID})
	if errA != nil || errB != nil {
		t.Fatal(errA, errB)
	}
	ackA, ackB := ackOf(t, ctx, a, seqA), ackOf(t, ctx, b, seqB)
	if ackA.OK == ackB.OK {
		t.Fatalf("both or neither took the drop: %+v, %+v", ackA, ackB)
	}
	winner, loser := "alice", ackB
	if ackB.OK {
		winner, loser = "bob", ackA
	}
	if loser.Code != protocol.CodeAlreadyTaken {
		t.Errorf("the loser was told %+v, want already_taken", loser)
	}
	items, err := db.ItemsOf(context.Background(), winner)
	if err != nil || len(items) != 1 || items[0].Kind != "trophy" {
		t.Fatalf("%s's items in the database: %+v %v", winner, items, err)
	}
	other := map[string]string{"alice": "bob", "bob": "alice"}[winner]
	if items, err := db.ItemsOf(context.Background(), other); err != nil || len(items) != 0 {
		t.Errorf("%s's items: %+v %v, want none", other, items, err)
	}
}

// trophyMap tunes a map whose enemies die of one hit and always drop a
// trophy.
func trophyMap(c *Config) {
	pack, _ := content.Named("wilds")
	pack.Enemies = []content.EnemyType{pack.Enemies[0]}
	pack.Enemies[0].HP = 1
	pack.Enemies[0].Drops = []content.Drop{{Kind: "trophy", PerMille: 1000}}
	pack.Items = append(slices.Clone(pack.Items), content.ItemDef{Kind: "trophy", Weight: 1})
	c.MapConfig = []byte(`{"seed":5,"width":256,"height":256,"npcDensity":0.05}`)
	c.Sim.Content = pack
}

// killNearestNPC walks c up to the nearest NPC and hits it until it dies
// (trophyMap's die of one hit), and returns its death as c was told it.
func killNearestNPC(t *testing.T, c *client.Client) protocol.Event {
	t.Helper()
	for tries := 0; tries < 20; { // the NPCs wander: walk up to the nearest until the hit lands
		s := waitFor(t, c, "an NPC in sight", func(s client.State) bool { return nearestNPC(s).ID != 0 })
		npc := nearestNPC(s)
		walkTo(t, c, npc)
		ack := command(t, c, protocol.FeatureCombat, protocol.ActionAttack, protocol.CombatAttack{Target: npc.ID})
		if ack.Code == protocol.CodeCooldown { // the last kill's: wait for the next snapshot, not a try
			waitFor(t, c, "the next snapshot", func(next client.State) bool { return next.Tick > s.Tick })
			continue
		}
		if tries++; !ack.OK {
			continue
		}
		died := func(e protocol.Event) bool { return e.Type == protocol.EventDeath && e.Entity == npc.ID }
		s = waitFor(t, c, "the NPC's death", func(s client.State) bool { return slices.ContainsFunc(s.Events, died) })
		return s.Events[slices.IndexFunc(s.Events, died)]
	}
	t.Fatal("no kill in 20 tries")
	return protocol.Event{}
}

// dropOf waits for the loot a death dropped where it happened.
func dropOf(t *testing.T, c *client.Client, death protocol.Event) protocol.EntityState {
	t.Helper()
	at := protocol.EntityState{X: death.X, Y: death.Y}
	s := waitFor(t, c, "the drop where it died", func(s client.State) bool { return dropAt(s, at).ID != 0 })
	return dropAt(s, at)
}

// dropAt is the loot lying exactly at p, or a zero entity.
func dropAt(s client.State, p protocol.EntityState) protocol.EntityState {
	for _, e := range s.Entities {
		if e.Kind == protocol.EntityLoot && e.X == protocol.Dequantize(protocol.Quantize(p.X)) && e.Y == protocol.Dequantize(protocol.Quantize(p.Y)) {
			return e
		}
	}
	return protocol.EntityState{}
}

// ackOf waits for the ack of seq.
func ackOf(t *testing.T, ctx context.Context, c *client.Client, seq uint32) protocol.Ack {
	t.Helper()
	var ack protocol.Ack
	if _, err := c.WaitFor(ctx, func(s client.State) bool {
		i := slices.IndexFunc(s.Acks, func(a protocol.Ack) bool { return a.Seq == seq })
		if i >= 0 {
			ack = s.Acks[i]
		}
		return i >= 0
	}); err != nil {
		t.Fatal(err)
	}
	return ack
}
