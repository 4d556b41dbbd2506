package recovery

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strconv"

	"github.com/roomkeeper/roomkeeper/internal/content"
)

// Reason says why an item is recovered; the values are stable and go into
// the audit trail.
type Reason string

// The reasons.
const (
	// ReasonMissing: the canonical item exists nowhere.
	ReasonMissing Reason = "missing"
	// ReasonDestroyed: the item was consumed or destroyed.
	ReasonDestroyed Reason = "destroyed"
	// ReasonUnreachable: the item lies where the map's spawn cannot reach.
	ReasonUnreachable Reason = "unreachable"
	// ReasonHolderOffline: its holder has been offline past the timeout.
	ReasonHolderOffline Reason = "holder_offline"
	// ReasonQuotaShort: fewer than the quota exist; the item is new.
	ReasonQuotaShort Reason = "quota_short"
)

// Decision is one recovery: the item goes from where it was onto the map
// at an anchor. It is also the audit record of the recovery.
type Decision struct {
	// EventID is the idempotency key of the recovery (EventID).
	EventID string
	// ItemID is the item recovered, existing or new.
	ItemID, Kind string
	Reason       Reason
	// From is where the item was; the zero Place for an item that existed
	// nowhere.
	From Place
	// Map and To are where it goes: an anchor on the pass's map.
	Map  string
	To   Point
	Tick uint64
}

// decisions gives the pass's moves their anchors, in order: each takes the
// first anchor no other item of the kind lies at.
func (k *pass) decisions() []Decision {
	if len(k.moves) == 0 {
		return nil
	}
	anchors := k.anchors()
	taken := k.lying()
	out := make([]Decision, len(k.moves))
	for i, m := range k.moves {
		to := freeAnchor(anchors, taken)
		taken = append(taken, to)
		out[i] = Decision{
			EventID: EventID(k.state.Map, m.id, k.state.Tick, m.reason),
			ItemID:  m.id, Kind: k.policy.Kind, Reason: m.reason, From: m.from,
			Map: k.state.Map, To: to, Tick: k.state.Tick,
		}
	}
	return out
}

// lying are where the kind's items lie on this map, but for those moving.
func (k *pass) lying() []Point {
	var at []Point
	for _, it := range k.items {
		if it.Place.Kind == Ground && it.Place.Owner == k.state.Map && !k.moving(it.ID) {
			at = append(at, Point{it.Place.X, it.Place.Y})
		}
	}
	return at
}

func (k *pass) moving(id string) bool {
	for _, m := range k.moves {
		if m.id == id {
			return true
		}
	}
	return false
}

// anchors are the kind's anchors on this map: the state's, else the
// policy's plain points.
func (k *pass) anchors() []Point {
	if at := k.state.Anchors[k.policy.Kind]; len(at) > 0 {
		return at
	}
	return ResolveAnchors(k.policy, nil)
}

// freeAnchor is the first anchor with nothing within one unit, else the
// first anchor.
func freeAnchor(anchors, taken []Point) Point {
	for _, a := range anchors {
		if !near(a, taken) {
			return a
		}
	}
	return anchors[0]
}

func near(a Point, taken []Point) bool {
	for _, t := range taken {
		if dx, dy := a.X-t.X, a.Y-t.Y; dx*dx+dy*dy <= 1 {
			return true
		}
	}
	return false
}

// ResolveAnchors are the policy's anchors as points on a map whose rooms of
// each role have their middles in rooms; an anchor naming a role the map
// lacks is left out.
func ResolveAnchors(p content.CriticalPolicy, rooms map[string]Point) []Point {
	var at []Point
	for _, a := range p.Anchors {
		if a.Room == "" {
			at = append(at, Point{a.X, a.Y})
		} else if c, ok := rooms[a.Room]; ok {
			at = append(at, c)
		}
	}
	return at
}

// CanonicalID is the id of a unique kind's item on a map instance when the
// state names none.
func CanonicalID(instance, kind string) string { return instance + "/" + kind }

// SlotIDs are the ids an instance_quota kind's items are made under on a
// map instance when the state names none: one per quota slot.
func SlotIDs(instance, kind string, quota int) []string {
	ids := make([]string, max(quota, 0))
	for i := range ids {
		ids[i] = fmt.Sprintf("%s/quota/%s/%d", instance, kind, i)
	}
	return ids
}

// EventID is the idempotency key of recovering the item on the map
// instance at the tick for the reason: the same recovery always has the
// same key, and committing it twice is a no-op.
func EventID(instance, itemID string, tick uint64, reason Reason) string {
	h := sha256.New()
	for _, part := range []string{"recovery", instance, itemID, strconv.FormatUint(tick, 10), string(reason)} {
		fmt.Fprintf(h, "%d:%s", len(part), part)
	}
	return hex.EncodeToString(h.Sum(nil)[:16])
}
