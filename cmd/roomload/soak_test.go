package main

import (
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	gamev1 "github.com/roomkeeper/roomkeeper/api/v1"
	"github.com/roomkeeper/roomkeeper/internal/content"
	"github.com/roomkeeper/roomkeeper/internal/playtest"
	"github.com/roomkeeper/roomkeeper/internal/podenv"
	"github.com/roomkeeper/roomkeeper/internal/protocol"
	"github.com/roomkeeper/roomkeeper/internal/store"
)

func TestSoakFlagsAreChecked(t *testing.T) {
	for _, args := range [][]string{
		{"--rooms", "0"}, {"--bots", "-1"}, {"--duration", "0s"}, {"--rate", "0"},
		{"--chaos-min", "10s", "--chaos-max", "5s"}, {"--chaos-min", "0s"}, {"--tick-rate", "-10"},
	} {
		if _, err := parseSoak(args); err == nil {
			t.Errorf("%v was taken", args)
		}
	}
	cfg, err := parseSoak([]string{"--join-api", "http://127.0.0.1:9", "--rooms", "2", "--tick-rate", "10"})
	if err != nil || cfg.rooms != 2 || cfg.api.URL != "http://127.0.0.1:9" || cfg.tickRate != 10 {
		t.Fatalf("parse: %+v %v", cfg, err)
	}
}

func TestGainedIsTheNewItem(t *testing.T) {
	before := []protocol.ItemView{{ID: "a"}, {ID: "b", Slot: "weapon"}}
	if got := gained(before, []protocol.ItemView{{ID: "a"}, {ID: "c"}, {ID: "b", Slot: "weapon"}}); got != "c" {
		t.Errorf("gained %q, want c", got)
	}
	if got := gained(nil, []protocol.ItemView{{ID: "a"}}); got != "a" {
		t.Errorf("from nothing: gained %q, want a", got)
	}
	// Two views of before (a stale channel and the newest ack) that
	// overlap: an item either held is not the new one.
	stale := append(slices.Clone(before), protocol.ItemView{ID: "c"})
	if got := gained(stale, []protocol.ItemView{{ID: "a"}, {ID: "c"}}); got != "" {
		t.Errorf("gained %q, want nothing: c was held", got)
	}
	inv := &protocol.Inventory{Items: before}
	if got := bagItem(inv); got != "a" {
		t.Errorf("bag item %q, want a (b is worn)", got)
	}
	if got := bagItem(nil); got != "" {
		t.Errorf("bag item of nothing %q", got)
	}
}

func TestWearableIsABagItemThePackLetsBeWorn(t *testing.T) {
	pack := content.ForBiome("")
	inv := &protocol.Inventory{Items: []protocol.ItemView{
		{ID: "1", Kind: "potion"}, {ID: "2", Kind: "sword", Slot: "weapon"}, {ID: "3", Kind: "sword"},
	}}
	if item, slot := wearable(&pack, inv); item != "3" || slot != "weapon" {
		t.Errorf("wearable = %q %q, want the sword in the bag, as weapon", item, slot)
	}
	inv.Items = inv.Items[:2]
	if item, _ := wearable(&pack, inv); item != "" {
		t.Errorf("wearable = %q: a potion is not worn, the other sword is worn already", item)
	}
}

