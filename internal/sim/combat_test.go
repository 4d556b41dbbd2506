package sim

import (
	"errors"
	"fmt"
	"testing"

	"github.com/roomkeeper/roomkeeper/internal/content"
	"github.com/roomkeeper/roomkeeper/internal/mapgen"
)

// fightWorld is an open map with one NPC of pack's first enemy type (the
// others are removed) and returns the world and the NPC's id.
func fightWorld(t *testing.T, pack string) (*World, uint32) {
	t.Helper()
	p, ok := content.Named(pack)
	if !ok {
		t.Fatalf("no pack %s", pack)
	}
	p.Enemies = p.Enemies[:1]
	tun := Defaults()
	tun.Content = p
	w := NewWorld(testStatic(t, mapgen.Config{Seed: 1, Width: 256, Height: 256, NPCDensity: 0.01}), 30, tun)
	var npc uint32
	for i := len(w.entities) - 1; i >= 0; i-- {
		if w.entities[i].Kind != KindNPC {
			continue
		}
		if npc == 0 {
			npc = w.entities[i].ID
			continue
		}
		w.remove(i)
	}
	if npc == 0 {
		t.Fatal("the map has no NPC")
	}
	return w, npc
}

// besides puts entity id d units east of the player.
func besides(w *World, player, id uint32, d float32) {
	p, e := w.find(player), w.find(id)
	e.X, e.Y = p.X+d, p.Y
}

func deaths(w *World) []Event {
	var out []Event
	for _, e := range w.Frame(64).Events {
		if e.Type == EventDeath {
			out = append(out, e)
		}
	}
	return out
}

func TestAHitDoesTheStatsAndTheRoll(t *testing.T) {
	w, npc := fightWorld(t, "wilds")
	player := w.AddPlayer()
	besides(w, player, npc, 10)
	before := w.find(npc).HP
	if err := w.Attack(player, npc); err != nil {
		t.Fatal(err)
	}
	w.Step()
	pack := w.combat.pack
	want := Damage(pack.Player, pack.Enemies[0].Fighter, w.roll(w.tick, player, npc, pack.Player.Roll))
	if got := int(before - w.find(npc).HP); got != want {
		t.Errorf("the hit took %d hit points, want %d (attack %d, defence %d and the roll)", got, want, pack.Player.Attack, pack.Enemies[0].Defence)
	}
	if err := w.Attack(player, npc); !errors.Is(err, ErrCooldown) {
		t.Errorf("a second attack within the cooldown: %v, want ErrCooldown", err)
	}
}

// Two players kill the same enemy on the same tick: one death, one killer.
func TestASimultaneousKillIsOneDeath(t *testing.T) {
	w, npc := fightWorld(t, "wilds")
	a, b := w.AddPlayer(), w.AddPlayer()
	besides(w, a, npc, 10)
	w.find(b).X, w.find(b).Y = w.find(npc).X-10, w.find(npc).Y
	w.find(npc).HP = 1
	for _, p := range []uint32{a, b} {
		if err := w.Attack(p, npc); err != nil {
			t.Fatal(err)
		}
	}
	w.Step()
	d := deaths(w)
	if len(d) != 1 || d[0].Entity != npc || d[0].By != a {
		t.Fatalf("deaths %+v, want one of %d by %d", d, npc, a)
	}
	if w.find(npc) != nil {
		t.Error("the dead NPC is still in the world")
	}
}

func TestAttacksThatMayNotLand(t *testing.T) {
	w, npc := fightWorld(t, "wilds")
	player := w.AddPlayer()
	besides(w, player, npc, w.combat.pack.Player.Range+1)
	if err := w.Attack(player, npc); !errors.Is(err, ErrOutOfRange) {
		t.Errorf("out of range: %v", err)
	}
	if err := w.Attack(player, player); !errors.Is(err, ErrNotATarget) {
		t.Errorf("attacking oneself: %v", err)
	}
	if err := w.Attack(player, 99999); !errors.Is(err, ErrNotATarget) {
		t.Errorf("attacking nothing: %v", err)
	}
	w.find(player).HP = 0
	besides(w, player, npc, 10)
	if err := w.Attack(player, npc); !errors.Is(err, ErrDead) {
		t.Errorf("attacking while dead: %v", err)
	}
}

