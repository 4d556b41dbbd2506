package roomserver

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/roomkeeper/roomkeeper/internal/content"
	"github.com/roomkeeper/roomkeeper/internal/protocol"
	"github.com/roomkeeper/roomkeeper/pkg/client"
)

// castPack is the wilds with two abilities a flood can try: a cheap rally
// with a long cooldown, and a mend that costs more mana than two casts.
func castPack() content.Pack {
	p, _ := content.Named("wilds")
	p.Abilities = []content.Ability{
		{Name: "rally", Stamina: 30, Cooldown: 30, Target: content.TargetSelf, Buff: &content.Buff{Attack: 5, Duration: 10}},
		{Name: "mend", Mana: 60, Cooldown: 0.1, Target: content.TargetSelf, Heal: 1},
	}
	return p
}

var errCoolingDown = errors.New("still cooling down")

func castCmd(t *testing.T, c *client.Client, ability string, target uint32) protocol.Ack {
	t.Helper()
	return command(t, c, protocol.FeatureCombat, protocol.ActionCast, protocol.CombatCast{Ability: ability, Target: target})
}

// TestAFloodOfCastsPaysOnce: the server holds abilities to their cost and
// cooldown however fast they come: of 40 casts sent at once one lands and
// costs its stamina once; the others are refused (cooldown, or
// rate_limited for those that did not fit the queue). A cast the pool
// cannot pay is not_enough_mana; an unknown ability invalid_action. The
// owner sees its pools, buffs and cooldowns in its inventory channel.
func TestAFloodOfCastsPaysOnce(t *testing.T) {
	h := newHarness(t, func(c *Config) { c.Sim.Content = castPack() })
	c := h.join()
	seqs := make([]uint32, 40)
	for i := range seqs {
		seq, err := c.Command(protocol.FeatureCombat, protocol.ActionCast, protocol.CombatCast{Ability: "rally"})
		if err != nil {
			t.Fatal(err)
		}
		seqs[i] = seq
	}
	s := waitFor(t, c, "every cast answered", func(s client.State) bool {
		for _, seq := range seqs {
			if len(acksOf(s, seq)) == 0 {
				return false
			}
		}
		return true
	})
	landed := 0
	for _, seq := range seqs {
		switch a := acksOf(s, seq)[0]; {
		case a.OK:
			landed++
		case a.Code != protocol.CodeCooldown && a.Code != protocol.CodeRateLimited:
			t.Errorf("cast %d refused with %s, want cooldown or rate_limited", seq, a.Code)
		}
	}
	if landed != 1 {
		t.Fatalf("%d of 40 rallies landed, want 1", landed)
	}
	inv := waitFor(t, c, "the rally in the inventory channel", func(s client.State) bool {
		return s.Inventory != nil && len(s.Inventory.Buffs) == 1
	}).Inventory
	if r := inv.Resources; r == nil || r.Stamina != 70 || r.StaminaMax != 100 || inv.Buffs[0].Ability != "rally" || inv.Buffs[0].Attack != 5 ||
		len(inv.Cooldowns) != 1 || inv.Cooldowns[0].Ability != "rally" {
		t.Errorf("inventory channel after one rally: %+v %+v %+v", inv.Resources, inv.Buffs, inv.Cooldowns)
	}

	if ack := castCmd(t, c, "mend", 0); !ack.OK {
		t.Fatalf("a mend with 100 mana: %+v", ack)
	}
	var second protocol.Ack
	poll(t, func() error {
		if second = castCmd(t, c, "mend", 0); second.Code == protocol.CodeCooldown {
			return errCoolingDown
		}
		return nil
	})
	wantRefused(t, "a mend with 40 mana", second, protocol.CodeNotEnoughMana)
	wantRefused(t, "an ability the pack does not have", castCmd(t, c, "meteor", 0), protocol.CodeInvalidAction)
}

