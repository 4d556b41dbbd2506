package recovery

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/roomkeeper/roomkeeper/internal/content"
)

const testMap = "crypt-1"

// Fixture builders.

func ground(x, y float32) Place { return Place{Kind: Ground, Owner: testMap, X: x, Y: y} }

func heldOnline(char string) Place { return Place{Kind: Held, Owner: char, Online: true} }

func heldOffline(char string, away time.Duration) Place {
	return Place{Kind: Held, Owner: char, OfflineFor: away}
}

func destroyed() Place { return Place{Kind: Destroyed} }

// item is an item of kind at, reachable where it lies.
func item(id, kind string, at Place) Item {
	return Item{ID: id, Kind: kind, Place: at, Reachable: true}
}

func unreachable(it Item) Item {
	it.Reachable = false
	return it
}

func newState(tick uint64, opts ...func(*State)) State {
	s := State{Map: testMap, Tick: tick}
	for _, o := range opts {
		o(&s)
	}
	return s
}

func withItems(items ...Item) func(*State) {
	return func(s *State) { s.Items = append(s.Items, items...) }
}

func withPending(id string, since uint64) func(*State) {
	return func(s *State) { s.Pending = append(s.Pending, Pending{ItemID: id, Since: since}) }
}

func withPhases(phases ...string) func(*State) {
	return func(s *State) { s.QuestPhases = append(s.QuestPhases, phases...) }
}

func withAnchors(kind string, at ...Point) func(*State) {
	return func(s *State) {
		if s.Anchors == nil {
			s.Anchors = map[string][]Point{}
		}
		s.Anchors[kind] = at
	}
}

// The anchors the test policies use.
var (
	anchorA = Point{10, 10}
	anchorB = Point{20, 20}
	anchorC = Point{30, 30}
)

// keyID is the canonical id of the test key.
var keyID = CanonicalID(testMap, "key")

func policy(kind, typ string, opts ...func(*content.CriticalPolicy)) content.CriticalPolicy {
	p := content.CriticalPolicy{Kind: kind, Type: typ, CooldownTicks: 10, OfflineTimeout: 60,
		Anchors: []content.Anchor{{X: anchorA.X, Y: anchorA.Y}, {X: anchorB.X, Y: anchorB.Y}, {X: anchorC.X, Y: anchorC.Y}}}
	for _, o := range opts {
		o(&p)
	}
	return p
}

func cooldown(ticks int64) func(*content.CriticalPolicy) {
	return func(p *content.CriticalPolicy) { p.CooldownTicks = ticks }
}

func gate(phase string) func(*content.CriticalPolicy) {
	return func(p *content.CriticalPolicy) { p.QuestGate = phase }
}

func offlineTimeout(seconds float32) func(*content.CriticalPolicy) {
	return func(p *content.CriticalPolicy) { p.OfflineTimeout = seconds }
}

func quota(n int) func(*content.CriticalPolicy) {
	return func(p *content.CriticalPolicy) { p.Quota = n }
}

func roomAnchor() func(*content.CriticalPolicy) {
	return func(p *content.CriticalPolicy) { p.Anchors = []content.Anchor{{Room: content.AnchorKeyRoom}} }
}

// summary is a decision as the tables state it.
func summary(d Decision) string {
	return fmt.Sprintf("%s %s from %s to (%v,%v)", d.ItemID, d.Reason, d.From.Kind, d.To.X, d.To.Y)
}

func summaries(r Result) (decided, pending []string) {
	for _, d := range r.Decisions {
		decided = append(decided, summary(d))
	}
	for _, p := range r.Pending {
		pending = append(pending, fmt.Sprintf("%s %s since %d", p.ItemID, p.Reason, p.Since))
	}
	return decided, pending
}

type decideCase struct {
	name    string
	state   State
	policy  content.CriticalPolicy
	decided []string
	pending []string
}