// No hit through a wall: a dungeon's collider between the two.
func TestNoAttackThroughAWall(t *testing.T) {
	w, npc := fightWorld(t, "crypt")
	w.static = testStatic(t, mapgen.Config{Seed: 7, Width: 256, Height: 256, Biome: "dungeon"})
	player := w.AddPlayer()
	var c mapgen.Collider
	found := false
	for _, c = range w.static.Colliders {
		if found = c.Rect.X > 16 && c.Rect.X+c.Rect.W < 240 && !w.static.Blocked(float64(c.Rect.X-4), float64(c.Rect.Y)) &&
			!w.static.Blocked(float64(c.Rect.X+c.Rect.W+4), float64(c.Rect.Y)) && c.Rect.W+8 < int32(w.combat.pack.Player.Range); found {
			break
		}
	}
	if !found {
		t.Fatal("the dungeon has no collider thin enough to shoot across")
	}
	p, n := w.find(player), w.find(npc)
	p.X, p.Y = float32(c.Rect.X-4), float32(c.Rect.Y)
	n.X, n.Y = float32(c.Rect.X+c.Rect.W+4), float32(c.Rect.Y)
	if err := w.Attack(player, npc); !errors.Is(err, ErrNoLineOfSight) {
		t.Errorf("through collider %+v: %v, want ErrNoLineOfSight", c, err)
	}
}

// A hostile enemy kills a player who does nothing; the player comes back
// at a spawn point with full hit points after the respawn time.
func TestHostileEnemiesKillAndPlayersRespawn(t *testing.T) {
	w, npc := fightWorld(t, "crypt")
	player := w.AddPlayer()
	besides(w, player, npc, 8)
	var death *Event
	for range 30 * 60 {
		w.Step()
		if d := deaths(w); len(d) > 0 {
			death = &d[0]
			break
		}
	}
	if death == nil || death.Entity != player || death.By != npc {
		t.Fatalf("death %+v, want the player %d killed by %d", death, player, npc)
	}
	if err := w.Attack(player, npc); !errors.Is(err, ErrDead) {
		t.Errorf("the dead attack: %v", err)
	}
	for range ticks(w.combat.pack.Player.Respawn, 30) {
		w.Step()
	}
	if p := w.find(player); p.HP != w.tun.MaxHP {
		t.Errorf("after the respawn time the player has %d hit points, want %d", p.HP, w.tun.MaxHP)
	}
}

// A neutral enemy leaves a player alone until the player hits it, then
// fights back.
func TestNeutralEnemiesFightBackOnly(t *testing.T) {
	w, npc := fightWorld(t, "wilds")
	player := w.AddPlayer()
	besides(w, player, npc, 8)
	for range 90 {
		w.Step()
		besides(w, player, npc, 8)
	}
	if hp := w.find(player).HP; hp != w.tun.MaxHP {
		t.Fatalf("an unprovoked neutral enemy took the player to %d hit points", hp)
	}
	if err := w.Attack(player, npc); err != nil {
		t.Fatal(err)
	}
	for range 90 {
		w.Step()
	}
	if hp := w.find(player).HP; hp == w.tun.MaxHP {
		t.Error("the provoked enemy did not fight back")
	}
}

// An enemy chasing past its leash gives up and walks home.
func TestEnemiesGiveUpPastTheirLeash(t *testing.T) {
	w, npc := fightWorld(t, "wilds")
	player := w.AddPlayer()
	besides(w, player, npc, 8)
	if err := w.Attack(player, npc); err != nil {
		t.Fatal(err)
	}
	w.Step()
	n := w.npc(w.find(npc))
	e := w.find(npc)
	e.X, e.Y = n.homeX+w.combat.pack.Enemies[0].LeashRadius+1, n.homeY
	w.Step()
	if n = w.npc(w.find(npc)); n.target != 0 || !n.goingHome {
		t.Errorf("past its leash the enemy still chases: %+v", n)
	}
}