// TestOthersSeeBuffsAndDebuffs: a buff on a player and a debuff on an
// enemy travel to everyone who sees them, as effect bits over the combat
// state, in both codecs.
func TestOthersSeeBuffsAndDebuffs(t *testing.T) {
	h := newHarness(t, func(c *Config) { c.MapConfig = []byte(`{"seed":5,"width":256,"height":256,"npcDensity":0.05}`) })
	caster := h.dial(protocol.Hello{Ticket: h.ticket()}, client.Options{Codec: protocol.CodecBinary})
	watchers := map[string]*client.Client{
		protocol.CodecJSON:   h.join(),
		protocol.CodecBinary: h.dial(protocol.Hello{Ticket: h.ticket()}, client.Options{Codec: protocol.CodecBinary}),
	}
	id := caster.Welcome().PlayerID
	if ack := castCmd(t, caster, "battle cry", 0); !ack.OK {
		t.Fatalf("battle cry: %+v", ack)
	}
	for codec, w := range watchers {
		s := waitFor(t, w, codec+": the caster strengthened", func(s client.State) bool {
			e, ok := s.Entity(id)
			return ok && e.State&protocol.Strengthened != 0
		})
		if e, _ := s.Entity(id); e.State&protocol.CombatMask == protocol.CombatDead || e.State&protocol.Weakened != 0 {
			t.Errorf("%s: the strengthened caster's state %#x, want alive with only the strengthened bit", codec, e.State)
		}
	}

	for range 20 { // the NPCs wander: walk up to the nearest until the curse lands
		npc := nearestNPC(waitFor(t, caster, "an NPC in sight", func(s client.State) bool { return nearestNPC(s).ID != 0 }))
		walkTo(t, caster, npc)
		if ack := castCmd(t, caster, "curse", npc.ID); !ack.OK {
			continue
		}
		s := waitFor(t, caster, "the cursed NPC weakened", func(s client.State) bool {
			e, ok := s.Entity(npc.ID)
			return ok && e.State&protocol.Weakened != 0
		})
		if e, _ := s.Entity(npc.ID); e.State&protocol.Strengthened != 0 || e.HP != npc.HP {
			t.Errorf("the cursed NPC: %+v, want only the weakened bit and its %d hit points", e, npc.HP)
		}
		return
	}
	t.Fatal("no curse landed in 20 tries")
}

// TestACharacterComesBackWithWhatItSpent: a cast is saved with the next
// checkpoint, and a character that comes back (here after its map's pod
// went down) has the stamina it spent, the cooldown and the buff still
// running: leaving and joining again readies nothing early.
func TestACharacterComesBackWithWhatItSpent(t *testing.T) {
	db, _ := newDB(t)
	keys := newKeys(t)
	h := persistentHarness(t, db, keys, nil)
	waitReady(t, h)
	c := h.join(character("ivy"))
	if ack := castCmd(t, c, "battle cry", 0); !ack.OK {
		t.Fatalf("battle cry: %+v", ack)
	}
	poll(t, func() error { // the cast's checkpoint
		saved, err := db.LoadState(context.Background(), "ivy")
		if err != nil {
			return err
		}
		if r, err := decodeState(saved, 100, time.Now()); err != nil || r.Abilities == nil || r.Abilities.Cooldowns["battle cry"] == 0 {
			return fmt.Errorf("saved abilities %+v (%w)", r.Abilities, err)
		}
		return nil
	})
	h.crash()

	h2 := persistentHarness(t, db, keys, nil)
	waitReady(t, h2)
	back := h2.join(character("ivy"))
	inv := waitFor(t, back, "ivy's pools", func(s client.State) bool { return s.Inventory != nil && s.Inventory.Resources != nil }).Inventory
	if r := inv.Resources; r.Stamina < 70 || r.Stamina >= 100 {
		t.Errorf("stamina after coming back %d, want the 70 left (and what it regained since), not full", r.Stamina)
	}
	if len(inv.Buffs) != 1 || inv.Buffs[0].Ability != "battle cry" || !slices.ContainsFunc(inv.Cooldowns, func(cd protocol.CooldownView) bool { return cd.Ability == "battle cry" }) {
		t.Errorf("after coming back: buffs %+v, cooldowns %+v: want the battle cry's on both", inv.Buffs, inv.Cooldowns)
	}
	if ack := castCmd(t, back, "battle cry", 0); ack.OK || ack.Code != protocol.CodeCooldown {
		t.Errorf("a battle cry again: %+v, want cooldown", ack)
	}
}
