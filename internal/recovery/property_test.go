package recovery

import (
	"fmt"
	"math/rand/v2"
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/roomkeeper/roomkeeper/internal/content"
)

// propertyCases is how many random states TestDecideProperties checks.
const propertyCases = 3000

// The kinds random states use: two unique, two quota, and one without a
// policy.
var randomKinds = []struct{ kind, typ string }{
	{"key", content.UniquePersistent},
	{"orb", content.RegenerativeUnique},
	{"torch", content.InstanceQuota},
	{"rune", content.InstanceQuota},
}

func TestDecideProperties(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for i := range propertyCases {
		s, policies := randomCase(r)
		if err := checkProperties(r, s, policies); err != nil {
			t.Fatalf("case %d: %v\nstate: %+v\npolicies: %+v", i, err, s, policies)
		}
	}
}

func checkProperties(r *rand.Rand, s State, policies []content.CriticalPolicy) error {
	res := Decide(s, policies)
	if again := Decide(s, policies); !reflect.DeepEqual(again, res) {
		return fmt.Errorf("the same input decided twice differs:\n%+v\n%+v", res, again)
	}
	if shuffled := Decide(shuffle(r, s), shuffled(r, policies)); !reflect.DeepEqual(shuffled, res) {
		return fmt.Errorf("shuffled input decided differently:\n%+v\n%+v", res, shuffled)
	}
	if err := checkDecisions(s, policies, res); err != nil {
		return err
	}
	applied := Apply(s, res.Decisions)
	applied.Pending = res.Pending
	if again := Decide(applied, policies); len(again.Decisions) != 0 {
		return fmt.Errorf("deciding again after applying gave %+v", again.Decisions)
	}
	for _, p := range policies {
		if err := checkApplied(s, applied, p, res); err != nil {
			return fmt.Errorf("%s: %w", p.Kind, err)
		}
	}
	for _, q := range res.Pending {
		if err := checkPending(s, applied, policyOf(policies, q.Kind), q); err != nil {
			return fmt.Errorf("pending %+v: %w", q, err)
		}
	}
	return nil
}

// checkPending checks that a pending item is bad, first seen when it says,
// and has a reason to wait: its cooldown, a closed gate, no anchor, or (a
// quota kind) a quota met once the decisions are applied.
func checkPending(before, after State, p content.CriticalPolicy, q Pending) error {
	if it, ok := findItem(before, q.ItemID); ok && !isBad(it, p) {
		return fmt.Errorf("the item %+v is fine", it)
	}
	since := before.Tick
	if i := slices.IndexFunc(before.Pending, func(old Pending) bool { return old.ItemID == q.ItemID }); i >= 0 && before.Pending[i].Since <= before.Tick {
		since = before.Pending[i].Since
	}
	if q.Since != since {
		return fmt.Errorf("since %d, want %d", q.Since, since)
	}
	gated := p.QuestGate != "" && !slices.Contains(before.QuestPhases, p.QuestGate)
	if gated || before.Tick-since < uint64(p.CooldownTicks) || len(anchorsOf(before, p)) == 0 {
		return nil
	}
	if p.Type == content.InstanceQuota {
		if live, good := quotaCounts(after, p); good >= p.Quota || (q.Reason == ReasonQuotaShort || q.Reason == ReasonDestroyed) && live >= p.Quota {
			return nil
		}
	}
	return fmt.Errorf("due at tick %d and not recovered", before.Tick)
}

// checkDecisions checks each decision alone: distinct event ids and items,
// never a fine item, always to an anchor of its kind, never also pending.
func checkDecisions(s State, policies []content.CriticalPolicy, res Result) error {
	events, items := map[string]bool{}, map[string]bool{}
	for _, d := range res.Decisions {
		if events[d.EventID] || items[d.ItemID] {
			return fmt.Errorf("event %s or item %s decided twice", d.EventID, d.ItemID)
		}
		events[d.EventID], items[d.ItemID] = true, true
		p := policyOf(policies, d.Kind)
		if it, ok := findItem(s, d.ItemID); ok && it.Place.Kind != Destroyed && !isBad(it, p) {
			return fmt.Errorf("decision %+v for the fine item %+v", d, it)
		}
		if !slices.Contains(anchorsOf(s, p), d.To) {
			return fmt.Errorf("decision %+v is not to an anchor of %v", d, anchorsOf(s, p))
		}
	}
	for _, p := range res.Pending {
		if items[p.ItemID] {
			return fmt.Errorf("item %s both decided and pending", p.ItemID)
		}
	}
	return nil
}

// checkApplied checks a kind after its decisions are applied.
func checkApplied(before, after State, p content.CriticalPolicy, res Result) error {
	if p.Type == content.InstanceQuota {
		return checkQuota(before, after, p, res)
	}
	id := CanonicalID(before.Map, p.Kind)
	good := 0
	for _, it := range after.Items {
		if it.ID == id && it.Kind == p.Kind && !isBad(it, p) {
			good++
		}
	}
	settled := !slices.ContainsFunc(res.Pending, func(q Pending) bool { return q.Kind == p.Kind })
	if good > 1 || (settled && good != 1) {
		return fmt.Errorf("%d good canonical items after applying, nothing pending: %v", good, settled)
	}
	return nil
}

// checkQuota: never more than Quota items made, and the quota is met when
// nothing is left pending.
func checkQuota(before, after State, p content.CriticalPolicy, res Result) error {
	liveBefore, _ := quotaCounts(before, p)
	liveAfter, goodAfter := quotaCounts(after, p)
	if liveAfter > max(liveBefore, p.Quota) {
		return fmt.Errorf("%d live items after applying, %d before, quota %d", liveAfter, liveBefore, p.Quota)
	}
	settled := !slices.ContainsFunc(res.Pending, func(q Pending) bool { return q.Kind == p.Kind })
	if settled && goodAfter < p.Quota {
		return fmt.Errorf("%d good items after applying with nothing pending, quota %d", goodAfter, p.Quota)
	}
	return nil
}

