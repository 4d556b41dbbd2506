package instanced

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"strings"

	gamev1 "github.com/roomkeeper/roomkeeper/api/v1"
)

// Who may start a party instance, and how many. Anyone may create a party
// (or enter alone, which is a party of one), and each instance is a pod,
// so starting one is budgeted per identity (docs/operations.md,
// "Multi-tenancy and limits"):
//
//   - a map runs at most its room's parties.maxInstancesPerMap party
//     instances (100 unless set): without a bound anyone could start pods
//     by the hundred;
//   - guests cost nothing to make, so all guest-made instances of a map
//     share one pool of MaxGuestPerMap, and the guests of one network
//     address start at most MaxGuestPerAddress of them;
//   - a keyed user starts at most MaxPerUser of a map's instances; joining
//     an instance another member started costs nothing.
//
// Each instance carries its creator (LabelCreator) so the budgets are
// counted from the cluster's state, by every replica of the join API alike.

// LabelCreator is on a party MapInstance: who started it, GuestsCreator
// (followed by a hash of the guests' address when known) or a hash of the
// keyed user (neither the user id nor the address shows).
const LabelCreator = "game.roomkeeper.dev/creator"

// GuestsCreator is the creator of every guest-made instance.
const GuestsCreator = "guests"

const (
	// MaxGuestPerMap bounds the party instances guests start on one map.
	MaxGuestPerMap = 10
	// MaxGuestPerAddress bounds those the guests of one network address
	// (an IPv4 address or an IPv6 /64) start, so that one address cannot
	// take the guests' whole pool.
	MaxGuestPerAddress = 2
	// MaxPerUser bounds the party instances one keyed user starts on one
	// map (a player in one party at a time needs one; two let it move on
	// to another party before the first instance is idle).
	MaxPerUser = 2
	// creatorHashDomain prefixes the hashed user id.
	creatorHashDomain = "roomkeeper.dev/creator/v1\x00"
)

// Creator is the LabelCreator value of instances user starts in room;
// for a guest, address (as the room server saw it, hashed: the token's
// adr; "" when unknown) names the guests of its address.
func Creator(room, user string, guest bool, address string) string {
	switch {
	case guest && address == "":
		return GuestsCreator
	case guest:
		sum := sha256.Sum256([]byte(creatorHashDomain + room + "\x00address\x00" + address))
		return GuestsCreator + "-" + hex.EncodeToString(sum[:8])
	}
	sum := sha256.Sum256([]byte(creatorHashDomain + room + "\x00" + user))
	return hex.EncodeToString(sum[:16])
}

// guestMade reports whether creator is guests'.
func guestMade(creator string) bool {
	return creator == GuestsCreator || strings.HasPrefix(creator, GuestsCreator+"-")
}

// Why a party may not start another instance.
var (
	// ErrMapFull: the map runs all the party instances its room allows.
	ErrMapFull = errors.New("the map runs all the party instances it may")
	// ErrGuestsFull: guests started MaxGuestPerMap of the map's instances.
	ErrGuestsFull = errors.New("guests started all the party instances they may on this map")
	// ErrAddressFull: the guests of one address started
	// MaxGuestPerAddress of the map's instances.
	ErrAddressFull = errors.New("the guests of this address started all the party instances they may on this map")
	// ErrUserFull: the user started MaxPerUser of the map's instances.
	ErrUserFull = errors.New("the player started all the party instances it may on this map")
)

// Budget says whether creator may start another party instance of a map
// whose instances are instances, of which it may run perMap: nil, or
// which budget is spent. Instances being deleted count no more.
func Budget(instances []gamev1.MapInstance, creator string, perMap int) error {
	total, guests, mine := 0, 0, 0
	for i := range instances {
		mi := &instances[i]
		if !mi.Spec.Instanced || !mi.DeletionTimestamp.IsZero() {
			continue
		}
		total++
		if guestMade(mi.Labels[LabelCreator]) {
			guests++
		}
		if mi.Labels[LabelCreator] == creator {
			mine++
		}
	}
	guest := guestMade(creator)
	switch {
	case total >= perMap:
		return ErrMapFull
	case guest && guests >= MaxGuestPerMap:
		return ErrGuestsFull
	case guest && creator != GuestsCreator && mine >= MaxGuestPerAddress:
		return ErrAddressFull
	case !guest && mine >= MaxPerUser:
		return ErrUserFull
	}
	return nil
}