func runDecideCases(t *testing.T, cases []decideCase) {
	t.Helper()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := Decide(tc.state, []content.CriticalPolicy{tc.policy})
			decided, pending := summaries(r)
			if !slices.Equal(decided, tc.decided) {
				t.Errorf("decisions:\n got %q\nwant %q", decided, tc.decided)
			}
			if !slices.Equal(pending, tc.pending) {
				t.Errorf("pending:\n got %q\nwant %q", pending, tc.pending)
			}
			for _, d := range r.Decisions {
				if d.Tick != tc.state.Tick || d.Map != testMap || d.Kind != tc.policy.Kind {
					t.Errorf("decision %s: tick %d map %q kind %q, want %d %q %q", d.ItemID, d.Tick, d.Map, d.Kind, tc.state.Tick, testMap, tc.policy.Kind)
				}
				if want := EventID(testMap, d.ItemID, d.Tick, d.Reason); d.EventID != want {
					t.Errorf("decision %s: event id %q, want %q", d.ItemID, d.EventID, want)
				}
			}
		})
	}
}

func TestDecideUnique(t *testing.T) {
	for _, typ := range []string{content.UniquePersistent, content.RegenerativeUnique} {
		t.Run(typ, func(t *testing.T) {
			runDecideCases(t, uniqueCases(typ))
		})
	}
}

