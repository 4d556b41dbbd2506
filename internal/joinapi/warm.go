package joinapi

import (
	"context"
	"errors"
	"maps"
	"slices"
	"sync"
	"time"

	"github.com/go-logr/logr"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	gamev1 "github.com/roomkeeper/roomkeeper/api/v1"
	"github.com/roomkeeper/roomkeeper/internal/instanced"
)

// A party entering an instanced map with a warm pool (spec.maps[].warm)
// claims a Ready instance of it instead of starting one (the rules are
// internal/instanced's pool.go): no pod to wait for. The claim is one
// update of the instance with the resourceVersion this replica read, so
// two parties never claim one: the loser's update is a conflict and it
// tries the next. Members of one party meet on one instance: the party's
// instance is looked up by its label first; this replica remembers what
// it claimed and started until its cache has it (claimBook); and every replica tries
// the pool in the same order for one party (instanced.ClaimOrder), so
// members entering at once on two replicas race for the same instance,
// and the one who loses finds it is its own party's.

// claimMemory is how long a replica remembers a claim or a start: far
// longer than its cache takes to see it.
const claimMemory = time.Minute

// claimBook is the party instances this replica claimed or started
// lately. Its lock serialises claims and starts on the replica, and the
// budgets count what it remembers as well as what the cache has, so a
// burst of entries on one replica never passes a budget (across replicas
// the cache's lag may let it pass by a few).
type claimBook struct {
	mu sync.Mutex
	// written are the instances claimed or started, by name: each as this
	// replica wrote it (its party label says whose), and when.
	written map[string]written
}

type written struct {
	mi *gamev1.MapInstance
	at time.Time
}

// remember records mi, just claimed or started, and forgets what is older
// than claimMemory.
func (b *claimBook) remember(mi *gamev1.MapInstance, now time.Time) {
	if b.written == nil {
		b.written = map[string]written{}
	}
	maps.DeleteFunc(b.written, func(_ string, w written) bool { return now.Sub(w.at) > claimMemory })
	b.written[mi.Name] = written{mi: mi.DeepCopy(), at: now}
}

// recent are the instances of map mapName this replica wrote within
// claimMemory of now.
func (b *claimBook) recent(mapName string, now time.Time) []*gamev1.MapInstance {
	var out []*gamev1.MapInstance
	for _, w := range b.written {
		if now.Sub(w.at) <= claimMemory && w.mi.Spec.MapName == mapName {
			out = append(out, w.mi)
		}
	}
	return out
}

// withRemembered is instances (a map's, from the cache) with what this
// replica claimed or started of that map lately in place of the cache's
// copy, or added where the cache has none yet. An instance deleted within
// claimMemory of its start still counts until then: a budget errs on the
// strict side.
func (b *claimBook) withRemembered(instances []gamev1.MapInstance, mapName string, now time.Time) []gamev1.MapInstance {
	out := slices.Clone(instances)
	for _, mi := range b.recent(mapName, now) {
		if i := slices.IndexFunc(out, func(c gamev1.MapInstance) bool { return c.Name == mi.Name }); i >= 0 {
			out[i] = *mi
			continue
		}
		out = append(out, *mi)
	}
	return out
}

// The results of a warm claim, the result label of
// roomkeeper_join_warm_claims_total.
const (
	claimWarm = "claimed"
	claimCold = "cold"
)

// warmInstance returns the party's instance of the instanced map m when
// it has one (found by its label, or remembered), else one it claims from
// the map's warm pool; nil when there is neither (the party starts one
// cold). A claim is counted against the party's creator like a start.
func (h *Handler) warmInstance(ctx context.Context, room *gamev1.GameRoom, m gamev1.GameMap, p entering) (*gamev1.MapInstance, error) {
	if mi, err := h.labelledInstance(ctx, room, m.Name, p.label); mi != nil || err != nil {
		return mi, err
	}
	if m.Warm == 0 {
		return nil, nil
	}
	h.claims.mu.Lock() // one claim at a time on this replica: a member waits for its party's
	defer h.claims.mu.Unlock()
	if mi := h.rememberedClaim(ctx, room, m.Name, p.label); mi != nil {
		return mi, nil
	}
	if err := h.checkBudget(ctx, room, m.Name, p.creator, true); err != nil {
		return nil, err
	}
	mi, err := h.claimWarm(ctx, room, m.Name, p)
	switch {
	case err != nil:
		return nil, err
	case mi == nil:
		warmClaims.WithLabelValues(claimCold).Inc()
		logr.FromContextOrDiscard(ctx).V(1).Info("No warm instance to claim: starting one", "map", m.Name)
	default:
		warmClaims.WithLabelValues(claimWarm).Inc()
	}
	return mi, nil
}

