package sim

import (
	"errors"
	"math"
	"slices"
	"strconv"

	"github.com/roomkeeper/roomkeeper/internal/content"
	"github.com/roomkeeper/roomkeeper/internal/mapgen"
)

// Combat: clients send intent only (attack that entity). The server checks
// the attack when it arrives (Attack) and lands it in the next step's
// combat system (fight) with every NPC attack of that step, in order; a
// target's death is decided once, on the tick its hit points reach 0,
// however many hits it took on that tick: one death event, one kill credit.

// EventDeath is sent when a player or an NPC dies; By is the killer.
const EventDeath = "death"

// Errors of an attack; the room server maps them to protocol codes.
var (
	ErrDead          = errors.New("dead: wait for the respawn")
	ErrCooldown      = errors.New("the attack is still cooling down")
	ErrNotATarget    = errors.New("not something to attack")
	ErrNoLineOfSight = errors.New("a wall is in the way")
)

// combat is the world's fighting state.
type combat struct {
	pack content.Pack
	// types are the pack's enemies, then its boss if it has one.
	types    []content.EnemyType
	tickRate int
	// playerCooldown and playerRespawn are the players' in ticks; the
	// enemies' are in enemyCooldown and enemyRespawn, by type.
	playerCooldown, playerRespawn uint64
	enemyCooldown, enemyRespawn   []uint64
	weights                       int // the enemies' weights, summed
	// attacks are the hits to land in this step, in order.
	attacks []hit
	// respawns are the dead enemies waiting to come back.
	respawns []respawn
}

// hit is one blow of a step; damage, when set (an ability's), is done
// whatever the target's defence.
type hit struct {
	from, to uint32
	damage   int
}

type respawn struct {
	enemy int
	at    uint64
	home  mapgen.Point
}

func newCombat(tun Tunables, cfg mapgen.Config, tickRate int) combat {
	pack := tun.Content
	if len(pack.Enemies) == 0 {
		pack = content.ForMap(cfg.Content, cfg.Biome)
	}
	c := combat{pack: pack, tickRate: tickRate, types: pack.Enemies,
		playerCooldown: ticks(pack.Player.Cooldown, tickRate), playerRespawn: ticks(pack.Player.Respawn, tickRate)}
	for _, e := range pack.Enemies {
		c.enemyCooldown = append(c.enemyCooldown, ticks(e.Cooldown, tickRate))
		c.enemyRespawn = append(c.enemyRespawn, ticks(e.Respawn, tickRate))
		c.weights += e.Weight
	}
	if pack.Boss.Name != "" {
		c.types = append(slices.Clip(pack.Enemies), pack.Boss)
		c.enemyCooldown = append(c.enemyCooldown, ticks(pack.Boss.Cooldown, tickRate))
		c.enemyRespawn = append(c.enemyRespawn, ticks(pack.Boss.Respawn, tickRate))
	}
	return c
}

// ticks is seconds at tickRate, at least one tick for a positive time.
func ticks(seconds float32, tickRate int) uint64 {
	if seconds <= 0 {
		return 0
	}
	return uint64(max(1, math.Round(float64(seconds)*float64(tickRate))))
}

// enemyFor picks the type of the map's i-th NPC spawn by the types'
// weights, the same for the same seed and spawn.
func (c *combat) enemyFor(seed uint64, i int) int {
	r := int(mix(seed, uint64(i), 0x656e656d79) % uint64(c.weights))
	for k, e := range c.pack.Enemies {
		if r -= e.Weight; r < 0 {
			return k
		}
	}
	return len(c.pack.Enemies) - 1
}

// mix hashes its arguments (splitmix64's finalizer over their sum and
// products): the rolls are a function of the seed, the tick and who
// fights whom, so a replay of the same world rolls the same.
func mix(a, b, c uint64) uint64 {
	z := a*0x9e3779b97f4a7c15 + b*0xbf58476d1ce4e5b9 + c*0x94d049bb133111eb + 0x632be59bd9b4e019
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9
	z = (z ^ (z >> 27)) * 0x94d049bb133111eb
	return z ^ (z >> 31)
}

// Damage is what a hit does: the attacker's attack minus the target's
// defence plus the roll, at least 1.
func Damage(attacker, target content.Fighter, roll int) int {
	return max(1, attacker.Attack-target.Defence+roll)
}

