package main

import (
	"fmt"
	"slices"
	"time"

	"github.com/roomkeeper/roomkeeper/internal/mapgen"
	"github.com/roomkeeper/roomkeeper/internal/playtest"
	"github.com/roomkeeper/roomkeeper/internal/protocol"
	"github.com/roomkeeper/roomkeeper/internal/sim"
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
	pickupEvery = time.Second
	doorEvery   = time.Second
	// A hurt bot (healBelow hit points or fewer) uses a potion, at most one
	// every useEvery.
	healBelow = 40
	useEvery  = 2 * time.Second
	// lootDetour is how far a bot goes for loot it sees (a drop, a key),
	// and maxPickupTries how often it tries for one item.
	lootDetour     = 64
	maxPickupTries = 3
	// giveUpFor is how long a bot leaves alone a door that refused it and
	// what lies behind.
	giveUpFor = 20 * time.Second
)

// fightReport counts what a fighting bot did.
type fightReport struct {
	attacks, landed, kills, pickups, doors, uses, casts int
	refused                                             map[protocol.Code]int
	// cleared and guarded count a dungeon's guarded rooms (the boss room,
	// and those enemies spawn in) and those the bot saw cleared; merged,
	// cleared is the fewest any bot saw.
	cleared, guarded int
	// bossPhase is the last boss_phase the bot saw (merged: the fewest).
	bossPhase int
	bots      int
}

func (r *fightReport) add(o fightReport) {
	if r.bots == 0 || o.cleared < r.cleared {
		r.cleared = o.cleared
	}
	if r.bots == 0 || o.bossPhase < r.bossPhase {
		r.bossPhase = o.bossPhase
	}
	r.guarded = max(r.guarded, o.guarded)
	r.bots++
	r.attacks += o.attacks
	r.landed += o.landed
	r.kills += o.kills
	r.pickups += o.pickups
	r.doors += o.doors
	r.uses += o.uses
	r.casts += o.casts
	for code, n := range o.refused {
		if r.refused == nil {
			r.refused = map[protocol.Code]int{}
		}
		r.refused[code] += n
	}
}

func (r fightReport) print() {
	fmt.Printf("fights: attacks %d  landed %d  refused %v  kills %d  pickups %d  doors opened %d  potions used %d  abilities cast %d\n",
		r.attacks, r.landed, r.refused, r.kills, r.pickups, r.doors, r.uses, r.casts)
	if r.guarded > 0 {
		fmt.Printf("dungeon: every bot saw %d of %d guarded rooms cleared\n", r.cleared, r.guarded)
	}
	if r.bossPhase > 0 {
		fmt.Printf("boss: every bot saw it enter phase %d\n", r.bossPhase)
	}
}

// fighter steers one bot through fights, and through a dungeon's rooms
// when no enemy is in sight.
type fighter struct {
	lastAttack, lastPickup, lastDoor, lastUse, lastCast time.Time
	// usable are the item kinds it uses when hurt; bolts the enemy
	// abilities it casts at what it fights.
	usable map[string]bool
	bolts  []protocol.AbilityDefinition
	// pending are the seqs of commands sent, by what they were.
	pending   map[uint32]string
	lastEvent uint64
	report    fightReport
	nav       *playtest.Navigator
	rooms     *dungeonRooms
	tries     map[uint32]int // pickups tried, by loot entity
	// locked are doors that refused this bot (locked, most likely), and
	// ignored the NPCs and loot behind them, each until a time.
	locked, ignored map[uint32]time.Time
	lastDoorSent    uint32
}

func newFighter(static *mapgen.World, usable map[string]bool, bolts []protocol.AbilityDefinition) *fighter {
	rooms := newDungeonRooms(static)
	return &fighter{usable: usable, bolts: bolts, pending: map[uint32]string{}, nav: playtest.NewNavigator(static), rooms: rooms, tries: map[uint32]int{},
		locked: map[uint32]time.Time{}, ignored: map[uint32]time.Time{},
		report: fightReport{refused: map[protocol.Code]int{}, guarded: len(rooms.guarded)}}
}

// step tallies what the server answered and said, then acts: attack an NPC
// in reach, pick up loot in reach, head for the nearest NPC, or explore
// the next room. It returns the heading, and false when there is nothing
// to do.
func (f *fighter) step(c *client.Client) (float32, float32, bool) {
	s := c.Snapshot()
	f.tally(s)
	if s.Self.HP == 0 {
		return 0, 0, false // dead: wait for the respawn
	}
	now := time.Now()
	f.healIfHurt(c, s, now)
	goal, ok := f.rooms.next(s)
	var chasing uint32 // the NPC or loot the goal is
	loot, lootSeen := f.lootToTake(s, now)
	if lootSeen {
		chasing = loot.ID
		if playtest.Dist(loot, s.Self) <= pickupReach && now.Sub(f.lastPickup) >= pickupEvery {
			f.send(c, "pickup", protocol.FeatureLoot, protocol.ActionPickup, protocol.LootPickup{Entity: loot.ID})
			f.lastPickup = now
			f.tries[loot.ID]++
		}
		goal, ok = playtest.Point{X: loot.X, Y: loot.Y}, true
	}
	if npc, seen := f.nearestNPC(s, now); seen && now.Sub(f.lastCast) >= attackEvery {
		f.castAt(c, s, npc, now)
	}
	if npc, seen := f.nearestNPC(s, now); seen && (!lootSeen || playtest.Dist(npc, s.Self) <= attackReach) {
		if playtest.Dist(npc, s.Self) <= attackReach && sim.LineOfSight(client.Blocker(c.Static(), s.Entities), s.Self.X, s.Self.Y, npc.X, npc.Y) {
			if now.Sub(f.lastAttack) >= attackEvery {
				f.send(c, "attack", protocol.FeatureCombat, protocol.ActionAttack, protocol.CombatAttack{Target: npc.ID})
				f.report.attacks++
				f.lastAttack = now
			}
			return 0, 0, true // stand and fight
		}
		goal, ok, chasing = playtest.Point{X: npc.X, Y: npc.Y}, true, npc.ID
	}
	if !ok {
		return 0, 0, false
	}
	dx, dy, door, ok := f.nav.Toward(s, goal)
	switch {
	case !ok || (door != 0 && now.Before(f.locked[door])):
		// Walled off, or behind a door that would not open: something
		// else first.
		f.ignored[chasing] = now.Add(giveUpFor)
		f.rooms.skip()
		return 0, 0, false
	case door != 0 && now.Sub(f.lastDoor) >= doorEvery:
		f.send(c, "door", protocol.FeatureDoor, protocol.ActionToggle, protocol.DoorToggle{Door: door})
		f.lastDoor, f.lastDoorSent = now, door
	}
	return dx, dy, true
}

