package joinapi

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"net/http"
	"strconv"
	"time"

	"github.com/go-logr/logr"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	gamev1 "github.com/roomkeeper/roomkeeper/api/v1"
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

	// PartyWindow groups the players who enter one instanced map without a
	// party: those entering from the same source MapInstance within the
	// same window (wall time cut into PartyWindow slices) share an instance.
	PartyWindow = 60 * time.Second

	// partySuffixChars is the length of the random-looking tail of a party
	// MapInstance's name: <room>-<map>-<suffix>, at most 36+1+20+1+5 = 63
	// characters, a valid pod name.
	partySuffixChars = 5
	// maxNameProbes is how many names a party tries when its name is
	// taken by another party's instance (one in 36^5 per pair).
	maxNameProbes = 4
	// partyHashDomain prefixes the hashed party key, so a party label is
	// never the plain hash of anything else.
	partyHashDomain = "roomkeeper.dev/party/v1\x00"
)

// destination answers POST /v1/internal/.../destinations: it checks the
// room's token, then finds the map's MapInstance, creating an instanced
// map's for the party and waiting until it is Ready.
func (h *Handler) destination(r *http.Request) (int, any, error) {
	var req DestinationRequest
	if err := decodeBody(r, &req); err != nil {
		return 0, nil, err
	}
	if req.Map == "" {
		return 0, nil, fail(CodeBadRequest, "map is required")
	}
	raw, ok := bearer(r)
	if !ok {
		return 0, nil, fail(CodeUnauthorized, "send a destination token signed with the room's key as Authorization: Bearer <token>")
	}
	ctx := r.Context()
	room, err := h.room(ctx, r.PathValue("ns"), r.PathValue("room"))
	if err != nil {
		return 0, nil, err
	}
	claims, err := h.verifyDestination(ctx, room, raw, req)
	if err != nil {
		return 0, nil, err
	}
	m, ok := roomMap(room, req.Map)
	if !ok {
		return 0, nil, fail(CodeBadRequest, "room %s has no map %s", room.Name, req.Map)
	}
	var mi *gamev1.MapInstance
	if m.Instanced {
		mi, err = h.partyInstance(ctx, room, m, partyKey(claims, h.clock()))
	} else {
		mi, err = h.readyInstance(ctx, room, m.Name)
	}
	if err != nil {
		return 0, nil, err
	}
	logr.FromContextOrDiscard(ctx).V(1).Info("Resolved a destination",
		"from", claims.From, "user", claims.Subject, "character", claims.Character, "instance", mi.Name)
	return http.StatusOK, DestinationResponse{Map: m.Name, Instance: mi.Name, Endpoint: mi.Status.Endpoint}, nil
}

