package joinapi

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"time"

	"github.com/go-logr/logr"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	gamev1 "github.com/roomkeeper/roomkeeper/api/v1"
	"github.com/roomkeeper/roomkeeper/internal/instanced"
	"github.com/roomkeeper/roomkeeper/internal/token"
)

// The destination route: when a player walks into a portal, the map pod
// asks where the portal's map runs. Its request is signed with the room's
// token key, which only the room's pods and the manager hold.

const (
	// destinationReadyTimeout is how long a destination request waits for a
	// party's MapInstance to become Ready: a new one needs its pod started.
	destinationReadyTimeout = 30 * time.Second
	// destinationTimeout bounds a whole destination request: the wait and
	// the reads and the create around it.
	destinationTimeout = destinationReadyTimeout + 5*time.Second
	// readyPollInterval is how often the wait reads the MapInstance from
	// the manager's cache (memory, not the API server).
	readyPollInterval = 100 * time.Millisecond

	// DefaultMaxDestinationsInFlight bounds the destination requests
	// answered at once when Options leave it zero. Each may wait up to
	// destinationReadyTimeout; more than this answer rate_limited.
	DefaultMaxDestinationsInFlight = 256
)

// destination answers POST /v1/internal/.../destinations: it checks the
// room's token, then finds the map's MapInstance, creating an instanced
// map's for the party and waiting until it is Ready. Nothing scarce is
// spent before the caller is authenticated: the body is read under the
// server's read deadline and size cap, the token verified, and only then
// is one of the route's slots taken for the wait (a caller that stalls
// its body, or has no valid token, holds no slot).
func (h *Handler) destination(r *http.Request) (int, any, error) {
	room, req, claims, err := h.authenticateDestination(r)
	if err != nil {
		return 0, nil, err
	}
	release, err := h.takeDestinationSlot()
	if err != nil {
		return 0, nil, err
	}
	defer release()
	m, ok := room.Spec.Map(req.Map)
	if !ok {
		return 0, nil, fail(CodeBadRequest, "room %s has no map %s", room.Name, req.Map)
	}
	ctx := r.Context()
	// The arriving player holds its seat for its transfer token's life.
	until := h.clock().Add(ticketTTL(room))
	var mi *gamev1.MapInstance
	if m.Instanced {
		mi, err = h.partyInstance(ctx, room, m, partyOf(room, m, claims))
		if err == nil {
			err = h.holdSeat(room, mi, until)
		}
	} else {
		mi, err = h.seatOn(ctx, room, m, "", claims.Party, until)
	}
	if err != nil {
		return 0, nil, err
	}
	logr.FromContextOrDiscard(ctx).V(1).Info("Resolved a destination",
		"from", claims.From, "user", claims.Subject, "character", claims.Character, "instance", mi.Name)
	return http.StatusOK, DestinationResponse{Map: m.Name, Instance: mi.Name, Endpoint: mi.Status.Endpoint}, nil
}

// authenticateDestination reads the request and verifies its token. A
// caller without a valid token learns nothing of the room: a room that
// does not exist, or has no keys yet, is the same unauthorized as a
// forged token.
func (h *Handler) authenticateDestination(r *http.Request) (*gamev1.GameRoom, DestinationRequest, token.Claims, error) {
	var req DestinationRequest
	raw, ok := bearer(r)
	if !ok {
		return nil, req, token.Claims{}, fail(CodeUnauthorized, "send a destination token signed with the room's key as Authorization: Bearer <token>")
	}
	if err := decodeBody(r, &req); err != nil {
		return nil, req, token.Claims{}, err
	}
	if req.Map == "" {
		return nil, req, token.Claims{}, fail(CodeBadRequest, "map is required")
	}
	room, err := h.room(r.Context(), r.PathValue("ns"), r.PathValue("room"))
	if err != nil {
		return nil, req, token.Claims{}, hideRoom(err)
	}
	claims, err := h.verifyDestination(r.Context(), room, raw, req)
	if err != nil {
		return nil, req, token.Claims{}, hideRoom(err)
	}
	return room, req, claims, nil
}

// hideRoom turns what would tell an unauthenticated caller about the room
// (that it does not exist, or has no keys yet) into unauthorized.
func hideRoom(err error) error {
	var e *apiError
	if errors.As(err, &e) && (e.body.Code == CodeRoomNotFound || e.body.Code == CodeRoomNotReady) {
		return fail(CodeUnauthorized, "the destination token is not valid for this room and map").because(err)
	}
	return err
}

// takeDestinationSlot bounds the authenticated destination requests in
// flight. They are not limited per IP (map pods share node addresses on
// some networks) but they may wait for a map to start, so their number is
// what must stay bounded.
func (h *Handler) takeDestinationSlot() (release func(), err error) {
	select {
	case h.internal <- struct{}{}:
		return func() { <-h.internal }, nil
	default:
		return nil, fail(CodeRateLimited, "too many destination requests in flight").retryIn(1)
	}
}