func uniqueCases(typ string) []decideCase {
	key := func(opts ...func(*content.CriticalPolicy)) content.CriticalPolicy { return policy("key", typ, opts...) }
	return []decideCase{
		{name: "reachable on the ground is fine",
			state: newState(100, withItems(item(keyID, "key", ground(5, 5)))), policy: key()},
		{name: "held by an online character is fine",
			state: newState(100, withItems(item(keyID, "key", heldOnline("c1")))), policy: key()},
		{name: "held offline within the timeout is fine",
			state: newState(100, withItems(item(keyID, "key", heldOffline("c1", 60*time.Second)))), policy: key(cooldown(0))},
		{name: "held offline past the timeout is recovered",
			state:   newState(100, withItems(item(keyID, "key", heldOffline("c1", 61*time.Second)))),
			policy:  key(cooldown(0)),
			decided: []string{keyID + " holder_offline from character to (10,10)"}},
		{name: "offline timeout 0 never takes the key back",
			state:  newState(100, withItems(item(keyID, "key", heldOffline("c1", 1000*time.Hour)))),
			policy: key(cooldown(0), offlineTimeout(0))},
		{name: "destroyed, first seen: pending from now",
			state: newState(100, withItems(item(keyID, "key", destroyed()))), policy: key(),
			pending: []string{keyID + " destroyed since 100"}},
		{name: "destroyed, one tick before the cooldown ends: pending",
			state:   newState(109, withItems(item(keyID, "key", destroyed())), withPending(keyID, 100)),
			policy:  key(),
			pending: []string{keyID + " destroyed since 100"}},
		{name: "destroyed, cooldown over: back at its anchor",
			state:   newState(110, withItems(item(keyID, "key", destroyed())), withPending(keyID, 100)),
			policy:  key(),
			decided: []string{keyID + " destroyed from destroyed to (10,10)"}},
		{name: "missing canonical id is made at its anchor",
			state: newState(110, withPending(keyID, 100)), policy: key(),
			decided: []string{keyID + " missing from  to (10,10)"}},
		{name: "unreachable on the ground is recovered",
			state:   newState(100, withItems(unreachable(item(keyID, "key", ground(500, 500))))),
			policy:  key(cooldown(0)),
			decided: []string{keyID + " unreachable from map to (10,10)"}},
		{name: "on another map, reachable, is fine",
			state:  newState(100, withItems(item(keyID, "key", Place{Kind: Ground, Owner: "crypt-2", X: 1, Y: 1}))),
			policy: key(cooldown(0))},
		{name: "quest gate closed holds the recovery",
			state:   newState(200, withItems(item(keyID, "key", destroyed())), withPending(keyID, 100), withPhases("intro")),
			policy:  key(gate("boss")),
			pending: []string{keyID + " destroyed since 100"}},
		{name: "quest gate open recovers at once when the cooldown ran while closed",
			state:   newState(200, withItems(item(keyID, "key", destroyed())), withPending(keyID, 100), withPhases("intro", "boss")),
			policy:  key(gate("boss")),
			decided: []string{keyID + " destroyed from destroyed to (10,10)"}},
		{name: "a pending tick after now restarts the cooldown",
			state:   newState(100, withItems(item(keyID, "key", destroyed())), withPending(keyID, 150)),
			policy:  key(),
			pending: []string{keyID + " destroyed since 100"}},
		{name: "first anchor occupied by another key: second anchor",
			state:  newState(100, withItems(item(keyID, "key", destroyed()), item("spare", "key", ground(10.5, 10.5)))),
			policy: key(cooldown(0)), decided: []string{keyID + " destroyed from destroyed to (20,20)"}},
		{name: "two anchors occupied: the third",
			state: newState(100, withItems(item(keyID, "key", destroyed()),
				item("spare", "key", ground(10, 10)), item("spare2", "key", ground(20, 21)))),
			policy: key(cooldown(0)), decided: []string{keyID + " destroyed from destroyed to (30,30)"}},
		{name: "every anchor occupied: the first",
			state: newState(100, withItems(item(keyID, "key", destroyed()), item("s1", "key", ground(10, 10)),
				item("s2", "key", ground(20, 20)), item("s3", "key", ground(30, 30)))),
			policy: key(cooldown(0)), decided: []string{keyID + " destroyed from destroyed to (10,10)"}},
		{name: "an item of another kind does not occupy an anchor",
			state:  newState(100, withItems(item(keyID, "key", destroyed()), item("gem", "gem", ground(10, 10)))),
			policy: key(cooldown(0)), decided: []string{keyID + " destroyed from destroyed to (10,10)"}},
		{name: "an item just over one unit away does not occupy an anchor",
			state:  newState(100, withItems(item(keyID, "key", destroyed()), item("spare", "key", ground(11.01, 10)))),
			policy: key(cooldown(0)), decided: []string{keyID + " destroyed from destroyed to (10,10)"}},
		{name: "a non-canonical key is left alone",
			state:  newState(100, withItems(item(keyID, "key", ground(1, 1)), item("old", "key", destroyed()))),
			policy: key(cooldown(0))},
		{name: "the state's canonical id",
			state: newState(100, withItems(item("crypt-1/key", "key", destroyed())),
				func(s *State) { s.Canonical = map[string]string{"key": "crypt-1/key"} }),
			policy: key(cooldown(0)), decided: []string{"crypt-1/key destroyed from destroyed to (10,10)"}},
		{name: "a room anchor resolved by the state",
			state:  newState(100, withItems(item(keyID, "key", destroyed())), withAnchors("key", Point{44, 45})),
			policy: key(cooldown(0), roomAnchor()), decided: []string{keyID + " destroyed from destroyed to (44,45)"}},
		{name: "without an anchor on this map: pending",
			state:  newState(100, withItems(item(keyID, "key", destroyed()))),
			policy: key(cooldown(0), roomAnchor()), pending: []string{keyID + " destroyed since 100"}},
	}
}