func quotaCounts(s State, p content.CriticalPolicy) (live, good int) {
	for _, it := range s.Items {
		if it.Kind != p.Kind || it.Place.Kind == Destroyed {
			continue
		}
		live++
		if !isBad(it, p) {
			good++
		}
	}
	return live, good
}

// isBad is the oracle: an existing item is bad by the rules of the
// package doc, written out again.
func isBad(it Item, p content.CriticalPolicy) bool {
	switch it.Place.Kind {
	case Ground:
		return !it.Reachable
	case Held:
		return p.OfflineTimeout > 0 && !it.Place.Online && it.Place.OfflineFor.Seconds() > float64(p.OfflineTimeout)
	}
	return true
}

func findItem(s State, id string) (Item, bool) {
	i := slices.IndexFunc(s.Items, func(it Item) bool { return it.ID == id })
	if i < 0 {
		return Item{}, false
	}
	return s.Items[i], true
}

func policyOf(policies []content.CriticalPolicy, kind string) content.CriticalPolicy {
	return policies[slices.IndexFunc(policies, func(p content.CriticalPolicy) bool { return p.Kind == kind })]
}

func anchorsOf(s State, p content.CriticalPolicy) []Point {
	if at := s.Anchors[p.Kind]; len(at) > 0 {
		return at
	}
	return ResolveAnchors(p, nil)
}

// randomCase is a small random map: a few policies, the items of their
// kinds (and of one kind without a policy) in every kind of place, some
// pending, some quest phases.
func randomCase(r *rand.Rand) (State, []content.CriticalPolicy) {
	s := State{Map: "m", Tick: 20 + r.Uint64N(40), Anchors: map[string][]Point{}}
	var policies []content.CriticalPolicy
	for _, k := range randomKinds {
		p := randomPolicy(r, k.kind, k.typ)
		policies = append(policies, p)
		if r.IntN(2) == 0 {
			s.Anchors[k.kind] = ResolveAnchors(p, map[string]Point{content.AnchorKeyRoom: {50, 50}})
		}
	}
	for _, k := range append(slices.Clone(randomKinds), struct{ kind, typ string }{"junk", ""}) {
		for _, id := range candidateIDs(s.Map, k.kind) {
			if r.IntN(5) < 2 {
				s.Items = append(s.Items, Item{ID: id, Kind: k.kind, Place: randomPlace(r), Reachable: r.IntN(4) != 0})
			}
			if r.IntN(10) < 3 {
				s.Pending = append(s.Pending, Pending{ItemID: id, Kind: k.kind, Since: s.Tick + 3 - r.Uint64N(25)})
			}
		}
	}
	for _, phase := range []string{"intro", "boss"} {
		if r.IntN(2) == 0 {
			s.QuestPhases = append(s.QuestPhases, phase)
		}
	}
	return s, policies
}

func randomPolicy(r *rand.Rand, kind, typ string) content.CriticalPolicy {
	p := content.CriticalPolicy{Kind: kind, Type: typ, CooldownTicks: 5 * r.Int64N(4),
		OfflineTimeout: float32(30 * r.IntN(3))}
	for range 1 + r.IntN(4) {
		if r.IntN(6) == 0 {
			p.Anchors = append(p.Anchors, content.Anchor{Room: content.AnchorKeyRoom})
		} else {
			p.Anchors = append(p.Anchors, content.Anchor{X: randomCoord(r), Y: randomCoord(r)})
		}
	}
	if r.IntN(3) == 0 {
		p.QuestGate = "boss"
	}
	if typ == content.InstanceQuota {
		p.Quota = 1 + r.IntN(len(p.Anchors))
	}
	return p
}

// randomCoord is on a coarse grid, so items often lie at anchors.
func randomCoord(r *rand.Rand) float32 { return float32(r.IntN(4)*10) + float32(r.IntN(3))*0.5 }

func candidateIDs(m, kind string) []string {
	ids := append([]string{CanonicalID(m, kind)}, SlotIDs(m, kind, 4)...)
	for j := range 3 {
		ids = append(ids, fmt.Sprintf("loot/%s/%d", kind, j))
	}
	return ids
}

func randomPlace(r *rand.Rand) Place {
	switch r.IntN(5) {
	case 0:
		return Place{Kind: Ground, Owner: "m", X: randomCoord(r), Y: randomCoord(r)}
	case 1:
		return Place{Kind: Ground, Owner: "elsewhere", X: randomCoord(r), Y: randomCoord(r)}
	case 2:
		return Place{Kind: Held, Owner: fmt.Sprint("c", r.IntN(3)), Online: true}
	case 3:
		return Place{Kind: Held, Owner: fmt.Sprint("c", r.IntN(3)), OfflineFor: time.Duration(r.IntN(90)) * time.Second}
	}
	return Place{Kind: Destroyed}
}

// shuffle is s with its slices in a random order (anchors keep theirs:
// their order is the policy's).
func shuffle(r *rand.Rand, s State) State {
	s.Items = shuffled(r, s.Items)
	s.Pending = shuffled(r, s.Pending)
	s.QuestPhases = shuffled(r, s.QuestPhases)
	return s
}

func shuffled[T any](r *rand.Rand, in []T) []T {
	out := slices.Clone(in)
	r.Shuffle(len(out), func(i, j int) { out[i], out[j] = out[j], out[i] })
	return out
}