// maxDestinationTokenLifetime bounds how long a destination token may
// be valid: internal/directory signs them for 10 s, so a token that claims
// longer was not made by a room server of this project.
const maxDestinationTokenLifetime = time.Minute

// verifyDestination checks the bearer token: a destination token of this
// room for the requested map, signed with the room's current or previous
// key, not expired, of the requested party.
func (h *Handler) verifyDestination(ctx context.Context, room *gamev1.GameRoom, raw string, req DestinationRequest) (token.Claims, error) {
	keys, err := h.roomKeys(ctx, room)
	if err != nil {
		return token.Claims{}, err
	}
	claims, err := token.NewVerifier(token.StaticKeys(keys), h.clock).Verify(raw,
		token.Expect{Room: room.Name, Map: req.Map, Types: []string{token.TypeDestination}, MaxLifetime: maxDestinationTokenLifetime})
	switch {
	case errors.Is(err, token.ErrExpired):
		return token.Claims{}, fail(CodeUnauthorized, "the destination token expired").because(err)
	case err != nil:
		return token.Claims{}, fail(CodeUnauthorized, "the destination token is not valid for this room and map").because(err)
	case req.Party != "" && req.Party != claims.Party:
		return token.Claims{}, fail(CodeUnauthorized, "the destination token is for another party")
	}
	return claims, nil
}

// entering is the party entering an instanced map: its label (from its
// party key) and who would start its instance (internal/instanced's rules).
type entering struct {
	label, creator string
}

// partyOf is the party of the player a destination token names: its
// party, or itself alone; a guest (user id guest-...) starts instances
// from the guests' budget.
func partyOf(room *gamev1.GameRoom, m gamev1.GameMap, claims token.Claims) entering {
	guest := strings.HasPrefix(claims.Subject, GuestPrefix)
	key := instanced.PartyKey(claims.Party, claims.Subject)
	return entering{label: instanced.Label(room.Name, m.Name, key), creator: instanced.Creator(room.Name, claims.Subject, guest, claims.Address)}
}

// partyInstance returns the party's MapInstance of the instanced map m once
// it is Ready, creating it when it does not exist and the party's creator
// has the budget (the rules of instanced maps are internal/instanced's).
// Concurrent requests of one party, on this replica or another, end up
// with the same one: the name is a function of the party, and a create
// that finds it exists uses the existing one.
func (h *Handler) partyInstance(ctx context.Context, room *gamev1.GameRoom, m gamev1.GameMap, p entering) (*gamev1.MapInstance, error) {
	if mi, err := h.warmInstance(ctx, room, m, p); mi != nil || err != nil {
		if err != nil {
			return nil, err
		}
		return h.awaitReady(ctx, room, mi, p.label)
	}
	for probe := range instanced.MaxNameProbes {
		name := instanced.Name(room.Name, m.Name, p.label, probe)
		mi, err := h.findOrCreate(ctx, room, m, name, p)
		switch {
		case errors.Is(err, instanced.ErrOtherParty):
			continue
		case err != nil:
			return nil, err
		}
		return h.awaitReady(ctx, room, mi, p.label)
	}
	return nil, fail(CodeInternal, "internal error").
		because(errors.New("every name of the party's MapInstance is taken by another party"))
}

// findOrCreate returns the MapInstance called name if it is the party's
// (instanced.ErrOtherParty if it is not), creating it when there is none.
func (h *Handler) findOrCreate(ctx context.Context, room *gamev1.GameRoom, m gamev1.GameMap, name string, p entering) (*gamev1.MapInstance, error) {
	key := types.NamespacedName{Namespace: room.Namespace, Name: name}
	mi := &gamev1.MapInstance{}
	err := h.cached.Get(ctx, key, mi)
	switch {
	case err == nil:
		return mi, owns(room, m.Name, p.label, mi)
	case !apierrors.IsNotFound(err):
		return nil, err
	case h.writer == nil:
		return nil, errors.New("the join API has no client to create MapInstances with")
	}
	h.claims.mu.Lock() // the budget counts this replica's starts in flight
	defer h.claims.mu.Unlock()
	if err := h.checkBudget(ctx, room, m.Name, p.creator, false); err != nil {
		return nil, err
	}
	mi = instanced.New(room, m, name, p.label, p.creator)
	// A party's MapInstance is the operator's object like any other.
	err = h.writer.Create(ctx, mi, client.FieldOwner(gamev1.FieldManagerOperator))
	switch {
	case err == nil:
		h.claims.remember(mi, h.clock())
		logr.FromContextOrDiscard(ctx).V(1).Info("Created a party's MapInstance", "instance", name)
		return mi, nil
	case !apierrors.IsAlreadyExists(err):
		return nil, err
	}
	// Another request created it first, too recently for the cache: read
	// it from the API server once.
	if err := h.live.Get(ctx, key, mi); err != nil {
		return nil, err
	}
	return mi, owns(room, m.Name, p.label, mi)
}