func TestDecideQuota(t *testing.T) {
	torch := func(opts ...func(*content.CriticalPolicy)) content.CriticalPolicy {
		return policy("torch", content.InstanceQuota, append([]func(*content.CriticalPolicy){quota(3), cooldown(0)}, opts...)...)
	}
	slot := SlotIDs(testMap, "torch", 3)
	runDecideCases(t, []decideCase{
		{name: "quota met by fine items: nothing",
			state: newState(100, withItems(item("t1", "torch", ground(10, 10)), item("t2", "torch", heldOnline("c1")),
				item("t3", "torch", heldOffline("c2", time.Second)))), policy: torch()},
		{name: "quota short creates exactly the missing ones at free anchors",
			state:   newState(100, withItems(item("t1", "torch", ground(10, 10)))),
			policy:  torch(),
			decided: []string{slot[0] + " quota_short from  to (20,20)", slot[1] + " quota_short from  to (30,30)"}},
		{name: "nothing at all: the quota is made",
			state:  newState(100),
			policy: torch(),
			decided: []string{slot[0] + " quota_short from  to (10,10)", slot[1] + " quota_short from  to (20,20)",
				slot[2] + " quota_short from  to (30,30)"}},
		{name: "a destroyed slot comes back under its id, an unused slot is made",
			state:  newState(100, withItems(item("t1", "torch", ground(10, 10)), item(slot[0], "torch", destroyed()))),
			policy: torch(),
			decided: []string{slot[0] + " destroyed from destroyed to (20,20)",
				slot[1] + " quota_short from  to (30,30)"}},
		{name: "a slot holding a live item is skipped",
			state:   newState(100, withItems(item("t1", "torch", ground(10, 10)), item(slot[0], "torch", heldOnline("c1")))),
			policy:  torch(),
			decided: []string{slot[1] + " quota_short from  to (20,20)"}},
		{name: "destroyed items that are no slot are not counted or recovered",
			state: newState(100, withItems(item("t1", "torch", ground(10, 10)), item("t2", "torch", ground(20, 20)),
				item("t3", "torch", ground(30, 30)), item("old", "torch", destroyed()))), policy: torch()},
		{name: "over quota: nothing is added or taken",
			state: newState(100, withItems(item("t1", "torch", ground(1, 1)), item("t2", "torch", ground(2, 2)),
				item("t3", "torch", ground(3, 3)), item("t4", "torch", ground(4, 4)))), policy: torch()},
		{name: "bad items are taken back only while fewer than the quota are fine",
			state: newState(100, withItems(item("t1", "torch", ground(10, 10)), item("t2", "torch", ground(20, 20)),
				item("t3", "torch", heldOffline("c1", time.Hour)), item("t4", "torch", heldOffline("c2", time.Hour)))),
			policy:  torch(),
			decided: []string{"t3 holder_offline from character to (30,30)"},
			pending: []string{"t4 holder_offline since 100"}},
		{name: "a bad item taken back and the shortfall made",
			state:   newState(100, withItems(item("t1", "torch", ground(10, 10)), unreachable(item("t2", "torch", ground(99, 99))))),
			policy:  torch(),
			decided: []string{slot[0] + " quota_short from  to (30,30)", "t2 unreachable from map to (20,20)"}},
		{name: "a bad item in its cooldown is not replaced by a new one",
			state:   newState(100, withItems(item("t1", "torch", heldOffline("c1", time.Hour)))),
			policy:  torch(quota(1), cooldown(5)),
			pending: []string{"t1 holder_offline since 100"}},
		{name: "the shortfall waits for the cooldown",
			state:   newState(104, withItems(item("t1", "torch", ground(10, 10))), withPending(slot[0], 100)),
			policy:  torch(cooldown(5)),
			pending: []string{slot[0] + " quota_short since 100", slot[1] + " quota_short since 104"}},
		{name: "the shortfall waits for the quest gate",
			state:   newState(100, withItems(item("t1", "torch", ground(10, 10)), item("t2", "torch", ground(20, 20)))),
			policy:  torch(gate("lit")),
			pending: []string{slot[0] + " quota_short since 100"}},
		{name: "the state's slots",
			state: newState(100, withItems(item("t1", "torch", ground(10, 10)), item("t2", "torch", ground(20, 20))),
				func(s *State) { s.Slots = map[string][]string{"torch": {"a", "b", "c"}} }),
			policy: torch(), decided: []string{"a quota_short from  to (30,30)"}},
	})
}