func TestPacerKeepsItsRateWithoutBursts(t *testing.T) {
	start := time.Unix(1000, 0)
	p := newPacer(time.Second, 300*time.Millisecond, start)
	if d := p.wait(start); d != 300*time.Millisecond {
		t.Errorf("first wait %s, want the offset", d)
	}
	now := start.Add(300 * time.Millisecond)
	// An action that takes 400 ms: the next comes one interval after the
	// last began.
	now = now.Add(400 * time.Millisecond)
	if d := p.wait(now); d != 600*time.Millisecond {
		t.Errorf("wait after a 400 ms action %s, want 600ms", d)
	}
	// Slightly late (an action longer than the interval): no wait, and
	// the schedule holds.
	now = start.Add(1300*time.Millisecond + 1500*time.Millisecond)
	if d := p.wait(now); d != 0 {
		t.Errorf("late by less than an interval: wait %s, want 0", d)
	}
	// Ten seconds behind (the map was down): one action now, then the
	// interval again, not ten at once.
	now = now.Add(10 * time.Second)
	if d := p.wait(now); d != 0 {
		t.Errorf("far behind: wait %s, want 0", d)
	}
	if d := p.wait(now); d != time.Second {
		t.Errorf("after falling behind: wait %s, want one interval (no catching up)", d)
	}
}

func TestPercentiles(t *testing.T) {
	var l []time.Duration
	for i := 1; i <= 100; i++ {
		l = append(l, time.Duration(i)*time.Millisecond)
	}
	for _, c := range []struct {
		p    float64
		want time.Duration
	}{{0.5, 51 * time.Millisecond}, {0.99, 100 * time.Millisecond}, {1, 100 * time.Millisecond}, {0, time.Millisecond}} {
		if got := playtest.Percentile(l, c.p); got != c.want {
			t.Errorf("p%v of 1..100 ms = %s, want %s", c.p*100, got, c.want)
		}
	}
	if playtest.Percentile(nil, 0.5) != 0 || playtest.Percentile([]time.Duration{7 * time.Millisecond}, 0.99) != 7*time.Millisecond {
		t.Error("percentiles of no or one sample")
	}
}

// acked, unanswered and refusal are fabricated actions of character c.
func acked(c, kind, item string) action {
	return action{character: c, kind: kind, item: item, ok: true}
}
func unanswered(c, kind string) action { return action{character: c, kind: kind, code: codeNoAck} }
func refusal(c, kind string) action {
	return action{character: c, kind: kind, code: protocol.CodePersistenceUnavailable}
}

func ev(seq int64, c, kind, item string) eventRow {
	return eventRow{seq: seq, id: "e" + string(rune('a'+seq)), character: c, kind: kind, item: item}
}

