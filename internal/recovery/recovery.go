package recovery

import (
	"cmp"
	"slices"
	"time"

	"github.com/roomkeeper/roomkeeper/internal/content"
)

// PlaceKind says what kind of place an item is in. The values are the
// store's owner kinds, so a row converts with PlaceKind(row.OwnerKind).
type PlaceKind string

// The places an item can be in. Any other PlaceKind counts as missing.
const (
	// Ground: lying on the map instance Place.Owner at Place.X, Place.Y.
	Ground PlaceKind = "map"
	// Held: carried or worn by the character Place.Owner.
	Held PlaceKind = "character"
	// Destroyed: consumed or destroyed; the store keeps the row.
	Destroyed PlaceKind = "destroyed"
)

// Place is where an item is, or was before a recovery.
type Place struct {
	Kind PlaceKind
	// Owner is the map instance (Ground) or the character id (Held).
	Owner string
	// X and Y are where it lies (Ground).
	X, Y float32
	// Online says whether the holder is connected (Held).
	Online bool
	// OfflineFor is how long the holder has been away (Held, not Online).
	OfflineFor time.Duration
}

// Point is a spot on the map.
type Point struct{ X, Y float32 }

// Item is one critical item the caller knows of. IDs are unique, as in
// item_ownership.
type Item struct {
	ID, Kind string
	Place    Place
	// Reachable says, for a Ground item, whether the map's spawn can reach
	// where it lies. The caller judges it; an item lying on another map is
	// usually not reachable from this one.
	Reachable bool
}

// Pending is an item seen bad that a pass did not recover.
type Pending struct {
	ItemID, Kind string
	// Reason is why the item is bad (informational; Decide ignores it on
	// input).
	Reason Reason
	// Since is the tick at which a pass first saw the item bad.
	Since uint64
}

// State is one map instance at one tick, as recovery needs it.
type State struct {
	// Map is the map instance name; recovered items go onto it.
	Map string
	// Tick is the maintenance boundary the pass runs at.
	Tick uint64
	// Items are the items of the critical kinds, wherever they are.
	Items []Item
	// Anchors are each kind's anchors resolved to points on this map, in
	// the policy's order (ResolveAnchors). A kind without them uses the
	// policy's anchors that are plain points.
	Anchors map[string][]Point
	// Canonical is the canonical item id of a unique kind; a kind not in it
	// uses CanonicalID(Map, kind).
	Canonical map[string]string
	// Slots are the item ids an instance_quota kind makes its items under;
	// a kind not in it uses SlotIDs(Map, kind, policy.Quota).
	Slots map[string][]string
	// QuestPhases are the quest phases reached on this map.
	QuestPhases []string
	// Pending is the previous pass's Result.Pending.
	Pending []Pending
}

// Result is what a pass decided.
type Result struct {
	// Decisions are the recoveries to make, sorted by kind, then item id.
	Decisions []Decision
	// Pending are the items seen bad and not recovered (in their cooldown,
	// behind a quest gate, not needed to fill a quota, or without an
	// anchor), sorted by kind, then item id. Hand them back as
	// State.Pending.
	Pending []Pending
	// Unanchored are the kinds, sorted, that had an item due for recovery
	// but no anchor on this map.
	Unanchored []string
}

// Decide is one recovery pass over s under policies (one per kind: with
// several, the first is used). It is pure and deterministic: the order of
// s's slices and of policies does not change the result.
func Decide(s State, policies []content.CriticalPolicy) Result {
	byKind := itemsByKind(s.Items)
	since := sinceByID(s.Pending)
	var r Result
	for _, p := range uniquePolicies(policies) {
		k := newPass(&s, p, byKind[p.Kind], since)
		k.run()
		r.Decisions = append(r.Decisions, k.decisions()...)
		r.Pending = append(r.Pending, k.pending...)
		if k.unanchored {
			r.Unanchored = append(r.Unanchored, p.Kind)
		}
	}
	slices.SortFunc(r.Decisions, func(a, b Decision) int {
		return cmp.Or(cmp.Compare(a.Kind, b.Kind), cmp.Compare(a.ItemID, b.ItemID))
	})
	slices.SortFunc(r.Pending, func(a, b Pending) int {
		return cmp.Or(cmp.Compare(a.Kind, b.Kind), cmp.Compare(a.ItemID, b.ItemID))
	})
	return r
}

// itemsByKind groups items by kind, each group sorted by id. Of items
// sharing an id the first given is kept.
func itemsByKind(items []Item) map[string][]Item {
	sorted := slices.Clone(items)
	slices.SortStableFunc(sorted, func(a, b Item) int {
		return cmp.Or(cmp.Compare(a.Kind, b.Kind), cmp.Compare(a.ID, b.ID))
	})
	sorted = slices.CompactFunc(sorted, func(a, b Item) bool { return a.Kind == b.Kind && a.ID == b.ID })
	byKind := map[string][]Item{}
	for start := 0; start < len(sorted); {
		kind := sorted[start].Kind
		end := start + 1
		for end < len(sorted) && sorted[end].Kind == kind {
			end++
		}
		byKind[kind] = sorted[start:end:end]
		start = end
	}
	return byKind
}

// sinceByID is the earliest tick each pending item was seen bad.
func sinceByID(pending []Pending) map[string]uint64 {
	since := make(map[string]uint64, len(pending))
	for _, p := range pending {
		if t, ok := since[p.ItemID]; !ok || p.Since < t {
			since[p.ItemID] = p.Since
		}
	}
	return since
}

// uniquePolicies are the policies sorted by kind, the first of each kind.
func uniquePolicies(policies []content.CriticalPolicy) []content.CriticalPolicy {
	sorted := slices.Clone(policies)
	slices.SortStableFunc(sorted, func(a, b content.CriticalPolicy) int { return cmp.Compare(a.Kind, b.Kind) })
	return slices.CompactFunc(sorted, func(a, b content.CriticalPolicy) bool { return a.Kind == b.Kind })
}