// checkBudget refuses a new party instance when its creator's budget, or
// the map's, is spent (instanced.Budget; counted in the cache and what
// this replica claimed and started since, under h.claims' lock: see
// claimBook): room_full, counted by budget in
// roomkeeper_join_party_instances_refused_total. A claim of a warm
// instance (claiming) starts nothing, so the map's cap does not refuse
// it; the creator's own budget does (a user cannot take the whole pool).
func (h *Handler) checkBudget(ctx context.Context, room *gamev1.GameRoom, mapName, creator string, claiming bool) error {
	var list gamev1.MapInstanceList
	if err := h.cached.List(ctx, &list, client.InNamespace(room.Namespace),
		client.MatchingLabels{gamev1.LabelRoom: room.Name, gamev1.LabelMap: mapName}); err != nil {
		return err
	}
	perMap := room.Spec.Parties.MaxInstancesPerMapOrDefault()
	instances := h.claims.withRemembered(list.Items, mapName, h.clock())
	switch err := instanced.Budget(instances, creator, perMap); {
	case claiming && errors.Is(err, instanced.ErrMapFull):
		return nil
	case errors.Is(err, instanced.ErrMapFull):
		partyInstancesRefused.WithLabelValues(budgetMap).Inc()
		return fail(CodeRoomFull, "map %s runs the %d party instances it may: try again when one has closed", mapName, perMap)
	case errors.Is(err, instanced.ErrGuestsFull):
		partyInstancesRefused.WithLabelValues(budgetGuests).Inc()
		return fail(CodeRoomFull, "guests share %d instances of map %s, all running: try again when one has closed, or sign in", instanced.MaxGuestPerMap, mapName)
	case errors.Is(err, instanced.ErrAddressFull):
		partyInstancesRefused.WithLabelValues(budgetAddress).Inc()
		return fail(CodeRoomFull, "guests from your address started %d instances of map %s already: join one of them, or sign in", instanced.MaxGuestPerAddress, mapName)
	case errors.Is(err, instanced.ErrUserFull):
		partyInstancesRefused.WithLabelValues(budgetUser).Inc()
		return fail(CodeRoomFull, "you started %d instances of map %s already: join one of them, or wait until one has closed", instanced.MaxPerUser, mapName)
	}
	return nil
}

// owns is instanced.Owns with the answer a player gets: ErrOtherParty as
// it is (the next name is tried), room_not_ready when the instance is an
// earlier room's (same name, garbage collected soon) or is being deleted.
func owns(room *gamev1.GameRoom, mapName, label string, mi *gamev1.MapInstance) error {
	switch err := instanced.Owns(room, mapName, label, mi); {
	case errors.Is(err, instanced.ErrEarlierRoom):
		return fail(CodeRoomNotReady, "an earlier room's instance of map %s is being removed", mapName)
	case errors.Is(err, instanced.ErrDeleting):
		return fail(CodeRoomNotReady, "the party's instance of map %s is being removed", mapName)
	default:
		return err
	}
}

// awaitReady polls the cache until mi is Ready with an endpoint (or
// quarantined, or gone), for at most h.readyWait.
func (h *Handler) awaitReady(ctx context.Context, room *gamev1.GameRoom, mi *gamev1.MapInstance, label string) (*gamev1.MapInstance, error) {
	ctx, cancel := context.WithTimeout(ctx, h.readyWait)
	defer cancel()
	tick := time.NewTicker(readyPollInterval)
	defer tick.Stop()
	key := client.ObjectKeyFromObject(mi)
	for {
		switch e := h.joinable(room, mi); {
		case e == nil:
			return mi, nil
		case e.body.Code != CodeRoomNotReady: // quarantined: waiting will not help
			return nil, e
		}
		select {
		case <-ctx.Done():
			return nil, fail(CodeRoomNotReady, "map %s did not become ready within %s", mi.Spec.MapName, h.readyWait).
				because(ctx.Err())
		case <-h.stopping:
			return nil, fail(CodeRoomNotReady, "the join API is stopping: ask again")
		case <-tick.C:
		}
		next := &gamev1.MapInstance{}
		err := h.cached.Get(ctx, key, next)
		switch {
		case apierrors.IsNotFound(err): // just created: the cache has not seen it yet
			continue
		case err != nil:
			return nil, err
		}
		if err := owns(room, mi.Spec.MapName, label, next); err != nil {
			if errors.Is(err, instanced.ErrOtherParty) { // deleted and taken by another party meanwhile
				return nil, fail(CodeRoomNotReady, "the party's instance of map %s is being removed", mi.Spec.MapName)
			}
			return nil, err
		}
		mi = next
	}
}