func TestExactlyOnce(t *testing.T) {
	// Picked up, dropped and picked up again: three actions, three rows.
	again := []action{acked("c1", kindPickup, "x"), acked("c1", kindDrop, "x"), acked("c1", kindPickup, "x"), acked("c1", kindAttack, "")}
	againRows := []eventRow{ev(1, "c1", kindPickup, "x"), ev(2, "c1", kindDrop, "x"), ev(3, "c1", kindPickup, "x")}
	for _, c := range []struct {
		name    string
		actions []action
		events  []eventRow
		want    []string // substrings, one per violation
	}{
		{"picked up, dropped, picked up again", again, againRows, nil},
		{"a pickup lost", again, againRows[:2], []string{"2 loot.pickup acknowledged, 1 in critical_events: lost", "2 loot.pickup of x acknowledged, 1"}},
		{"a pickup doubled", again, append(againRows, ev(4, "c1", kindPickup, "x")),
			[]string{"3 loot.pickup in critical_events, more than the 2 acknowledged and 0 unanswered", "3 loot.pickup of x in"}},
		// x dropped and picked up again before the player's view showed the
		// drop: the second pickup's ack gained nothing new to it.
		{"a pickup acknowledged without its item", append(again[:3:3], acked("c1", kindPickup, "")),
			append(againRows[:3:3], ev(4, "c1", kindPickup, "x")), nil},
		{"an unnamed pickup is still one pickup", append(again[:3:3], acked("c1", kindPickup, "")),
			append(againRows[:3:3], ev(4, "c1", kindPickup, "x"), ev(5, "c1", kindPickup, "x")),
			[]string{"4 loot.pickup in critical_events, more than the 3 acknowledged and 0 unanswered", "4 loot.pickup of x in critical_events, more than the 2 acknowledged and 1 unanswered or unnamed"}},
		{"an unanswered pickup may have committed", append(again, unanswered("c1", kindPickup)), append(againRows, ev(4, "c1", kindPickup, "y")), nil},
		{"an unanswered pickup may not have", append(again, unanswered("c1", kindPickup)), againRows, nil},
		{"a refusal commits nothing", append(again, refusal("c1", kindDrop)), append(againRows, ev(4, "c1", kindDrop, "x")),
			[]string{"2 inventory.drop in critical_events, more than the 1 acknowledged", "2 inventory.drop of x in"}},
		{"another character's event", []action{acked("c1", kindEquip, "s")}, []eventRow{ev(1, "c2", kindEquip, "s")},
			[]string{"character c1: 1 inventory.equip acknowledged, 0", "character c1: 1 inventory.equip of s acknowledged, 0",
				"character c2: 1 inventory.equip in critical_events, more than the 0", "character c2: 1 inventory.equip of s in"}},
		{"an event id twice", []action{acked("c1", kindEquip, "s")}, []eventRow{ev(1, "c1", kindEquip, "s"), ev(1, "c1", kindEquip, "s")},
			[]string{"event eb is in critical_events twice", "2 inventory.equip in", "2 inventory.equip of s in"}},
		// The player's view had s in the slot; an equip of t whose ack was
		// lost had put t there, and the unequip took t off.
		{"an unequip takes off what the slot holds", []action{unanswered("c1", kindEquip), acked("c1", kindUnequip, "s")},
			[]eventRow{ev(1, "c1", kindEquip, "t"), ev(2, "c1", kindUnequip, "t")}, nil},
		{"an unequip lost", []action{acked("c1", kindUnequip, ""), acked("c1", kindUnequip, "")}, []eventRow{ev(1, "c1", kindUnequip, "t")},
			[]string{"2 inventory.unequip acknowledged, 1 in critical_events: lost"}},
	} {
		t.Run(c.name, func(t *testing.T) { wantViolations(t, checkExactlyOnce(c.actions, c.events), c.want) })
	}
}

func TestItemHistory(t *testing.T) {
	owned := func(item, owner string) ownerRow {
		return ownerRow{item: item, ownerKind: store.OwnerCharacter, owner: owner}
	}
	ground := ownerRow{item: "x", ownerKind: store.OwnerMap, owner: "soak-0-town"}
	for _, c := range []struct {
		name   string
		events []eventRow
		owners []ownerRow
		want   []string
	}{
		{"handed on through the ground", []eventRow{ev(1, "c1", kindPickup, "x"), ev(2, "c1", kindEquip, "x"), ev(3, "c1", kindDrop, "x"), ev(4, "c2", kindPickup, "x")},
			[]ownerRow{owned("x", "c2")}, nil},
		{"out of order in the slice, in order by seq", []eventRow{ev(2, "c2", kindPickup, "x"), ev(1, "c1", kindDrop, "x")},
			[]ownerRow{owned("x", "c2")}, nil},
		{"picked up twice", []eventRow{ev(1, "c1", kindPickup, "x"), ev(2, "c2", kindPickup, "x")},
			[]ownerRow{owned("x", "c2")}, []string{"item x: picked up by c2 (event seq 2) while c1 held it"}},
		{"dropped by another", []eventRow{ev(1, "c1", kindPickup, "x"), ev(2, "c2", kindDrop, "x")},
			[]ownerRow{ground}, []string{`item x: inventory.drop by c2 (event seq 2) while "c1" held it`}},
		{"a recovery lays it on the ground", []eventRow{ev(1, "c1", kindPickup, "x"), ev(2, "c1", store.EventRecovered, "x"), ev(3, "c2", kindPickup, "x")},
			[]ownerRow{owned("x", "c2")}, nil},
		{"the database disagrees", []eventRow{ev(1, "c1", kindPickup, "x"), ev(2, "c1", kindDrop, "x"), ev(3, "c2", kindPickup, "y")},
			[]ownerRow{owned("x", "c1"), owned("y", "c1")},
			[]string{"item x: the events leave it on the ground, item_ownership with c1", `item y: the events leave it with c2, item_ownership with character "c1"`}},
		{"destroyed since", []eventRow{ev(1, "c1", kindPickup, "x")}, []ownerRow{{item: "x", ownerKind: store.OwnerDestroyed}}, nil},
	} {
		t.Run(c.name, func(t *testing.T) { wantViolations(t, checkItemHistory(c.events, c.owners), c.want) })
	}
}

