package recovery

import (
	"cmp"
	"slices"
	"time"

	"github.com/roomkeeper/roomkeeper/internal/content"
)

// pass recovers one kind in one Decide.
type pass struct {
	state  *State
	policy content.CriticalPolicy
	// items are the kind's items, sorted by id.
	items []Item
	since map[string]uint64
	// moves are the recoveries decided, in the order they take anchors.
	moves      []move
	pending    []Pending
	unanchored bool
}

// move is a recovery before it has an anchor.
type move struct {
	id     string
	reason Reason
	from   Place
}

func newPass(s *State, p content.CriticalPolicy, items []Item, since map[string]uint64) *pass {
	return &pass{state: s, policy: p, items: items, since: since}
}

// run decides the kind by its policy type; an unknown type decides nothing.
func (k *pass) run() {
	switch k.policy.Type {
	case content.UniquePersistent, content.RegenerativeUnique:
		k.unique()
	case content.InstanceQuota:
		k.quota()
	}
}

// unique keeps the canonical item: recovered when bad.
func (k *pass) unique() {
	id := k.canonical()
	it, ok := k.find(id)
	reason := ReasonMissing
	if ok {
		var bad bool
		if reason, bad = k.judge(it); !bad {
			return
		}
	}
	k.settle(id, reason, it.Place, true)
}

// quota takes bad items back while fewer than Quota are fine, then makes
// up the shortfall when fewer than Quota exist.
func (k *pass) quota() {
	good, live := 0, 0
	var bad []move
	for _, it := range k.items {
		if it.Place.Kind == Destroyed {
			continue
		}
		live++
		if reason, isBad := k.judge(it); isBad {
			bad = append(bad, move{it.ID, reason, it.Place})
		} else {
			good++
		}
	}
	need := k.policy.Quota - good
	for _, m := range bad {
		if k.settle(m.id, m.reason, m.from, need > 0) {
			need--
		}
	}
	k.fill(k.policy.Quota - live)
}

// fill makes short items from the quota slots that hold no live item.
func (k *pass) fill(short int) {
	for _, id := range k.slots() {
		if short <= 0 {
			return
		}
		it, ok := k.find(id)
		reason := ReasonQuotaShort
		switch {
		case ok && it.Place.Kind == Destroyed:
			reason = ReasonDestroyed
		case ok:
			continue
		}
		short--
		k.settle(id, reason, it.Place, true)
	}
}

// settle recovers the bad item id when wanted and due, and otherwise keeps
// it pending. It reports whether the item is recovered.
func (k *pass) settle(id string, reason Reason, from Place, wanted bool) bool {
	since := k.sinceOf(id)
	if wanted && k.due(since) {
		if len(k.anchors()) > 0 {
			k.moves = append(k.moves, move{id, reason, from})
			return true
		}
		k.unanchored = true
	}
	k.pending = append(k.pending, Pending{ItemID: id, Kind: k.policy.Kind, Reason: reason, Since: since})
	return false
}

// sinceOf is the tick the item was first seen bad: now, unless an earlier
// pass saw it. A tick after now (the map went back in time) counts as now.
func (k *pass) sinceOf(id string) uint64 {
	if t, ok := k.since[id]; ok && t <= k.state.Tick {
		return t
	}
	return k.state.Tick
}

// due reports whether an item bad since then may be recovered now: its
// cooldown is over and the quest gate, if any, is open.
func (k *pass) due(since uint64) bool {
	cooldown := uint64(max(k.policy.CooldownTicks, 0))
	gated := k.policy.QuestGate != "" && !slices.Contains(k.state.QuestPhases, k.policy.QuestGate)
	return !gated && k.state.Tick-since >= cooldown
}

// judge says whether an item that exists is bad, and why.
func (k *pass) judge(it Item) (Reason, bool) {
	switch it.Place.Kind {
	case Ground:
		return ReasonUnreachable, !it.Reachable
	case Held:
		return ReasonHolderOffline, k.offlineTooLong(it.Place)
	case Destroyed:
		return ReasonDestroyed, true
	default:
		return ReasonMissing, true
	}
}

// offlineTooLong reports whether the holder has been away for longer than
// the policy allows.
func (k *pass) offlineTooLong(p Place) bool {
	if k.policy.OfflineTimeout <= 0 || p.Online {
		return false
	}
	return p.OfflineFor > time.Duration(float64(k.policy.OfflineTimeout)*float64(time.Second))
}

// find is the kind's item with that id.
func (k *pass) find(id string) (Item, bool) {
	i, ok := slices.BinarySearchFunc(k.items, id, func(it Item, id string) int { return cmp.Compare(it.ID, id) })
	if !ok {
		return Item{}, false
	}
	return k.items[i], true
}

func (k *pass) canonical() string {
	if id := k.state.Canonical[k.policy.Kind]; id != "" {
		return id
	}
	return CanonicalID(k.state.Map, k.policy.Kind)
}

func (k *pass) slots() []string {
	if ids, ok := k.state.Slots[k.policy.Kind]; ok {
		return ids
	}
	return SlotIDs(k.state.Map, k.policy.Kind, k.policy.Quota)
}
