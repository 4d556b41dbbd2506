package content

import (
	"errors"
	"fmt"
	"slices"
)

// The kinds of critical-item policy (docs/design.md section 5).
const (
	// UniquePersistent: exactly one instance exists; it is recovered (back
	// to its anchor) when lost, never made anew while it exists.
	UniquePersistent = "unique_persistent"
	// RegenerativeUnique: one canonical instance; when it is destroyed or
	// lost a new one appears at the anchor.
	RegenerativeUnique = "regenerative_unique"
	// InstanceQuota: Quota instances are kept available, never more.
	InstanceQuota = "instance_quota"
)

// PolicyTypes are the policy kinds, in the order docs list them.
var PolicyTypes = []string{UniquePersistent, RegenerativeUnique, InstanceQuota}

// AnchorKeyRoom is the anchor role of the middle of a dungeon's key room.
const AnchorKeyRoom = "keyRoom"

// The quest phases a map reaches, which a policy's QuestGate may name: a
// dungeon's key room or boss room cleared (its last guard killed).
const (
	PhaseKeyRoomCleared  = "keyRoomCleared"
	PhaseBossRoomCleared = "bossRoomCleared"
)

// QuestPhases are the phases a QuestGate may name.
var QuestPhases = []string{PhaseKeyRoomCleared, PhaseBossRoomCleared}

// Anchor is where a critical item is put back: the middle of a map room
// with that role (Room), or the point X, Y.
type Anchor struct {
	Room string  `json:"room,omitempty"`
	X    float32 `json:"x,omitempty"`
	Y    float32 `json:"y,omitempty"`
}

// CriticalPolicy keeps a critical item kind obtainable, so no world can
// become unwinnable.
type CriticalPolicy struct {
	// Kind is the item kind the policy keeps.
	Kind string `json:"kind"`
	// Type is one of PolicyTypes.
	Type string `json:"type"`
	// Anchors are where recovered items go, the first free one first.
	Anchors []Anchor `json:"anchors"`
	// CooldownTicks is how long an item must stay lost before it is
	// recovered, in ticks.
	CooldownTicks int64 `json:"cooldownTicks,omitempty"`
	// QuestGate, when set, names the quest phase that must be reached
	// before the item is recovered ("" recovers at once).
	QuestGate string `json:"questGate,omitempty"`
	// OfflineTimeout is how long, in seconds, a character may hold the
	// item while offline before it is taken back; 0 never takes it back.
	OfflineTimeout float32 `json:"offlineTimeout,omitempty"`
	// Quota is how many instance_quota items are kept available.
	Quota int `json:"quota,omitempty"`
}

// validateCritical checks each policy, naming the field.
func (p *Pack) validateCritical() error {
	var errs []error
	seen := map[string]bool{}
	for i, c := range p.Critical {
		field := fmt.Sprintf("critical[%d]", i)
		if _, ok := p.Item(c.Kind); !ok || seen[c.Kind] {
			errs = append(errs, fmt.Errorf("%s.kind: %q is not an item of the pack, or has a policy already", field, c.Kind))
		}
		seen[c.Kind] = true
		errs = append(errs, c.Validate(field))
	}
	return errors.Join(errs...)
}

// Validate checks the policy alone, naming each bad field under field.
func (c CriticalPolicy) Validate(field string) error {
	var errs []error
	switch c.Type {
	case UniquePersistent, RegenerativeUnique:
		if c.Quota != 0 {
			errs = append(errs, fmt.Errorf("%s.quota: only an %s policy has a quota", field, InstanceQuota))
		}
	case InstanceQuota:
		if c.Quota < 1 || c.Quota > len(c.Anchors) {
			errs = append(errs, fmt.Errorf("%s.quota: %d is not within 1 to the %d anchors", field, c.Quota, len(c.Anchors)))
		}
	default:
		errs = append(errs, fmt.Errorf("%s.type: %q is not one of %v", field, c.Type, PolicyTypes))
	}
	if len(c.Anchors) == 0 {
		errs = append(errs, fmt.Errorf("%s.anchors: at least one anchor", field))
	}
	for i, a := range c.Anchors {
		if a.Room != "" && a.Room != AnchorKeyRoom {
			errs = append(errs, fmt.Errorf("%s.anchors[%d].room: %q is not %q", field, i, a.Room, AnchorKeyRoom))
		}
		if a.X < 0 || a.Y < 0 {
			errs = append(errs, fmt.Errorf("%s.anchors[%d]: (%v, %v) is off the map", field, i, a.X, a.Y))
		}
	}
	if c.QuestGate != "" && !slices.Contains(QuestPhases, c.QuestGate) {
		errs = append(errs, fmt.Errorf("%s.questGate: %q is not one of %v", field, c.QuestGate, QuestPhases))
	}
	if c.CooldownTicks < 0 {
		errs = append(errs, fmt.Errorf("%s.cooldownTicks: %d is negative", field, c.CooldownTicks))
	}
	if !(c.OfflineTimeout >= 0) {
		errs = append(errs, fmt.Errorf("%s.offlineTimeout: %v s is negative", field, c.OfflineTimeout))
	}
	return errors.Join(errs...)
}

// Policy is the pack's policy for kind, and whether the kind is critical.
func (p *Pack) Policy(kind string) (CriticalPolicy, bool) {
	for _, c := range p.Critical {
		if c.Kind == kind {
			return c, true
		}
	}
	return CriticalPolicy{}, false
}
