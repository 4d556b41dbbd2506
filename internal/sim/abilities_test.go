package sim

import (
	"errors"
	"testing"
)

// TestAFireboltCostsManaCoolsDownAndHits: an enemy ability does its
// damage whatever the defence, costs its mana, and cannot be cast again
// before its cooldown, nor without the mana; a refusal changes nothing.
func TestAFireboltCostsManaCoolsDownAndHits(t *testing.T) {
	w, npc := fightWorld(t, "crypt")
	player := w.AddPlayer()
	besides(w, player, npc, 60) // out of a plain attack's reach, inside the bolt's
	before := w.find(npc).HP
	if err := w.Cast(player, "firebolt", npc); err != nil {
		t.Fatal(err)
	}
	w.Step()
	if got := before - w.find(npc).HP; got != 20 {
		t.Errorf("the bolt took %d hit points, want its 20", got)
	}
	if o := w.Owned(player); o.Resources.Mana != 80 || len(o.Abilities) != 1 || o.Abilities[0].Name != "firebolt" {
		t.Errorf("after a bolt: %+v, %+v: want 80 mana and the bolt cooling down", o.Resources, o.Abilities)
	}
	if err := w.Cast(player, "firebolt", npc); !errors.Is(err, ErrAbilityOnCooldown) {
		t.Errorf("a bolt within the cooldown: %v", err)
	}
	for _, bad := range []struct {
		name   string
		target uint32
		want   error
	}{{"meteor", npc, ErrNoAbility}, {"second wind", 0, nil}} {
		if err := w.Cast(player, bad.name, bad.target); !errors.Is(err, bad.want) {
			t.Errorf("%s: %v, want %v", bad.name, err, bad.want)
		}
	}
	w.find(player).HP = 0
	if err := w.Cast(player, "battle cry", 0); !errors.Is(err, ErrDead) {
		t.Errorf("a dead player's cast: %v", err)
	}
}

// TestPoolsRunOutAndComeBack: casts stop when the pool is empty, and the
// pool refills each second up to its most.
func TestPoolsRunOutAndComeBack(t *testing.T) {
	w, npc := fightWorld(t, "crypt")
	player := w.AddPlayer()
	besides(w, player, npc, 60)
	p := w.player(w.find(player))
	p.mana = 19
	if err := w.Cast(player, "firebolt", npc); !errors.Is(err, ErrNotEnoughMana) {
		t.Fatalf("a bolt with 19 mana: %v", err)
	}
	p.stamina = 10
	if err := w.Cast(player, "second wind", 0); !errors.Is(err, ErrNotEnoughStamina) {
		t.Fatalf("a second wind with 10 stamina: %v", err)
	}
	for range 30 { // a second at 30 Hz
		w.Step()
	}
	if o := w.Owned(player); o.Resources.Mana != 21 || o.Resources.Stamina != 15 {
		t.Errorf("after a second: %+v, want 21 mana and 15 stamina", o.Resources)
	}
	if err := w.Cast(player, "firebolt", npc); err != nil {
		t.Errorf("a bolt with 21 mana: %v", err)
	}
	p.mana = 99.5
	for range 90 {
		w.Step()
	}
	if o := w.Owned(player); o.Resources.Mana != 100 || o.Resources.ManaMax != 100 {
		t.Errorf("refilled: %+v, want 100 of 100", o.Resources)
	}
}

// TestABuffAddsToTheFightAndEnds: a battle cry adds its attack for its
// duration, then is gone; a second wind heals, up to full.
func TestABuffAddsToTheFightAndEnds(t *testing.T) {
	w, _ := fightWorld(t, "crypt")
	player := w.AddPlayer()
	e := w.find(player)
	base := w.fighter(e).Attack
	if err := w.Cast(player, "battle cry", 0); err != nil {
		t.Fatal(err)
	}
	if got := w.fighter(e).Attack; got != base+5 {
		t.Errorf("attack under the battle cry %d, want %d", got, base+5)
	}
	if o := w.Owned(player); len(o.Buffs) != 1 || o.Buffs[0].Ability != "battle cry" || o.Buffs[0].Attack != 5 {
		t.Errorf("buffs %+v", o.Buffs)
	}
	for range 10 * 30 {
		w.Step()
	}
	if got, o := w.fighter(e).Attack, w.Owned(player); got != base || len(o.Buffs) != 0 {
		t.Errorf("after 10 s: attack %d, buffs %+v: want %d and none", got, o.Buffs, base)
	}
	e.HP = 90
	if err := w.Cast(player, "second wind", 0); err != nil {
		t.Fatal(err)
	}
	if e.HP != w.tun.MaxHP {
		t.Errorf("hit points after a second wind from 90: %d, want full %d", e.HP, w.tun.MaxHP)
	}
}

// TestACurseWeakensItsTargetAndShows: an enemy ability's debuff takes its
// attack and defence off the target (never below 0) for its duration,
// does no damage of its own, turns a neutral enemy on the caster, and
// shows in everyone's view as the weakened bit, as a buff shows as the
// strengthened bit; both end with their time.
func TestACurseWeakensItsTargetAndShows(t *testing.T) {
	w, npc := fightWorld(t, "wilds")
	player := w.AddPlayer()
	besides(w, player, npc, 60)
	n := w.find(npc)
	before, hp := w.fighter(n), n.HP
	if err := w.Cast(player, "curse", npc); err != nil {
		t.Fatal(err)
	}
	w.Step()
	cursed := w.fighter(n)
	if want := max(0, before.Attack-4); cursed.Attack != want || cursed.Defence != max(0, before.Defence-2) {
		t.Errorf("cursed stats %+v from %+v, want attack %d and defence %d", cursed, before, want, max(0, before.Defence-2))
	}
	if n.HP != hp {
		t.Errorf("the curse took %d hit points, want none", hp-n.HP)
	}
	if got := w.npc(n).provokedBy; got != player {
		t.Errorf("the cursed enemy fights back %d, want the caster %d", got, player)
	}
	if err := w.Cast(player, "battle cry", 0); err != nil {
		t.Fatal(err)
	}
	if v := w.view(n); v.State&StateWeakened == 0 || v.State&^(StateWeakened|StateStrengthened) > StateReturning {
		t.Errorf("a cursed enemy's state %#x, want the weakened bit over its combat state", v.State)
	}
	if v := w.view(w.find(player)); v.State&StateStrengthened == 0 || v.State&StateWeakened != 0 {
		t.Errorf("a player under a battle cry: state %#x, want the strengthened bit only", v.State)
	}
	for range 10 * 30 {
		w.Step()
	}
	if got := w.fighter(n); got != before {
		t.Errorf("after the curse's 6 s: %+v, want %+v", got, before)
	}
	if v, p := w.view(n), w.view(w.find(player)); v.State&StateWeakened != 0 || p.State&StateStrengthened != 0 {
		t.Errorf("after both ended: states %#x and %#x, want no effect bits", v.State, p.State)
	}
}