func TestViewsAgainstOwnership(t *testing.T) {
	owns := func(item, owner, slot string) ownerRow {
		return ownerRow{item: item, ownerKind: store.OwnerCharacter, owner: owner, slot: slot}
	}
	views := map[string][]protocol.ItemView{
		"c1": {{ID: "a"}, {ID: "s", Slot: "weapon"}},
		"c2": nil,
	}
	wantViolations(t, checkViews(views, []ownerRow{owns("a", "c1", ""), owns("s", "c1", "weapon")}), nil)
	wantViolations(t, checkViews(views, []ownerRow{owns("a", "c1", ""), owns("s", "c1", "")}),
		[]string{"character c1: its player sees map[a: s:weapon], item_ownership says map[a: s:]"})
	wantViolations(t, checkViews(views, []ownerRow{owns("a", "c1", ""), owns("s", "c1", "weapon"), owns("b", "c2", "")}),
		[]string{"character c2: its player sees map[], item_ownership says map[b:]"})
	views["c2"] = []protocol.ItemView{{ID: "a"}}
	wantViolations(t, checkViews(views, []ownerRow{owns("a", "c1", ""), owns("s", "c1", "weapon"), owns("a", "c2", "")}),
		[]string{"item a has two rows", "item a is in the views of c1 and c2"})
}

func TestLeasesFollowThePlayers(t *testing.T) {
	where := map[string]string{"c1": "soak-0-town", "c2": "soak-0-forest"}
	wantViolations(t, checkLeases(where, []leaseRow{{character: "c1", instance: "soak-0-town"}, {character: "c2", instance: "soak-0-forest"}}), nil)
	wantViolations(t, checkLeases(where, []leaseRow{{character: "c1", instance: "soak-0-forest"}, {character: "c2", instance: "soak-0-forest", inTransfer: true}}),
		[]string{"character c1: lease on soak-0-forest (in transfer: false), its player plays on soak-0-town", "character c2: lease on soak-0-forest (in transfer: true)"})
	wantViolations(t, checkLeases(where, []leaseRow{{character: "c1", instance: "soak-0-town"}, {character: "c1", instance: "soak-1-town"}}),
		[]string{"character c1: lease on soak-1-town", "character c1 holds leases on two maps"})
}

// wantViolations checks that got has one violation per want, each
// containing its want, in any order.
func wantViolations(t *testing.T, got, want []string) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%d violations, want %d:\n  %s", len(got), len(want), strings.Join(got, "\n  "))
	}
	for _, w := range want {
		found := false
		for _, g := range got {
			found = found || strings.Contains(g, w)
		}
		if !found {
			t.Errorf("no violation says %q; got:\n  %s", w, strings.Join(got, "\n  "))
		}
	}
}