// roll is the roll of from's hit on to at tick, 0 to n.
func (w *World) roll(tick uint64, from, to uint32, n int) int {
	return int(mix(uint64(w.static.Config.Seed), tick, uint64(from)<<32|uint64(to)) % uint64(n+1))
}

// Attack checks player's attack on target now and lands it in the next
// step. It fails, changing nothing, when the player is dead or leaving, the
// cooldown runs, or the target is no living NPC within range and sight.
func (w *World) Attack(player, target uint32) error {
	e, p, err := w.livingPlayer(player)
	switch {
	case err != nil:
		return err
	case w.leaving[player]:
		return ErrLeaving
	case w.tick < p.nextAttack:
		return ErrCooldown
	}
	t := w.find(target)
	if t == nil || t.Kind != KindNPC || t.HP == 0 {
		return ErrNotATarget
	}
	if r := w.combat.pack.Player.Range; dist2(e, t) > r*r {
		return ErrOutOfRange
	}
	if !w.lineOfSight(e.X, e.Y, t.X, t.Y) {
		return ErrNoLineOfSight
	}
	p.nextAttack, p.target = w.tick+w.combat.playerCooldown, target
	w.combat.attacks = append(w.combat.attacks, hit{from: player, to: target})
	return nil
}

// npcAttack lands an NPC's hit on its target when the type fights it
// (hostile, or it attacked first), and cooldown, range and sight allow.
func (w *World) npcAttack(e *Entity, n *npcState, kind *content.EnemyType, t *Entity) {
	if !kind.Hostile && n.provokedBy != t.ID {
		return
	}
	if w.tick < n.nextAttack || dist2(e, t) > kind.Range*kind.Range || !w.lineOfSight(e.X, e.Y, t.X, t.Y) {
		return
	}
	n.nextAttack = w.tick + w.enemyCooldown(n, kind)
	w.combat.attacks = append(w.combat.attacks, hit{from: e.ID, to: t.ID})
}

func dist2(a, b *Entity) float32 {
	dx, dy := a.X-b.X, a.Y-b.Y
	return dx*dx + dy*dy
}

// losStep is how far apart the points a line of sight checks are: half a
// walkability cell, so no collider cell is stepped over.
const losStep = mapgen.CellSize / 2

// lineOfSight reports whether no collider or closed door lies between
// the two points.
func (w *World) lineOfSight(x0, y0, x1, y1 float32) bool {
	return LineOfSight(w, x0, y0, x1, y1)
}

// LineOfSight is the sight rule: nothing b blocks lies on the segment
// between the two points, checked every half cell. Clients use it to
// know whether an attack can land.
func LineOfSight(b Blocker, x0, y0, x1, y1 float32) bool {
	dx, dy := x1-x0, y1-y0
	n := int(sqrt32(dx*dx+dy*dy)/losStep) + 1
	for i := 1; i < n; i++ {
		f := float32(i) / float32(n)
		if b.Blocked(float64(x0+dx*f), float64(y0+dy*f)) {
			return false
		}
	}
	return true
}

// fight is the combat system: it lands the step's hits in order, then
// settles the deaths they caused and brings back whoever's wait is over.
func (w *World) fight() {
	for _, h := range w.combat.attacks {
		w.land(h)
	}
	w.combat.attacks = w.combat.attacks[:0]
	w.respawnPlayers()
	w.respawnEnemies()
}

// land applies one hit. A hit on someone already dead, or from someone who
// died earlier in this step, does nothing: a death happens once.
func (w *World) land(h hit) {
	a, t := w.find(h.from), w.find(h.to)
	if a == nil || t == nil || a.HP == 0 || t.HP == 0 {
		return
	}
	attacker := w.fighter(a)
	dmg := h.damage
	if dmg == 0 {
		dmg = Damage(attacker, w.fighter(t), w.roll(w.tick, h.from, h.to, attacker.Roll))
	}
	w.blow(a, t)
	took := uint8(min(dmg, int(t.HP)))
	w.logOnly(Event{Type: EventHit, Tick: w.tick, Entity: t.ID, By: a.ID, X: t.X, Y: t.Y, Damage: took})
	t.HP -= took
	if t.Kind == KindNPC {
		w.provoke(w.npc(t), a)
	}
	if t.HP == 0 {
		w.die(t, a.ID)
	} else if t.Kind == KindNPC {
		w.enterPhase(t, w.npc(t))
	}
}

