// Package instanced holds the rules of instanced maps, in one place: a map
// with `instanced: true` runs one MapInstance per party, created on demand
// by the join API when a party walks through a portal to it, and deleted by
// the operator once it has had no players for the room's idleTimeout
// (docs/operations.md, "Idle maps and room expiry").
//
//   - who shares an instance: PartyKey;
//   - its name and label: Label, Name (and MaxNameProbes);
//   - how it is built: New;
//   - who may start one, and how many: Budget, Creator (budget.go);
//   - instances started before a party needs one: the warm pools (pool.go);
//   - whose it is: Owns;
//   - when it goes: TrackEmpty, IdleTimeout, Idle (idle.go).
//
// The I/O stays with the callers (internal/joinapi creates and waits,
// controllers delete); the decisions are the pure functions here.
package instanced

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	gamev1 "github.com/roomkeeper/roomkeeper/api/v1"
)

const (
	// MaxNameProbes is how many names a party tries when its name is
	// taken by another party's instance (one in 36^5 per pair).
	MaxNameProbes = 4

	// suffixChars is the length of the random-looking tail of a party
	// MapInstance's name: <room>-<map>-<suffix>, at most 36+1+20+1+5 = 63
	// characters, a valid pod name.
	suffixChars = 5
	// hashDomain prefixes the hashed party key, so a party label is never
	// the plain hash of anything else.
	hashDomain = "roomkeeper.dev/party/v1\x00"
)

// PartyKey names who shares an instance of an instanced map: the members
// of party (the pty of the player's tokens, which the join API signs only
// for a holder of the party's token, docs/joinapi.md "Parties"), or the
// player user alone when it is in no party: strangers are never merged.
// The prefixes keep the kinds apart.
func PartyKey(party, user string) string {
	if party != "" {
		return "party\x00" + party
	}
	return "solo\x00" + user
}

// Label is the value of gamev1.LabelParty for the party key of a room's
// map: 128 bits of a hash, in hex (a valid label value, and the party's id
// does not show).
func Label(room, mapName, key string) string {
	sum := sha256.Sum256([]byte(hashDomain + room + "\x00" + mapName + "\x00" + key))
	return hex.EncodeToString(sum[:16])
}

// Name is the party's MapInstance name at probe: <room>-<map>- and
// suffixChars lowercase letters and digits drawn from a hash of the party
// label and the probe. Every replica of the join API names a party's
// instance alike, so concurrent requests of one party meet on one object.
func Name(room, mapName, label string, probe int) string {
	const alphabet = "abcdefghijklmnopqrstuvwxyz0123456789"
	var p [8]byte
	binary.BigEndian.PutUint64(p[:], uint64(probe))
	sum := sha256.Sum256(append([]byte(label), p[:]...))
	suffix := make([]byte, suffixChars)
	for i := range suffix {
		suffix[i] = alphabet[int(sum[i])%len(alphabet)]
	}
	return gamev1.MapInstanceName(room, mapName) + "-" + string(suffix)
}

// New returns the party's MapInstance called name of the room's instanced
// map m, labelled with the party's label and its creator (Creator).
func New(room *gamev1.GameRoom, m gamev1.GameMap, name, label, creator string) *gamev1.MapInstance {
	mi := gamev1.NewMapInstance(room, m, name)
	mi.Labels[gamev1.LabelParty] = label
	mi.Labels[LabelCreator] = creator
	return mi
}

// Why a MapInstance found under a party's name is not the party's to use.
var (
	// ErrOtherParty: it serves another party, room or map; the party
	// tries its next name.
	ErrOtherParty = errors.New("the name belongs to another party's MapInstance")
	// ErrEarlierRoom: it is a deleted room's of the same name, garbage
	// collected soon.
	ErrEarlierRoom = errors.New("an earlier room's instance is being removed")
	// ErrDeleting: it is the party's, being deleted.
	ErrDeleting = errors.New("the party's instance is being removed")
)

// Owns checks that mi is the party's (label's) instance of the room's map
// mapName, and nil if so.
func Owns(room *gamev1.GameRoom, mapName, label string, mi *gamev1.MapInstance) error {
	switch {
	case mi.Spec.RoomName != room.Name || mi.Spec.MapName != mapName || !mi.Spec.Instanced ||
		mi.Labels[gamev1.LabelParty] != label:
		return ErrOtherParty
	case !metav1.IsControlledBy(mi, room):
		return ErrEarlierRoom
	case mi.DeletionTimestamp != nil:
		return ErrDeleting
	}
	return nil
}