// labelledInstance is the party's instance of the map, as the cache has
// it labelled: nil when it has none, or only one being deleted.
func (h *Handler) labelledInstance(ctx context.Context, room *gamev1.GameRoom, mapName, label string) (*gamev1.MapInstance, error) {
	var list gamev1.MapInstanceList
	if err := h.cached.List(ctx, &list, client.InNamespace(room.Namespace),
		client.MatchingLabels{gamev1.LabelRoom: room.Name, gamev1.LabelMap: mapName, gamev1.LabelParty: label}); err != nil {
		return nil, err
	}
	for i := range list.Items {
		if mi := &list.Items[i]; instanced.Owns(room, mapName, label, mi) == nil {
			return mi, nil
		}
	}
	return nil, nil
}

// rememberedClaim is the instance this replica claimed or started lately
// for the party, read from the API server (the cache may not have it yet).
func (h *Handler) rememberedClaim(ctx context.Context, room *gamev1.GameRoom, mapName, label string) *gamev1.MapInstance {
	for _, mine := range h.claims.recent(mapName, h.clock()) {
		if mine.Labels[gamev1.LabelParty] != label {
			continue
		}
		mi := &gamev1.MapInstance{}
		if err := h.live.Get(ctx, client.ObjectKeyFromObject(mine), mi); err == nil && instanced.Owns(room, mapName, label, mi) == nil {
			return mi
		}
	}
	return nil
}

// claimWarm claims one of the map's Ready warm instances for the party,
// trying them in the party's order; nil when none is left.
func (h *Handler) claimWarm(ctx context.Context, room *gamev1.GameRoom, mapName string, p entering) (*gamev1.MapInstance, error) {
	if h.writer == nil {
		return nil, errors.New("the join API has no client to claim MapInstances with")
	}
	var list gamev1.MapInstanceList
	if err := h.cached.List(ctx, &list, client.InNamespace(room.Namespace),
		client.MatchingLabels{gamev1.LabelRoom: room.Name, gamev1.LabelMap: mapName, gamev1.LabelPool: gamev1.PoolWarm}); err != nil {
		return nil, err
	}
	instanced.ClaimOrder(p.label, list.Items)
	for i := range list.Items {
		mi := &list.Items[i]
		if !instanced.Claimable(room, mapName, mi) {
			continue
		}
		won, err := h.claim(ctx, room, mapName, mi, p)
		if err != nil || won != nil {
			return won, err
		}
	}
	return nil, nil
}

// claim updates mi, as this replica read it, to be the party's. It
// returns mi when the claim holds, or when another member of the party
// claimed it first (on another replica); nil when another party did or it
// is gone.
func (h *Handler) claim(ctx context.Context, room *gamev1.GameRoom, mapName string, mi *gamev1.MapInstance, p entering) (*gamev1.MapInstance, error) {
	instanced.Claim(mi, p.label, p.creator, h.clock())
	err := h.writer.Update(ctx, mi, client.FieldOwner(gamev1.FieldManagerOperator))
	switch {
	case err == nil:
		h.claims.remember(mi, h.clock())
		logr.FromContextOrDiscard(ctx).V(1).Info("Claimed a warm MapInstance", "instance", mi.Name)
		return mi, nil
	case apierrors.IsNotFound(err):
		return nil, nil
	case !apierrors.IsConflict(err):
		return nil, err
	}
	current := &gamev1.MapInstance{}
	if err := h.live.Get(ctx, client.ObjectKeyFromObject(mi), current); err != nil {
		return nil, client.IgnoreNotFound(err)
	}
	if instanced.Owns(room, mapName, p.label, current) == nil {
		return current, nil
	}
	return nil, nil
}