// fighter is e's stats.
func (w *World) fighter(e *Entity) content.Fighter {
	if e.Kind == KindNPC {
		n := w.npc(e)
		kind := &w.combat.types[n.enemy]
		f := kind.Fighter
		if n.phase > 0 {
			f.Attack = kind.Phases[n.phase-1].Attack
		}
		return w.weaken(f, n)
	}
	f := w.combat.pack.Player
	b := w.player(e).bonus
	f.Attack += b.Attack
	f.Defence += b.Defence
	return f
}

// provoke turns an NPC on the player who hit it, unless it already fights
// back someone nearer.
func (w *World) provoke(n *npcState, attacker *Entity) {
	if n.provokedBy != 0 && n.provokedBy != attacker.ID {
		if cur := w.find(n.provokedBy); cur != nil && cur.HP > 0 {
			e := w.find(n.target)
			if e != nil && dist2(e, cur) <= dist2(e, attacker) {
				return
			}
		}
	}
	n.provokedBy, n.target, n.goingHome = attacker.ID, attacker.ID, false
}

// blow marks the players among a and t as fighting now.
func (w *World) blow(a, t *Entity) {
	for _, e := range [2]*Entity{a, t} {
		if e.Kind == KindPlayer {
			w.player(e).foughtAt = w.tick
		}
	}
}

// die settles a death: the event with its killer; a dead NPC leaves the
// world (to come back later if its type respawns), a dead player stays,
// still, until its respawn.
func (w *World) die(e *Entity, killer uint32) {
	w.emit(Event{Type: EventDeath, Tick: w.tick, Entity: e.ID, X: e.X, Y: e.Y, By: killer})
	if e.Kind == KindPlayer {
		p := w.player(e)
		p.respawnAt = w.tick + max(1, w.combat.playerRespawn)
		p.dirty = true
		return
	}
	id, n := e.ID, *w.npc(e)
	if k := w.find(killer); k != nil && k.Kind == KindPlayer {
		w.train(w.player(k), w.combat.types[n.enemy].XP)
	}
	if after := w.combat.enemyRespawn[n.enemy]; after > 0 {
		home := mapgen.Point{X: int32(n.homeX), Y: int32(n.homeY)}
		w.combat.respawns = append(w.combat.respawns, respawn{enemy: n.enemy, at: w.tick + after, home: home})
	}
	w.guardDied(&n)
	w.dropLoot(e, &n) // spawns an entity: e is not to be used after it
	i, _ := w.index(id)
	w.remove(i)
}

// dropLoot rolls the dead enemy's loot table once (and each shared table
// a line of it names, in turn), from the world's seed, the tick and the
// enemy: at most one item, lying where it died, to be picked up like any
// loot (first pickup wins, committed before its ack).
func (w *World) dropLoot(e *Entity, n *npcState) {
	roll := func(depth int) int {
		return int(mix(uint64(w.static.Config.Seed), w.tick, uint64(e.ID)|(0x64726f70+uint64(depth))<<32) % 1000)
	}
	if kind, ok := w.combat.pack.Pick(w.combat.types[n.enemy].Drops, roll); ok {
		id := w.tun.DropPrefix + strconv.FormatUint(uint64(e.ID), 10) + "-" + strconv.FormatUint(w.tick, 10)
		w.SpawnLoot([]Loot{{Item: Item{ID: id, Kind: kind}, X: e.X, Y: e.Y}})
	}
}

// Content is the map's content pack.
func (w *World) Content() content.Pack { return w.combat.pack }

// respawnPlayers brings dead players whose wait is over back at a spawn
// point with full hit points. It walks the players' table, not every
// entity: a tick with nobody dead costs a glance at each player's row.
func (w *World) respawnPlayers() {
	for i := range w.players.rows {
		p := &w.players.rows[i]
		if p.respawnAt == 0 || w.tick < p.respawnAt {
			continue
		}
		e := w.find(w.players.ids[i])
		s := w.spawnPoint()
		e.X, e.Y, e.HP = float32(s.X), float32(s.Y), w.tun.MaxHP
		p.respawnAt, p.dirty = 0, true
	}
}

// respawnEnemies brings back the dead enemies whose wait is over, as new
// entities at their homes.
func (w *World) respawnEnemies() {
	kept := w.combat.respawns[:0]
	for _, r := range w.combat.respawns {
		if w.tick >= r.at {
			w.spawnNPC(r.enemy, r.home)
		} else {
			kept = append(kept, r)
		}
	}
	w.combat.respawns = kept
}
