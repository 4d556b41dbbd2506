package main

import (
	"strings"
	"testing"
	"time"

	"github.com/roomkeeper/roomkeeper/internal/protocol"
)

func TestSoakFlagsAreChecked(t *testing.T) {
	for _, args := range [][]string{
		{"--rooms", "0"}, {"--bots", "-1"}, {"--duration", "0s"}, {"--rate", "0"},
		{"--chaos-min", "10s", "--chaos-max", "5s"}, {"--chaos-min", "0s"},
	} {
		if _, err := parseSoak(args); err == nil {
			t.Errorf("%v was taken", args)
		}
	}
	cfg, err := parseSoak([]string{"--join-api", "http://127.0.0.1:9", "--rooms", "2"})
	if err != nil || cfg.rooms != 2 || cfg.api.url != "http://127.0.0.1:9" {
		t.Fatalf("parse: %+v %v", cfg, err)
	}
}

func TestGainedIsTheNewItem(t *testing.T) {
	before := &protocol.Inventory{Items: []protocol.ItemView{{ID: "a"}, {ID: "b", Slot: "weapon"}}}
	if got := gained(before, []protocol.ItemView{{ID: "a"}, {ID: "c"}, {ID: "b", Slot: "weapon"}}); got != "c" {
		t.Errorf("gained %q, want c", got)
	}
	if got := gained(nil, []protocol.ItemView{{ID: "a"}}); got != "a" {
		t.Errorf("from nothing: gained %q, want a", got)
	}
	if got := bagItem(before); got != "a" {
		t.Errorf("bag item %q, want a (b is worn)", got)
	}
}

func TestSoakReportSaysWhatHappened(t *testing.T) {
	r := &soakReport{cfg: soakConfig{rooms: 1, bots: 2, rate: 4}, played: 10 * time.Second,
		actions: []action{
			{kind: "loot.pickup", ok: true, latency: 2 * time.Millisecond},
			{kind: "loot.pickup", code: protocol.CodePersistenceUnavailable},
		},
		faults: []fault{{kind: "restart-postgres", target: ".dev/pg", recovery: 3 * time.Second}}}
	var b strings.Builder
	r.print(&b)
	for _, want := range []string{"0.2 actions/s (target 4.0)", "loot.pickup", "persistence_unavailable:1", "restart-postgres", "recovered in 3s", "invariants: all held"} {
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
}
