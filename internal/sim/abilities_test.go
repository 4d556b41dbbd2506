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

// TestACharacterKeepsItsPoolsCooldownsAndBuffs: what a player spent, its
// cooldowns and its buffs go with its record to the next map or session,
// and run on while it is away: a quick crossing readies nothing early, a
// long absence refills and readies everything. What is restored is held
// to the pack's bounds.
func TestACharacterKeepsItsPoolsCooldownsAndBuffs(t *testing.T) {
	w, npc := fightWorld(t, "crypt")
	player := w.JoinPlayer(PlayerSpec{Tag: "caster"})
	besides(w, player, npc, 60)
	for _, a := range []string{"firebolt", "battle cry"} {
		if err := w.Cast(player, a, npc); err != nil {
			t.Fatal(a, err)
		}
	}
	rec, ok := w.Record(player)
	if !ok || rec.Abilities == nil {
		t.Fatalf("no ability record: %+v", rec)
	}
	if r := rec.Abilities; r.Mana != 80 || r.Stamina != 70 || r.Cooldowns["firebolt"] != 3 || r.Cooldowns["battle cry"] != 30 || r.Buffs["battle cry"] != 10 {
		t.Fatalf("record after a bolt and a battle cry: %+v", r)
	}

	other, _ := fightWorld(t, "crypt")
	quick := other.JoinPlayer(PlayerSpec{Tag: "a", Abilities: rec.Abilities, Away: 0.5})
	o := other.Owned(quick)
	if o.Resources.Mana != 80 || o.Resources.Stamina != 70 || len(o.Buffs) != 1 || len(o.Abilities) != 2 {
		t.Errorf("half a second later on another map: %+v, buffs %+v, cooling %+v", o.Resources, o.Buffs, o.Abilities)
	}
	if err := other.Cast(quick, "battle cry", 0); !errors.Is(err, ErrAbilityOnCooldown) {
		t.Errorf("a battle cry again after a crossing: %v, want the cooldown kept", err)
	}
	if got, want := other.fighter(other.find(quick)).Attack, other.combat.pack.Player.Attack+5; got != want {
		t.Errorf("attack after the crossing %d, want the buff kept: %d", got, want)
	}

	later := other.JoinPlayer(PlayerSpec{Tag: "b", Abilities: rec.Abilities, Away: 12})
	if o := other.Owned(later); o.Resources.Mana != 100 || o.Resources.Stamina != 100 || len(o.Buffs) != 0 || len(o.Abilities) != 1 || o.Abilities[0].Name != "battle cry" {
		t.Errorf("12 s later: %+v, buffs %+v, cooling %+v: want full pools, no buff, the battle cry cooling", o.Resources, o.Buffs, o.Abilities)
	}

	forged := &AbilityRecord{Mana: 1e9, Stamina: -5, Cooldowns: map[string]float32{"firebolt": 1e6}, Buffs: map[string]float32{"second wind": 50}}
	f := other.JoinPlayer(PlayerSpec{Tag: "c", Abilities: forged})
	p := other.player(other.find(f))
	if o := other.Owned(f); o.Resources.Mana != 100 || o.Resources.Stamina != 0 || len(o.Buffs) != 0 {
		t.Errorf("a forged record: %+v, buffs %+v: want it held to the pack", o.Resources, o.Buffs)
	}
	if i := 0; p.abilityReady[i] > other.tick+uint64(3*other.combat.tickRate) {
		t.Errorf("a forged firebolt cooldown of %d ticks, want at most the pack's 3 s", p.abilityReady[i]-other.tick)
	}
}
