package roomserver

import (
	"math"
	"testing"

	"github.com/prometheus/client_golang/prometheus/testutil"

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
