package instanced

import (
	"crypto/sha256"
	"slices"
	"strconv"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	gamev1 "github.com/roomkeeper/roomkeeper/api/v1"
)

// Warm pools (spec.maps[].warm). The operator keeps that many Ready,
// unclaimed MapInstances of an instanced map (labelled LabelPool=PoolWarm);
// a party entering claims one by taking the label off and putting its
// party label on, in one update that carries the resourceVersion it read,
// so two parties never claim the same one (the API server refuses the
// second with a conflict); then the operator starts a replacement.

// PoolCreator is the LabelCreator of a warm instance: the pool's, until a
// party claims it and becomes its creator.
const PoolCreator = "pool"

// IsWarm reports whether mi is an unclaimed warm instance.
func IsWarm(mi *gamev1.MapInstance) bool {
	return mi.Labels[gamev1.LabelPool] == gamev1.PoolWarm
}

// NewWarm returns the warm instance called name of the room's instanced
// map m (WarmNames).
func NewWarm(room *gamev1.GameRoom, m gamev1.GameMap, name string) *gamev1.MapInstance {
	mi := New(room, m, name, "", PoolCreator)
	delete(mi.Labels, gamev1.LabelParty)
	mi.Labels[gamev1.LabelPool] = gamev1.PoolWarm
	return mi
}

// WarmNames are the names of n new warm instances of a room's map: the
// first of its warm names (the party instances' shape, drawn from a
// counter) that none of the room's instances has. The names are the same
// on every call, so a create the operator's cache has not seen yet is
// made again under the same name and refused as existing: a lagging cache
// never starts a pool twice.
func WarmNames(room, mapName string, instances []gamev1.MapInstance, n int) []string {
	taken := map[string]bool{}
	for i := range instances {
		taken[instances[i].Name] = true
	}
	var names []string
	for i := 0; len(names) < n; i++ {
		if name := Name(room, mapName, "warm\x00"+strconv.Itoa(i), 0); !taken[name] {
			names = append(names, name)
		}
	}
	return names
}

// Claimable reports whether a party may claim mi now: an unclaimed warm
// instance of the room, not being deleted, Ready with an endpoint.
func Claimable(room *gamev1.GameRoom, mapName string, mi *gamev1.MapInstance) bool {
	return IsWarm(mi) && mi.Spec.RoomName == room.Name && mi.Spec.MapName == mapName && mi.Spec.Instanced &&
		metav1.IsControlledBy(mi, room) && mi.DeletionTimestamp.IsZero() && mi.Status.Endpoint != "" &&
		meta.IsStatusConditionTrue(mi.Status.Conditions, gamev1.ConditionReady)
}

// ClaimOrder sorts the candidates a party tries to claim by a hash of
// the party's label and each name (rendezvous hashing): members of one
// party entering at once, on one join API replica or several, try the
// same instance first and meet there, and different parties spread over
// the pool instead of all racing for one.
func ClaimOrder(label string, candidates []gamev1.MapInstance) {
	rank := func(mi *gamev1.MapInstance) string {
		sum := sha256.Sum256([]byte(label + "\x00" + mi.Name))
		return string(sum[:])
	}
	slices.SortFunc(candidates, func(a, b gamev1.MapInstance) int { return strings.Compare(rank(&a), rank(&b)) })
}

// Claim makes mi the party's (label, creator) at now: it leaves the pool
// and starts its idle clock afresh (TrackEmpty), the claim's time in
// AnnotationClaimedAt (an annotation change wakes the MapInstance's
// controller, which tracks its emptiness from then).
func Claim(mi *gamev1.MapInstance, label, creator string, now time.Time) {
	delete(mi.Labels, gamev1.LabelPool)
	mi.Labels[gamev1.LabelParty] = label
	mi.Labels[LabelCreator] = creator
	if mi.Annotations == nil {
		mi.Annotations = map[string]string{}
	}
	mi.Annotations[gamev1.AnnotationClaimedAt] = now.UTC().Format(time.RFC3339)
}

// Pool is what a map's warm pool holds now, of the room's instances.
type Pool struct {
	// Ready and Starting are the unclaimed instances, Ready or not yet.
	Ready, Starting []gamev1.MapInstance
	// Instances counts all the map's instances not being deleted, warm
	// or the parties': what parties.maxInstancesPerMap bounds.
	Instances int
}

// PoolOf is the warm pool of map mapName among the room's instances.
func PoolOf(mapName string, instances []gamev1.MapInstance) Pool {
	var p Pool
	for i := range instances {
		mi := &instances[i]
		if mi.Spec.MapName != mapName || !mi.Spec.Instanced || !mi.DeletionTimestamp.IsZero() {
			continue
		}
		p.Instances++
		switch {
		case !IsWarm(mi):
		case meta.IsStatusConditionTrue(mi.Status.Conditions, gamev1.ConditionReady):
			p.Ready = append(p.Ready, *mi)
		default:
			p.Starting = append(p.Starting, *mi)
		}
	}
	return p
}

// Unclaimed counts the pool's instances, Ready or starting.
func (p Pool) Unclaimed() int { return len(p.Ready) + len(p.Starting) }

// Refill is how many warm instances to start for a pool that keeps warm,
// within the map's cap of perMap instances.
func (p Pool) Refill(warm, perMap int) int {
	return max(0, min(warm-p.Unclaimed(), perMap-p.Instances))
}

// Surplus are the unclaimed instances past warm to delete, those still
// starting first.
func (p Pool) Surplus(warm int) []gamev1.MapInstance {
	n := p.Unclaimed() - max(warm, 0)
	if n <= 0 {
		return nil
	}
	all := append(slices.Clone(p.Starting), p.Ready...)
	return all[:n]
}