func TestDecideIgnoresKindsWithoutPolicy(t *testing.T) {
	s := newState(100, withItems(item("gem", "gem", destroyed()), unreachable(item("x", "sword", ground(1, 1)))))
	r := Decide(s, []content.CriticalPolicy{policy("key", content.UniquePersistent)})
	for _, d := range r.Decisions {
		if d.Kind != "key" {
			t.Errorf("decision for %s of kind %q without a policy", d.ItemID, d.Kind)
		}
	}
	for _, p := range r.Pending {
		if p.Kind != "key" {
			t.Errorf("pending %s of kind %q without a policy", p.ItemID, p.Kind)
		}
	}
}

func TestDecideReportsUnanchoredKinds(t *testing.T) {
	s := newState(100, withItems(item(keyID, "key", destroyed())))
	r := Decide(s, []content.CriticalPolicy{policy("key", content.UniquePersistent, cooldown(0), roomAnchor())})
	if !slices.Equal(r.Unanchored, []string{"key"}) {
		t.Errorf("unanchored %q, want [key]", r.Unanchored)
	}
	r = Decide(s, []content.CriticalPolicy{policy("key", content.UniquePersistent, roomAnchor())})
	if len(r.Unanchored) != 0 {
		t.Errorf("unanchored %q while the key is in its cooldown, want none", r.Unanchored)
	}
}

func TestEventID(t *testing.T) {
	id := EventID("m", "i", 7, ReasonMissing)
	if again := EventID("m", "i", 7, ReasonMissing); again != id {
		t.Fatalf("EventID is not stable: %q then %q", id, again)
	}
	others := []string{
		EventID("m2", "i", 7, ReasonMissing), EventID("m", "i2", 7, ReasonMissing),
		EventID("m", "i", 8, ReasonMissing), EventID("m", "i", 7, ReasonDestroyed),
		EventID("m/i", "", 7, ReasonMissing), EventID("m", "/i", 7, ReasonMissing),
	}
	for _, o := range others {
		if o == id {
			t.Errorf("EventID %q shared by different recoveries", o)
		}
	}
}

func TestApplyIsIdempotent(t *testing.T) {
	s := newState(110, withItems(item(keyID, "key", destroyed()), item("gem", "gem", ground(1, 1))), withPending(keyID, 100))
	policies := []content.CriticalPolicy{policy("key", content.UniquePersistent)}
	r := Decide(s, policies)
	if len(r.Decisions) != 1 {
		t.Fatalf("decisions %v, want one", r.Decisions)
	}
	once := Apply(s, r.Decisions)
	twice := Apply(once, r.Decisions)
	if fmt.Sprint(once) != fmt.Sprint(twice) {
		t.Errorf("applying twice:\n%v\nonce:\n%v", twice, once)
	}
	if len(s.Items) != 2 || s.Items[0].Place.Kind != Destroyed || len(s.Pending) != 1 {
		t.Errorf("Apply changed its input: %+v", s)
	}
	want := Item{ID: keyID, Kind: "key", Reachable: true, Place: ground(anchorA.X, anchorA.Y)}
	if i := slices.IndexFunc(once.Items, func(it Item) bool { return it.ID == keyID }); i < 0 || once.Items[i] != want {
		t.Errorf("applied items %+v, want %+v among them", once.Items, want)
	}
	if len(once.Pending) != 0 {
		t.Errorf("applied pending %+v, want none", once.Pending)
	}
	if again := Decide(once, policies); len(again.Decisions)+len(again.Pending) != 0 {
		t.Errorf("after applying: %+v, want nothing", again)
	}
}

func TestResolveAnchors(t *testing.T) {
	p := content.CriticalPolicy{Anchors: []content.Anchor{{X: 1, Y: 2}, {Room: content.AnchorKeyRoom}, {Room: "vault"}, {X: 3, Y: 4}}}
	got := ResolveAnchors(p, map[string]Point{content.AnchorKeyRoom: {50, 60}})
	if want := []Point{{1, 2}, {50, 60}, {3, 4}}; !slices.Equal(got, want) {
		t.Errorf("ResolveAnchors = %v, want %v", got, want)
	}
}