func TestSoakReportSaysWhatHappened(t *testing.T) {
	r := &soakReport{cfg: soakConfig{rooms: 1, bots: 2, rate: 4}, played: 10 * time.Second, unsent: 3,
		actions: []action{
			{kind: kindPickup, ok: true, latency: 2 * time.Millisecond},
			{kind: kindPickup, code: protocol.CodePersistenceUnavailable},
		},
		faults: []fault{{kind: "restart-postgres", target: ".dev/pg", recovery: 3 * time.Second}}}
	var b strings.Builder
	r.print(&b)
	for _, want := range []string{"0.2 actions/s (target 4.0)", "loot.pickup", "persistence_unavailable:1", "not sent (the client was reconnecting): 3",
		"restart-postgres", "recovered in 3s", "invariants: all held"} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("summary lacks %q:\n%s", want, b.String())
		}
	}
	r.violate("lost %s", "x")
	b.Reset()
	r.print(&b)
	if !strings.Contains(b.String(), "VIOLATION: lost x") {
		t.Errorf("summary without the violation:\n%s", b.String())
	}
	if hostPort("http://127.0.0.1:8090/v1") != "127.0.0.1:8090" {
		t.Error("hostPort")
	}
	if flagValue("bin/roomserver --instance=soak-0-town --listen=127.0.10.3:7350 ", podenv.FlagListen) != "127.0.10.3:7350" {
		t.Error("flagValue")
	}
}

// TestTheSummaryTellsTheFaultsAcksApart: an ack sent while a fault was
// unrecovered (or one that never recovered) counts in the run's
// percentiles but not in those outside the faults.
func TestTheSummaryTellsTheFaultsAcksApart(t *testing.T) {
	start := time.Date(2026, 12, 5, 2, 0, 0, 0, time.UTC)
	at := func(s int) time.Time { return start.Add(time.Duration(s) * time.Second) }
	r := &soakReport{cfg: soakConfig{rooms: 1, bots: 1, rate: 1}, played: time.Minute,
		actions: []action{
			{kind: kindPickup, ok: true, sent: at(1), latency: 2 * time.Millisecond},
			{kind: kindPickup, ok: true, sent: at(11), latency: 900 * time.Millisecond},
			{kind: kindPickup, ok: true, sent: at(20), latency: 3 * time.Millisecond},
			{kind: kindPickup, ok: true, sent: at(41), latency: 800 * time.Millisecond},
		},
		faults: []fault{
			{kind: "restart-postgres", at: at(10), recovery: 5 * time.Second},
			{kind: "kill-room-server", at: at(40), err: errors.New("not Ready")},
		}}
	var b strings.Builder
	r.print(&b)
	want := "loot.pickup           4 ok  ack p50 800ms  p99 900ms;      2 sent outside the faults: p50 3ms  p99 3ms"
	if !strings.Contains(b.String(), want) {
		t.Errorf("summary lacks %q:\n%s", want, b.String())
	}
}

// TestAWorldSetBackIsNamed: a world behind the one noted before a fault
// (its tick, its cleared rooms, its boss healed or back a phase) is a
// violation; one further on, or whose boss died meanwhile, is not.
func TestAWorldSetBackIsNamed(t *testing.T) {
	was := gamev1.WorldCheckpoint{Tick: 900, RoomsCleared: 2, BossPhase: 2, BossHP: 120}
	for _, ok := range []gamev1.WorldCheckpoint{
		was,
		{Tick: 1200, RoomsCleared: 3, BossPhase: 3, BossHP: 40},
		{Tick: 1200, RoomsCleared: 4}, // the boss died
	} {
		if back := worldSetBack(was, ok); len(back) > 0 {
			t.Errorf("%+v after %+v: %v, want nothing set back", ok, was, back)
		}
	}
	for _, bad := range []gamev1.WorldCheckpoint{
		{Tick: 30, RoomsCleared: 2, BossPhase: 2, BossHP: 120},   // the world started afresh
		{Tick: 1000, RoomsCleared: 1, BossPhase: 2, BossHP: 120}, // a room guarded again
		{Tick: 1000, RoomsCleared: 2, BossPhase: 1, BossHP: 200}, // the boss healed
	} {
		if back := worldSetBack(was, bad); len(back) != 1 {
			t.Errorf("%+v after %+v: %v, want one thing set back", bad, was, back)
		}
	}
}