// lootToTake is the nearest loot within lootDetour that the bot has not
// tried to take too often (someone else may be taking it) nor given up on.
func (f *fighter) lootToTake(s client.State, now time.Time) (protocol.EntityState, bool) {
	return playtest.Nearest(s, func(e protocol.EntityState) bool {
		return e.Kind == protocol.EntityLoot && f.tries[e.ID] < maxPickupTries &&
			playtest.Dist(e, s.Self) <= lootDetour && !now.Before(f.ignored[e.ID])
	})
}

// nearestNPC is the nearest living NPC the bot has not given up on.
func (f *fighter) nearestNPC(s client.State, now time.Time) (protocol.EntityState, bool) {
	return playtest.Nearest(s, func(e protocol.EntityState) bool {
		return e.Kind == protocol.EntityNPC && e.HP > 0 && !now.Before(f.ignored[e.ID])
	})
}

func (f *fighter) send(c *client.Client, what, feature, action string, payload any) {
	if seq, err := c.Command(feature, action, payload); err == nil {
		f.pending[seq] = what
	}
}

// castAt casts an enemy ability at npc when it is within the ability's
// range and sight, the bot has the mana and stamina, and the ability is
// not cooling down (as the inventory channel says).
func (f *fighter) castAt(c *client.Client, s client.State, npc protocol.EntityState, now time.Time) {
	if a, ok := f.bolt(s, npc); ok && sim.LineOfSight(client.Blocker(c.Static(), s.Entities), s.Self.X, s.Self.Y, npc.X, npc.Y) {
		f.send(c, "cast", protocol.FeatureCombat, protocol.ActionCast, protocol.CombatCast{Ability: a, Target: npc.ID})
		f.lastCast = now
	}
}

// bolt is the enemy ability to cast at npc now, if any.
func (f *fighter) bolt(s client.State, npc protocol.EntityState) (string, bool) {
	inv := s.Inventory
	if inv == nil || inv.Resources == nil {
		return "", false
	}
	for _, a := range f.bolts {
		cooling := slices.ContainsFunc(inv.Cooldowns, func(cd protocol.CooldownView) bool { return cd.Ability == a.Name && cd.Ready > s.Tick })
		if !cooling && a.Mana <= inv.Resources.Mana && a.Stamina <= inv.Resources.Stamina && playtest.Dist(npc, s.Self) <= a.Range-4 {
			return a.Name, true
		}
	}
	return "", false
}

// healIfHurt uses a carried potion (a usable kind) when the bot is hurt.
func (f *fighter) healIfHurt(c *client.Client, s client.State, now time.Time) {
	if id, ok := f.potion(s, now); ok {
		f.send(c, "use", protocol.FeatureInventory, protocol.ActionUse, protocol.InventoryUse{Item: id})
		f.lastUse = now
	}
}

// potion is the carried item to use now: the bot is alive but hurt, it
// used none lately, and it carries one of a usable kind.
func (f *fighter) potion(s client.State, now time.Time) (string, bool) {
	if s.Self.HP == 0 || s.Self.HP > healBelow || now.Sub(f.lastUse) < useEvery || s.Inventory == nil {
		return "", false
	}
	for _, it := range s.Inventory.Items {
		if it.Slot == "" && f.usable[it.Kind] {
			return it.ID, true
		}
	}
	return "", false
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
		case a.OK && what == "door":
			f.report.doors++
		case a.OK && what == "use":
			f.report.uses++
		case a.OK && what == "cast":
			f.report.casts++
		case what == "cast":
			f.report.refused[a.Code]++
		case a.OK:
			f.report.pickups++
		case what == "attack":
			f.report.refused[a.Code]++
		case what == "door":
			f.locked[f.lastDoorSent] = time.Now().Add(giveUpFor) // locked, most likely
		}
	}
	for _, e := range s.Events {
		if e.ID > f.lastEvent {
			f.lastEvent = e.ID
			switch {
			case e.Type == protocol.EventDeath && e.By == s.Self.ID:
				f.report.kills++
			case e.Type == protocol.EventRoomCleared:
				f.report.cleared = f.rooms.cleared(e.Room)
			case e.Type == protocol.EventBossPhase:
				f.report.bossPhase = max(f.report.bossPhase, int(e.Phase))
			}
		}
	}
}