// verifyDestination checks the bearer token: a destination token of this
// room for the requested map, signed with the room's current or previous
// key, not expired, of the requested party.
func (h *Handler) verifyDestination(ctx context.Context, room *gamev1.GameRoom, raw string, req DestinationRequest) (token.Claims, error) {
	keys, err := h.roomKeys(ctx, room)
	if err != nil {
		return token.Claims{}, err
	}
	claims, err := token.NewVerifier(token.StaticKeys(keys), h.clock).Verify(raw,
		token.Expect{Room: room.Name, Map: req.Map, Types: []string{token.TypeDestination}})
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

// roomMap is the room's map called name.
func roomMap(room *gamev1.GameRoom, name string) (gamev1.GameMap, bool) {
	for _, m := range room.Spec.Maps {
		if m.Name == name {
			return m, true
		}
	}
	return gamev1.GameMap{}, false
}

// partyKey names the party entering an instanced map: the token's party,
// or else everyone entering from the same source MapInstance in the same
// PartyWindow. The prefixes keep the two kinds apart.
func partyKey(c token.Claims, now time.Time) string {
	if c.Party != "" {
		return "party\x00" + c.Party
	}
	window := now.Unix() / int64(PartyWindow/time.Second)
	return "from\x00" + c.From + "\x00" + strconv.FormatInt(window, 10)
}

// partyLabel is the value of gamev1.LabelParty for a party of a room's
// map: 128 bits of a hash, in hex (a valid label value, and the party's
// id does not show).
func partyLabel(room, mapName, key string) string {
	sum := sha256.Sum256([]byte(partyHashDomain + room + "\x00" + mapName + "\x00" + key))
	return hex.EncodeToString(sum[:16])
}

// partyInstanceName is the party's MapInstance name at probe: <room>-<map>-
// and partySuffixChars lowercase letters and digits drawn from a hash of
// the party label and the probe.
func partyInstanceName(room, mapName, label string, probe int) string {
	const alphabet = "abcdefghijklmnopqrstuvwxyz0123456789"
	var p [8]byte
	binary.BigEndian.PutUint64(p[:], uint64(probe))
	sum := sha256.Sum256(append([]byte(label), p[:]...))
	suffix := make([]byte, partySuffixChars)
	for i := range suffix {
		suffix[i] = alphabet[int(sum[i])%len(alphabet)]
	}
	return gamev1.MapInstanceName(room, mapName) + "-" + string(suffix)
}

// partyInstance returns the party's MapInstance of the instanced map m once
// it is Ready, creating it when it does not exist. Concurrent requests of
// one party, on this replica or another, end up with the same one: the
// name is a function of the party, and a create that finds it exists uses
// the existing one.
func (h *Handler) partyInstance(ctx context.Context, room *gamev1.GameRoom, m gamev1.GameMap, key string) (*gamev1.MapInstance, error) {
	label := partyLabel(room.Name, m.Name, key)
	for probe := range maxNameProbes {
		name := partyInstanceName(room.Name, m.Name, label, probe)
		mi, err := h.findOrCreate(ctx, room, m, name, label)
		switch {
		case errors.Is(err, errOtherParty):
			continue
		case err != nil:
			return nil, err
		}
		return h.awaitReady(ctx, room, mi, label)
	}
	return nil, fail(CodeInternal, "internal error").
		because(errors.New("every name of the party's MapInstance is taken by another party"))
}

// errOtherParty says a party's MapInstance name is taken by an instance of
// another party, room or map: the next probe's name is tried.
var errOtherParty = errors.New("the name belongs to another party's MapInstance")

// findOrCreate returns the MapInstance called name if it is the party's
// (errOtherParty if it is not), creating it when there is none.
func (h *Handler) findOrCreate(ctx context.Context, room *gamev1.GameRoom, m gamev1.GameMap, name, label string) (*gamev1.MapInstance, error) {
	key := types.NamespacedName{Namespace: room.Namespace, Name: name}
	mi := &gamev1.MapInstance{}
	err := h.cached.Get(ctx, key, mi)
	switch {
	case err == nil:
		return mi, partyOwns(room, m.Name, label, mi)
	case !apierrors.IsNotFound(err):
		return nil, err
	case h.writer == nil:
		return nil, errors.New("the join API has no client to create MapInstances with")
	}
	if err := h.checkInstanceCap(ctx, room, m.Name); err != nil {
		return nil, err
	}
	mi = gamev1.NewMapInstance(room, m, name)
	mi.Labels[gamev1.LabelParty] = label
	// A party's MapInstance is the operator's object like any other.
	err = h.writer.Create(ctx, mi, client.FieldOwner(gamev1.FieldManagerOperator))
	switch {
	case err == nil:
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
	return mi, partyOwns(room, m.Name, label, mi)
}

// MaxPartyInstances bounds the party MapInstances of one instanced map:
// each is a pod, and a party id is the player's to choose, so without a
// bound anyone could start pods by the hundred.
const MaxPartyInstances = 100

// checkInstanceCap refuses a new party instance once the map has
// MaxPartyInstances of them (counted in the cache, so a burst of creates
// may pass it by a few).
func (h *Handler) checkInstanceCap(ctx context.Context, room *gamev1.GameRoom, mapName string) error {
	var list gamev1.MapInstanceList
	if err := h.cached.List(ctx, &list, client.InNamespace(room.Namespace),
		client.MatchingLabels{gamev1.LabelRoom: room.Name, gamev1.LabelMap: mapName}); err != nil {
		return err
	}
	n := 0
	for _, mi := range list.Items {
		if mi.Spec.Instanced && mi.DeletionTimestamp.IsZero() {
			n++
		}
	}
	if n >= MaxPartyInstances {
		return fail(CodeRoomNotReady, "map %s already runs %d party instances, its maximum: try again when one has closed", mapName, n)
	}
	return nil
}

// partyOwns checks that mi is the party's instance of the room's map:
// errOtherParty when it serves another party, room or map, room_not_ready
// when it is an earlier room's (same name, garbage collected soon) or is
// being deleted.
func partyOwns(room *gamev1.GameRoom, mapName, label string, mi *gamev1.MapInstance) error {
	switch {
	case mi.Spec.RoomName != room.Name || mi.Spec.MapName != mapName || !mi.Spec.Instanced ||
		mi.Labels[gamev1.LabelParty] != label:
		return errOtherParty
	case !metav1.IsControlledBy(mi, room):
		return fail(CodeRoomNotReady, "an earlier room's instance of map %s is being removed", mapName)
	case mi.DeletionTimestamp != nil:
		return fail(CodeRoomNotReady, "the party's instance of map %s is being removed", mapName)
	}
	return nil
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
		if err := partyOwns(room, mi.Spec.MapName, label, next); err != nil {
			if errors.Is(err, errOtherParty) { // deleted and taken by another party meanwhile
				return nil, fail(CodeRoomNotReady, "the party's instance of map %s is being removed", mi.Spec.MapName)
			}
			return nil, err
		}
		mi = next
	}
}