// A kill rolls the enemy's loot table once: with a sure drop, one item
// lies where it died, with a fresh id, and its pickup names the taker.
func TestAKillDropsFromTheLootTable(t *testing.T) {
	p, _ := content.Named("wilds")
	p.Enemies = []content.EnemyType{p.Enemies[0]}
	p.Enemies[0].Drops = []content.Drop{{Kind: "trophy", PerMille: 1000}}
	tun := Defaults()
	tun.Content, tun.DropPrefix = p, "test/drop/"
	w := NewWorld(testStatic(t, mapgen.Config{Seed: 1, Width: 256, Height: 256, NPCDensity: 0.01}), 30, tun)
	var npc *Entity
	for i := range w.entities {
		if w.entities[i].Kind == KindNPC {
			npc = &w.entities[i]
			break
		}
	}
	a, b := w.AddPlayer(), w.AddPlayer()
	npc = w.find(npc.ID)
	id, x, y := npc.ID, npc.X, npc.Y
	npc.HP = 1
	for _, player := range []uint32{a, b} {
		pe := w.find(player)
		pe.X, pe.Y = x+5, y
		if err := w.Attack(player, id); err != nil {
			t.Fatal(err)
		}
	}
	w.Step()
	d := deaths(w) // it may have stepped before it died: the drop lies where it fell
	if len(d) != 1 {
		t.Fatalf("deaths %+v, want one", d)
	}
	x, y = d[0].X, d[0].Y
	var drops []uint32
	var item Item
	for i := range w.entities {
		if e := &w.entities[i]; e.Kind == KindLoot {
			l := w.loot.rows[e.slot]
			if l.item.Kind == "trophy" && e.X == x && e.Y == y {
				drops, item = append(drops, e.ID), l.item
			}
		}
	}
	if len(drops) != 1 || item.ID != fmt.Sprintf("test/drop/%d-%d", id, w.tick) {
		t.Fatalf("drops %v (item %+v), want one trophy where NPC %d died", drops, item, id)
	}
	got, err := w.ReserveLoot(b, drops[0], 24)
	if err != nil || got != item {
		t.Fatalf("picking the drop up: %+v, %v", got, err)
	}
	w.CompletePickup(b, drops[0])
	for _, ev := range w.Frame(64).Events {
		if ev.Type == EventLootRemoved && (ev.Entity != drops[0] || ev.By != b) {
			t.Errorf("loot_removed %+v, want entity %d by %d", ev, drops[0], b)
		}
	}
}

// A player who leaves mid-fight (its seat released) takes nothing with it:
// its enemy stops fighting, no death is made of it, and the enemy fights
// whoever else is near.
func TestAnEnemyLetsGoOfAPlayerWhoLeft(t *testing.T) {
	w, npc := fightWorld(t, "crypt")
	gone, stays := w.AddPlayer(), w.AddPlayer()
	besides(w, gone, npc, 8)
	w.find(stays).X, w.find(stays).Y = w.find(gone).X+40, w.find(gone).Y
	for range 30 {
		w.Step()
		if w.npc(w.find(npc)).target == gone {
			break
		}
	}
	if w.npc(w.find(npc)).target != gone {
		t.Fatal("the enemy never took on the player next to it")
	}
	w.RemovePlayer(gone)
	hp := w.find(stays).HP
	for range 30 * 20 {
		w.Step()
		for _, d := range deaths(w) {
			if d.Entity == gone {
				t.Fatalf("a death of the player who left: %+v", d)
			}
		}
		if w.find(stays).HP < hp {
			return // it turned on the other player
		}
	}
	if n := w.npc(w.find(npc)); n.target == gone {
		t.Errorf("the enemy still chases the player who left: %+v", n)
	}
}

// A map's config names its content pack; without a name it is its biome's.
func TestTheMapConfigNamesTheContentPack(t *testing.T) {
	named := NewWorld(testStatic(t, mapgen.Config{Seed: 1, Width: 64, Height: 64, Content: "crypt"}), 30, Defaults())
	byBiome := NewWorld(testStatic(t, mapgen.Config{Seed: 1, Width: 64, Height: 64}), 30, Defaults())
	if named.Content().Name != "crypt" || byBiome.Content().Name != "wilds" {
		t.Errorf("packs %s and %s, want crypt (named) and wilds (the meadow's)", named.Content().Name, byBiome.Content().Name)
	}
}

// A player saved while dead comes back at once, with full hit points.
func TestAPlayerSavedDeadComesBack(t *testing.T) {
	static := testStatic(t, mapgen.Config{Seed: 1, Width: 256, Height: 256})
	w := NewWorld(static, 30, Defaults())
	id := w.JoinPlayer(PlayerSpec{Tag: "c", Restore: true, X: float32(static.PlayerSpawn.X), Y: float32(static.PlayerSpawn.Y), HP: 0})
	w.Step()
	if hp := w.find(id).HP; hp != w.tun.MaxHP {
		t.Errorf("a player saved dead has %d hit points after a step, want %d", hp, w.tun.MaxHP)
	}
}
