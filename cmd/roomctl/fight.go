package main

import (
	"fmt"
	"time"

	"github.com/roomkeeper/roomkeeper/internal/playtest"
	"github.com/roomkeeper/roomkeeper/internal/protocol"
	"github.com/roomkeeper/roomkeeper/pkg/client"
)

// Bot behaviours (--behavior).
const (
	behaviorWander = "wander"
	behaviorFight  = "fight"
)

// Fighting bots seek the nearest NPC, attack it as often as the cooldown
// lets them, and pick up what falls near them, so a load test exercises
// combat, deaths, drops and critical pickups.
const (
	attackReach = 28 // a little inside the server's 32
	pickupReach = 20 // inside the server's 24
	attackEvery = 520 * time.Millisecond
	pickupEvery = 2 * time.Second
)

// fightReport counts what a fighting bot did.
type fightReport struct {
	attacks, landed, kills, pickups int
	refused                         map[protocol.Code]int
}

func (r *fightReport) add(o fightReport) {
	r.attacks += o.attacks
	r.landed += o.landed
	r.kills += o.kills
	r.pickups += o.pickups
	for code, n := range o.refused {
		if r.refused == nil {
			r.refused = map[protocol.Code]int{}
		}
		r.refused[code] += n
	}
}

func (r fightReport) print() {
	fmt.Printf("fights: attacks %d  landed %d  refused %v  kills %d  pickups %d\n", r.attacks, r.landed, r.refused, r.kills, r.pickups)
}

// fighter steers one bot through fights.
type fighter struct {
	lastAttack, lastPickup time.Time
	// pending are the seqs of commands sent, by what they were.
	pending   map[uint32]string
	lastEvent uint64
	report    fightReport
}

func newFighter() *fighter {
	return &fighter{pending: map[uint32]string{}, report: fightReport{refused: map[protocol.Code]int{}}}
}

// step tallies what the server answered and said, then acts: attack an NPC
// in reach, pick up loot in reach, or head for the nearest NPC. It returns
// the heading, and false when there is nothing to fight.
func (f *fighter) step(c *client.Client) (float32, float32, bool) {
	s := c.Snapshot()
	f.tally(s)
	if s.Self.HP == 0 {
		return 0, 0, false // dead: wait for the respawn
	}
	now := time.Now()
	if loot, ok := nearest(s, protocol.EntityLoot); ok && playtest.Dist(loot, s.Self) <= pickupReach && now.Sub(f.lastPickup) >= pickupEvery {
		f.send(c, "pickup", protocol.FeatureLoot, protocol.ActionPickup, protocol.LootPickup{Entity: loot.ID})
		f.lastPickup = now
	}
	npc, ok := nearest(s, protocol.EntityNPC)
	if !ok {
		return 0, 0, false
	}
	d := playtest.Dist(npc, s.Self)
	if d <= attackReach {
		if now.Sub(f.lastAttack) >= attackEvery {
			f.send(c, "attack", protocol.FeatureCombat, protocol.ActionAttack, protocol.CombatAttack{Target: npc.ID})
			f.report.attacks++
			f.lastAttack = now
		}
		return 0, 0, true // stand and fight
	}
	return (npc.X - s.Self.X) / d, (npc.Y - s.Self.Y) / d, true
}

func (f *fighter) send(c *client.Client, what, feature, action string, payload any) {
	if seq, err := c.Command(feature, action, payload); err == nil {
		f.pending[seq] = what
	}
}

// tally counts the answers to the commands sent and the kills this bot made.
func (f *fighter) tally(s client.State) {
	for _, a := range s.Acks {
		what, ok := f.pending[a.Seq]
		if !ok {
			continue
		}
		delete(f.pending, a.Seq)
		switch {
		case a.OK && what == "attack":
			f.report.landed++
		case a.OK:
			f.report.pickups++
		case what == "attack":
			f.report.refused[a.Code]++
		}
	}
	for _, e := range s.Events {
		if e.ID > f.lastEvent {
			f.lastEvent = e.ID
			if e.Type == protocol.EventDeath && e.By == s.Self.ID {
				f.report.kills++
			}
		}
	}
}

// nearest is the nearest living entity of kind the client sees.
func nearest(s client.State, kind protocol.EntityKind) (protocol.EntityState, bool) {
	var best protocol.EntityState
	found := false
	for _, e := range s.Entities {
		if e.Kind != kind || (kind == protocol.EntityNPC && e.HP == 0) {
			continue
		}
		if !found || playtest.Dist(e, s.Self) < playtest.Dist(best, s.Self) {
			best, found = e, true
		}
	}
	return best, found
}
