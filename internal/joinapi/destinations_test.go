package joinapi

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	gamev1 "github.com/roomkeeper/roomkeeper/api/v1"
	"github.com/roomkeeper/roomkeeper/internal/directory"
	"github.com/roomkeeper/roomkeeper/internal/instanced"
	"github.com/roomkeeper/roomkeeper/internal/token"
	"github.com/roomkeeper/roomkeeper/internal/wait"
)

// destClaims are a destination token's claims as the town pod of room
// demo signs them for a portal into mapName.
func destClaims(mapName string) token.Claims {
	return token.Claims{Type: token.TypeDestination, Subject: "u-1", Character: "c-1",
		Room: "demo", Map: mapName, From: "demo-town"}
}

// sign signs c with keys at the suite's clock plus skew, valid 10 s.
func sign(t *testing.T, keys token.KeySet, c token.Claims, skew time.Duration) string {
	t.Helper()
	at := func() time.Time { return testClock.Add(skew) }
	raw, _, err := token.NewSigner(token.StaticKeys(keys), at).Sign(c, 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	return raw
}

func (e *env) destinationPath(room string) string {
	return "/v1/internal/namespaces/" + e.ns + "/gamerooms/" + room + "/destinations"
}

// destination asks room for a destination with the bearer token.
func (e *env) destination(room, bearer string, body any) reply {
	e.t.Helper()
	return e.do(http.MethodPost, e.destinationPath(room), bearer, body)
}

// resolved decodes a destination answer, failing the test on an error.
func resolved(t *testing.T, r reply) DestinationResponse {
	t.Helper()
	if r.status != http.StatusOK {
		t.Fatalf("destination answer %s, want 200", r)
	}
	var d DestinationResponse
	if err := json.Unmarshal(r.body, &d); err != nil {
		t.Fatalf("destination answer %s: %v", r, err)
	}
	return d
}

func TestDestinationAuth(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	keys := e.readyRoom("demo", "ws://10.0.0.7:7350/ws", withInstancedMap("crypt"))
	otherKeys := e.createRoom("other")
	town := DestinationRequest{Map: "town"}

	wantUnauthorized := func(what, bearer string, body any) {
		t.Helper()
		r := e.destination("demo", bearer, body)
		want(t, what, r, http.StatusUnauthorized, CodeUnauthorized)
		if r.header.Get("WWW-Authenticate") == "" {
			t.Errorf("%s: no WWW-Authenticate header", what)
		}
	}
	wantUnauthorized("no token", "", town)
	wantUnauthorized("not a token", "not-a-jwt", town)
	forged, err := token.Rotate(token.KeySet{})
	if err != nil {
		t.Fatal(err)
	}
	wantUnauthorized("signed with a key that is not the room's", sign(t, forged, destClaims("town"), 0), town)
	wantUnauthorized("signed with another room's key", sign(t, otherKeys, destClaims("town"), 0), town)
	wrongRoom := destClaims("town")
	wrongRoom.Room = "other"
	wantUnauthorized("the room's key, another room's claim", sign(t, keys, wrongRoom, 0), town)
	wantUnauthorized("expired", sign(t, keys, destClaims("town"), -time.Minute), town)
	if msg := e.destination("demo", sign(t, keys, destClaims("town"), -time.Minute), town).errorBody(t).Message; !strings.Contains(msg, "expired") {
		t.Errorf("expired token: message %q", msg)
	}
	joined := resolvedJoin(t, e.join("demo", JoinRequest{}))
	wantUnauthorized("a join ticket", joined.Ticket, town)
	wantUnauthorized("a join ticket for its own map name", joined.Ticket, DestinationRequest{Map: "demo-town"})
	transfer := destClaims("town")
	transfer.Type, transfer.Transfer = token.TypeTransfer, "x-1"
	wantUnauthorized("a transfer token", sign(t, keys, transfer, 0), town)
	wantUnauthorized("a token for another map", sign(t, keys, destClaims("crypt"), 0), town)
	partied := destClaims("crypt")
	partied.Party = "p-1"
	wantUnauthorized("another party than the token's", sign(t, keys, partied, 0), DestinationRequest{Map: "crypt", Party: "p-2"})
	wantUnauthorized("a party the token has none of", sign(t, keys, destClaims("crypt"), 0), DestinationRequest{Map: "crypt", Party: "p-2"})

	good := sign(t, keys, destClaims("town"), 0)
	for name, body := range map[string]any{
		"no map":        DestinationRequest{},
		"empty body":    nil,
		"unknown field": `{"map": "town", "instance": "demo-town"}`,
		"over 4 KiB":    `{"map": "town"` + strings.Repeat(" ", 4096) + `}`,
	} {
		want(t, name, e.destination("demo", good, body), http.StatusBadRequest, CodeBadRequest)
	}
	want(t, "unknown map", e.destination("demo", sign(t, keys, destClaims("swamp"), 0), DestinationRequest{Map: "swamp"}),
		http.StatusBadRequest, CodeBadRequest)
	// Without a valid token the route tells nothing of the room.
	want(t, "no room", e.destination("nope", good, town), http.StatusUnauthorized, CodeUnauthorized)
	forever := destClaims("town")
	at := func() time.Time { return testClock }
	longLived, _, err := token.NewSigner(token.StaticKeys(keys), at).Sign(forever, 10*365*24*time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	wantUnauthorized("a token valid for ten years", longLived, town)

	d := resolved(t, e.destination("demo", good, town))
	if d != (DestinationResponse{Map: "town", Instance: "demo-town", Endpoint: "ws://10.0.0.7:7350/ws"}) {
		t.Fatalf("destination %+v, want town's instance and endpoint", d)
	}
	// The token is not single-use: asking again is harmless.
	resolved(t, e.destination("demo", good, town))
	if strings.Contains(e.log.String(), good) {
		t.Fatal("a destination token was logged")
	}
}

// resolvedJoin decodes a successful join answer.
func resolvedJoin(t *testing.T, r reply) JoinResponse {
	t.Helper()
	var resp JoinResponse
	if r.status != http.StatusOK {
		t.Fatalf("join answer %s", r)
	}
	if err := json.Unmarshal(r.body, &resp); err != nil {
		t.Fatal(err)
	}
	return resp
}

// TestDestinationNonInstanced: a non-instanced map answers as a join does:
// not there or not Ready is room_not_ready, quarantined map_quarantined.
func TestDestinationNonInstanced(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	keys := e.readyRoom("demo", "ws://10.0.0.7:7350/ws", withMap("forest"))
	forest := func() reply {
		return e.destination("demo", sign(t, keys, destClaims("forest"), 0), DestinationRequest{Map: "forest"})
	}
	want(t, "no instance", forest(), http.StatusConflict, CodeRoomNotReady)
	mi := e.createInstance("demo", "forest")
	want(t, "no status", forest(), http.StatusConflict, CodeRoomNotReady)

	e.setStatus(mi, quarantined(testClock.Add(42*time.Second)))
	r := e.eventually(http.StatusServiceUnavailable, CodeMapQuarantined, forest)
	if b := r.errorBody(t); b.RetryAfter != 42 || r.header.Get("Retry-After") != "42" {
		t.Fatalf("quarantined: retryAfter %d, Retry-After %q; want 42", b.RetryAfter, r.header.Get("Retry-After"))
	}
	e.setStatus(mi, ready("ws://10.0.0.8:7350/ws"))
	d := resolved(t, e.eventually(http.StatusOK, "", forest))
	if d != (DestinationResponse{Map: "forest", Instance: "demo-forest", Endpoint: "ws://10.0.0.8:7350/ws"}) {
		t.Fatalf("destination %+v", d)
	}
	if n := len(e.partyInstances("demo", "forest")); n != 1 {
		t.Fatalf("%d instances of a non-instanced map, want its own only", n)
	}
}

var partyName = regexp.MustCompile(`^demo-crypt-[a-z0-9]{5}$`)

// partyInstances lists the room's MapInstances of mapName from the API
// server.
func (e *env) partyInstances(room, mapName string) []gamev1.MapInstance {
	e.t.Helper()
	var list gamev1.MapInstanceList
	if err := k8s.List(e.ctx, &list, client.InNamespace(e.ns),
		client.MatchingLabels{gamev1.LabelRoom: room, gamev1.LabelMap: mapName}); err != nil {
		e.t.Fatal(err)
	}
	return list.Items
}

// awaitInstance waits until the API server holds a party instance of
// room's mapName whose name is not in known, and returns it.
func (e *env) awaitInstance(room, mapName string, known ...string) *gamev1.MapInstance {
	e.t.Helper()
	var found *gamev1.MapInstance
	wait.Eventually(e.t, pollTimeout, "a new MapInstance of "+mapName, func() error {
		for _, mi := range e.partyInstances(room, mapName) {
			if !slices.Contains(known, mi.Name) {
				found = &mi
				return nil
			}
		}
		return errors.New("none yet")
	})
	return found
}

// async sends a destination request from another goroutine; the answer
// comes on the channel.
func (e *env) async(room, bearer string, body any) <-chan reply {
	out := make(chan reply, 1)
	go func() {
		r, err := e.try(http.MethodPost, e.destinationPath(room), bearer, body)
		if err != nil {
			r = reply{body: []byte(err.Error())}
		}
		out <- r
	}()
	return out
}

func TestDestinationInstanced(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	keys := e.readyRoom("demo", "ws://10.0.0.7:7350/ws", withInstancedMap("crypt"), withDatabase())
	room := e.getRoom("demo")
	p1 := destClaims("crypt")
	p1.Party = "p-1"
	asked := e.async("demo", sign(t, keys, p1, 0), DestinationRequest{Map: "crypt", Party: "p-1"})

	mi := e.awaitInstance("demo", "crypt")
	if !partyName.MatchString(mi.Name) {
		t.Errorf("party instance %s, want demo-crypt-<5 lowercase letters or digits>", mi.Name)
	}
	if want := (gamev1.MapInstanceSpec{RoomName: "demo", MapName: "crypt", Instanced: true}); mi.Spec != want {
		t.Errorf("spec %+v, want the room's crypt, instanced: %+v", mi.Spec, want)
	}
	if l := mi.Labels; l[gamev1.LabelRoom] != "demo" || l[gamev1.LabelMap] != "crypt" || !regexp.MustCompile(`^[0-9a-f]{32}$`).MatchString(l[gamev1.LabelParty]) {
		t.Errorf("labels %v, want room, map and a hashed party", l)
	}
	if strings.Contains(mi.Labels[gamev1.LabelParty], "p-1") {
		t.Error("the party label shows the party id")
	}
	if !metav1.IsControlledBy(mi, room) {
		t.Errorf("owner references %+v, want the GameRoom %s as controller", mi.OwnerReferences, room.UID)
	}
	select {
	case r := <-asked:
		t.Fatalf("answered %s before the instance was Ready", r)
	default:
	}

	e.setStatus(mi, ready("ws://10.0.0.20:7350/ws"))
	d := resolved(t, <-asked)
	if d != (DestinationResponse{Map: "crypt", Instance: mi.Name, Endpoint: "ws://10.0.0.20:7350/ws"}) {
		t.Fatalf("destination %+v, want %s's endpoint", d, mi.Name)
	}

	// The same party again: the same instance, at once, through the room
	// server's client.
	keySource := token.StaticKeys(keys)
	dir := directory.New(e.srv.URL, e.ns, "demo", "demo-town", keySource, e.srv.Client()).
		WithClock(func() time.Time { return testClock })
	got, err := dir.Resolve(e.ctx, "crypt", directory.Player{Party: "p-1", User: "u-2", Character: "c-2"})
	if err != nil || got != (directory.Destination{Map: "crypt", Instance: mi.Name, Endpoint: "ws://10.0.0.20:7350/ws"}) {
		t.Fatalf("same party: %+v %v, want %s", got, err, mi.Name)
	}

	// Another party: another instance.
	asked = e.async("demo", dir2Token(t, keys, "p-2"), DestinationRequest{Map: "crypt"})
	other := e.awaitInstance("demo", "crypt", mi.Name)
	if !partyName.MatchString(other.Name) || other.Labels[gamev1.LabelParty] == mi.Labels[gamev1.LabelParty] {
		t.Fatalf("second party's instance %s %v", other.Name, other.Labels)
	}
	e.setStatus(other, ready("ws://10.0.0.21:7350/ws"))
	if d := resolved(t, <-asked); d.Instance != other.Name || d.Endpoint != "ws://10.0.0.21:7350/ws" {
		t.Fatalf("second party: %+v, want %s", d, other.Name)
	}

	// The client's errors carry the join API's codes.
	var de *directory.Error
	if _, err := dir.Resolve(e.ctx, "swamp", directory.Player{User: "u-1", Character: "c-1"}); !errors.As(err, &de) || de.Code != string(CodeBadRequest) {
		t.Errorf("unknown map through the client: %v, want %s", err, CodeBadRequest)
	}
	forged, _ := token.Rotate(token.KeySet{})
	_, err = directory.New(e.srv.URL, e.ns, "demo", "demo-town", token.StaticKeys(forged), nil).Resolve(e.ctx, "crypt", directory.Player{User: "u-1", Character: "c-1"})
	if !errors.As(err, &de) || de.Code != string(CodeUnauthorized) {
		t.Errorf("forged key through the client: %v, want %s", err, CodeUnauthorized)
	}
	e.setStatus(other, quarantined(testClock.Add(30*time.Second)))
	r := e.eventually(http.StatusServiceUnavailable, CodeMapQuarantined, func() reply {
		return e.destination("demo", dir2Token(t, keys, "p-2"), DestinationRequest{Map: "crypt"})
	})
	if r.errorBody(t).RetryAfter != 30 {
		t.Errorf("quarantined party instance: %s, want retryAfter 30", r)
	}
	if _, err := dir.Resolve(e.ctx, "crypt", directory.Player{Party: "p-2", User: "u-1", Character: "c-1"}); !errors.As(err, &de) ||
		de.Code != string(CodeMapQuarantined) || de.RetryAfter != 30 {
		t.Errorf("quarantined through the client: %v, want %s with retryAfter 30", err, CodeMapQuarantined)
	}
	if n := len(e.partyInstances("demo", "crypt")); n != 2 {
		t.Fatalf("%d instances of crypt, want one per party", n)
	}
}

// dir2Token is a destination token into crypt for party.
func dir2Token(t *testing.T, keys token.KeySet, party string) string {
	t.Helper()
	c := destClaims("crypt")
	c.Party = party
	return sign(t, keys, c, 0)
}

// TestEnteringAloneGetsASoloInstance: a player in no party gets an
// instance of its own, however many others enter from the same map at the
// same moment; entering again, it gets its own again.
func TestEnteringAloneGetsASoloInstance(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	keys := e.readyRoom("demo", "ws://10.0.0.7:7350/ws", withInstancedMap("crypt"))
	crypt := DestinationRequest{Map: "crypt"}
	asked := e.async("demo", sign(t, keys, destClaims("crypt"), 0), crypt)
	mine := e.awaitInstance("demo", "crypt")
	e.setStatus(mine, ready("ws://10.0.0.30:7350/ws"))
	if d := resolved(t, <-asked); d.Instance != mine.Name {
		t.Fatalf("first: %+v, want %s", d, mine.Name)
	}
	stranger := destClaims("crypt")
	stranger.Subject, stranger.Character = "u-2", "c-2"
	asked = e.async("demo", sign(t, keys, stranger, 0), crypt)
	theirs := e.awaitInstance("demo", "crypt", mine.Name)
	e.setStatus(theirs, ready("ws://10.0.0.31:7350/ws"))
	if d := resolved(t, <-asked); d.Instance != theirs.Name {
		t.Fatalf("a stranger from the same map at the same moment: %+v, want an instance of its own, %s", d, theirs.Name)
	}
	if d := resolved(t, e.destination("demo", sign(t, keys, destClaims("crypt"), 0), crypt)); d.Instance != mine.Name {
		t.Fatalf("entering again: %+v, want %s", d, mine.Name)
	}
}

// TestAFullPartyInstanceRefusesMore: an instance seats parties.maxSize of
// its party; the next member is refused room_full and stays where it is.
func TestAFullPartyInstanceRefusesMore(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	keys := e.readyRoom("demo", "ws://10.0.0.7:7350/ws", withInstancedMap("crypt"), func(r *gamev1.GameRoom) { r.Spec.Parties.MaxSize = 3 })
	asked := e.async("demo", partyToken(t, keys, "u-1", "p-full"), DestinationRequest{Map: "crypt", Party: "p-full"})
	mi := e.awaitInstance("demo", "crypt")
	e.setStatus(mi, func(s *gamev1.MapInstanceStatus) {
		ready("ws://10.0.0.30:7350/ws")(s)
		s.Players = 3
	})
	want(t, "the fourth member", <-asked, http.StatusConflict, CodeRoomFull)
	e.setStatus(mi, func(s *gamev1.MapInstanceStatus) { s.Players = 2 })
	e.eventually(http.StatusOK, "", func() reply {
		return e.destination("demo", partyToken(t, keys, "u-4", "p-full"), DestinationRequest{Map: "crypt", Party: "p-full"})
	})
}

// TestDestinationNameTaken: when a party's name is taken by an instance of
// another party, the next name is used.
func TestDestinationNameTaken(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	keys := e.readyRoom("demo", "ws://10.0.0.7:7350/ws", withInstancedMap("crypt"))
	room := e.getRoom("demo")
	label := instanced.Label("demo", "crypt", instanced.PartyKey("p-1", ""))
	squatter := gamev1.NewMapInstance(room, room.Spec.Maps[1], instanced.Name("demo", "crypt", label, 0))
	squatter.Labels[gamev1.LabelParty] = "someone-else"
	e.create(squatter) // the handler finds it in its cache, or when its create fails

	asked := e.async("demo", dir2Token(t, keys, "p-1"), DestinationRequest{Map: "crypt"})
	mi := e.awaitInstance("demo", "crypt", squatter.Name)
	if want := instanced.Name("demo", "crypt", label, 1); mi.Name != want {
		t.Fatalf("instance %s, want the second probe %s", mi.Name, want)
	}
	e.setStatus(mi, ready("ws://10.0.0.40:7350/ws"))
	if d := resolved(t, <-asked); d.Instance != mi.Name {
		t.Fatalf("destination %+v, want %s", d, mi.Name)
	}
}

// TestDestinationConcurrentParty: requests of one party racing each other
// create one instance and all get it.
func TestDestinationConcurrentParty(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	keys := e.readyRoom("demo", "ws://10.0.0.7:7350/ws", withInstancedMap("crypt"))
	const n = 8
	tokens := make([]string, n)
	for i := range tokens {
		tokens[i] = dir2Token(t, keys, "p-9") // signed before the race: t.Fatal is for this goroutine
	}
	var wg sync.WaitGroup
	start := make(chan struct{})
	answers := make([]reply, n)
	for i := range n {
		wg.Go(func() {
			<-start
			r, err := e.try(http.MethodPost, e.destinationPath("demo"), tokens[i], DestinationRequest{Map: "crypt", Party: "p-9"})
			if err != nil {
				r = reply{body: []byte(err.Error())}
			}
			answers[i] = r
		})
	}
	close(start)
	mi := e.awaitInstance("demo", "crypt")
	e.setStatus(mi, ready("ws://10.0.0.50:7350/ws"))
	wg.Wait()
	for i, r := range answers {
		if d := resolved(t, r); d.Instance != mi.Name {
			t.Errorf("request %d: %+v, want %s", i, d, mi.Name)
		}
	}
	if list := e.partyInstances("demo", "crypt"); len(list) != 1 {
		t.Fatalf("%d instances for one party, want 1", len(list))
	}
}

// TestDestinationNeverReady: a party instance that does not become Ready
// in time is room_not_ready.
func TestDestinationNeverReady(t *testing.T) {
	t.Parallel()
	e := newEnv(t, func(o *Options) { o.readyWait = 300 * time.Millisecond })
	keys := e.readyRoom("demo", "ws://10.0.0.7:7350/ws", withInstancedMap("crypt"))
	r := e.destination("demo", dir2Token(t, keys, "slow"), DestinationRequest{Map: "crypt"})
	want(t, "never Ready", r, http.StatusConflict, CodeRoomNotReady)
	if msg := r.errorBody(t).Message; !strings.Contains(msg, "did not become ready within 300ms") {
		t.Errorf("never Ready: message %q", msg)
	}
}

// TestDestinationWaitEnds: a party instance quarantined while waited for
// is map_quarantined at once; a stopping server ends the wait.
func TestDestinationWaitEnds(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	keys := e.readyRoom("demo", "ws://10.0.0.7:7350/ws", withInstancedMap("crypt"))
	asked := e.async("demo", dir2Token(t, keys, "crashy"), DestinationRequest{Map: "crypt"})
	mi := e.awaitInstance("demo", "crypt")
	e.setStatus(mi, quarantined(testClock.Add(time.Minute)))
	want(t, "quarantined while waited for", <-asked, http.StatusServiceUnavailable, CodeMapQuarantined)

	asked = e.async("demo", dir2Token(t, keys, "late"), DestinationRequest{Map: "crypt"})
	late := e.awaitInstance("demo", "crypt", mi.Name)
	if !slices.Contains(e.partyNames("late"), late.Name) {
		t.Fatalf("instance %s is not party late's", late.Name)
	}
	e.h.stopWaiting()
	r := <-asked
	want(t, "server stopping", r, http.StatusConflict, CodeRoomNotReady)
	if msg := r.errorBody(t).Message; !strings.Contains(msg, "stopping") {
		t.Errorf("server stopping: message %q", msg)
	}
}

// partyNames are the names of the room's crypt instances whose party is
// named party (all probes).
func (e *env) partyNames(party string) []string {
	label := instanced.Label("demo", "crypt", instanced.PartyKey(party, ""))
	var names []string
	for i := range instanced.MaxNameProbes {
		names = append(names, instanced.Name("demo", "crypt", label, i))
	}
	return names
}

// TestDestinationsInFlight: past the bound, destination requests are
// refused with rate_limited; players' joins are not affected.
func TestDestinationsInFlight(t *testing.T) {
	t.Parallel()
	e := newEnv(t, func(o *Options) { o.MaxDestinationsInFlight = 1 })
	keys := e.readyRoom("demo", "ws://10.0.0.7:7350/ws", withInstancedMap("crypt"))
	asked := e.async("demo", dir2Token(t, keys, "p-1"), DestinationRequest{Map: "crypt"})
	mi := e.awaitInstance("demo", "crypt") // the first request holds the only slot while it waits
	r := e.destination("demo", sign(t, keys, destClaims("town"), 0), DestinationRequest{Map: "town"})
	want(t, "second request in flight", r, http.StatusTooManyRequests, CodeRateLimited)
	if r.header.Get("Retry-After") != "1" {
		t.Errorf("Retry-After %q, want 1", r.header.Get("Retry-After"))
	}
	want(t, "a join meanwhile", e.join("demo", JoinRequest{}), http.StatusOK, "")
	e.setStatus(mi, ready("ws://10.0.0.60:7350/ws"))
	resolved(t, <-asked)
	resolved(t, e.destination("demo", sign(t, keys, destClaims("town"), 0), DestinationRequest{Map: "town"}))
}

// TestDestinationInstanceCap: party ids are the players' to choose, so the
// party instances of a map are bounded, by the room's
// parties.maxInstancesPerMap; past the bound a new party is refused and an
// existing one still gets its instance.
func TestDestinationInstanceCap(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	const perMap = 7
	keys := e.readyRoom("demo", "ws://10.0.0.7:7350/ws", withInstancedMap("crypt"),
		func(r *gamev1.GameRoom) { r.Spec.Parties.MaxInstancesPerMap = perMap })
	room := e.getRoom("demo")
	var first *gamev1.MapInstance
	for i := range perMap {
		label := instanced.Label("demo", "crypt", instanced.PartyKey(fmt.Sprint("p-", i), ""))
		creator := instanced.Creator("demo", fmt.Sprint("u-", 100+i), false, "") // a player an instance
		mi := instanced.New(room, room.Spec.Maps[1], instanced.Name("demo", "crypt", label, 0), label, creator)
		e.create(mi)
		if i == 0 {
			first = mi
		}
	}
	e.awaitCached("crypt", "", perMap)
	refused := e.destination("demo", dir2Token(t, keys, "p-new"), DestinationRequest{Map: "crypt"})
	want(t, "a new party past the cap", refused, http.StatusConflict, CodeRoomFull)
	if msg := refused.errorBody(t).Message; !strings.Contains(msg, "runs the 7 party instances") {
		t.Errorf("the refusal says %q, want the room's cap of 7", msg)
	}
	e.setStatus(first, ready("ws://10.0.0.41:7350/ws"))
	e.eventually(http.StatusOK, "", func() reply {
		return e.destination("demo", dir2Token(t, keys, "p-0"), DestinationRequest{Map: "crypt"})
	})
}

// getRoom reads the GameRoom name of the test's namespace.
func (e *env) getRoom(name string) *gamev1.GameRoom {
	e.t.Helper()
	room := &gamev1.GameRoom{}
	if err := k8s.Get(e.ctx, client.ObjectKey{Namespace: e.ns, Name: name}, room); err != nil {
		e.t.Fatal(err)
	}
	return room
}

// TestAMapItsExposureCannotServeIsRefusedWithTheReason: a map that runs
// but that players outside the cluster cannot reach (its Gateway missing)
// is room_not_ready, and the answer says why.
func TestAMapItsExposureCannotServeIsRefusedWithTheReason(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.readyRoom("demo", "wss://games.example.com/x/demo/town/ws")
	mi := &gamev1.MapInstance{ObjectMeta: metav1.ObjectMeta{Namespace: e.ns, Name: gamev1.MapInstanceName("demo", "town")}}
	e.setStatus(mi, func(s *gamev1.MapInstanceStatus) {
		s.Endpoint = ""
		meta.SetStatusCondition(&s.Conditions, metav1.Condition{Type: gamev1.ConditionExposed, Status: metav1.ConditionFalse,
			Reason: gamev1.ReasonGatewayNotFound, Message: "Gateway infra/public does not exist"})
	})
	r := e.eventually(http.StatusConflict, CodeRoomNotReady, func() reply { return e.join("demo", JoinRequest{}) })
	if b := r.errorBody(t); !strings.Contains(b.Message, "GatewayNotFound") || !strings.Contains(b.Message, "infra/public") {
		t.Errorf("message %q does not say the Gateway is missing", b.Message)
	}
}

// TestStalledBodiesHoldNoDestinationSlot: the destination route spends
// nothing scarce before its caller is authenticated. A thousand
// connections that send a request's headers and never its body, and a
// flood of forged tokens, take none of its slots: a map pod's portal
// lookup is answered meanwhile.
func TestStalledBodiesHoldNoDestinationSlot(t *testing.T) {
	t.Parallel()
	e := newEnv(t, func(o *Options) { o.MaxDestinationsInFlight = 4 })
	keys := e.readyRoom("demo", "ws://10.0.0.7:7350/ws")
	addr := strings.TrimPrefix(e.srv.URL, "http://")
	head := "POST " + e.destinationPath("demo") + " HTTP/1.1\r\nHost: " + addr +
		"\r\nAuthorization: Bearer forged\r\nContent-Type: application/json\r\nContent-Length: 64\r\n\r\n"
	const stalled = 1000
	conns := make([]net.Conn, 0, stalled)
	t.Cleanup(func() {
		for _, c := range conns {
			_ = c.Close()
		}
	})
	for range stalled {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatalf("connection %d: %v", len(conns), err)
		}
		conns = append(conns, c)
		if _, err := io.WriteString(c, head); err != nil {
			t.Fatal(err)
		}
	}
	for i := range 50 {
		want(t, fmt.Sprint("forged token ", i), e.destination("demo", "forged", DestinationRequest{Map: "town"}),
			http.StatusUnauthorized, CodeUnauthorized)
	}
	d := resolved(t, e.destination("demo", sign(t, keys, destClaims("town"), 0), DestinationRequest{Map: "town"}))
	if d.Instance != "demo-town" {
		t.Fatalf("with %d stalled connections open: %+v, want the town", stalled, d)
	}
}

// partyToken is a destination token into crypt for user in party, from
// the town.
func partyToken(t *testing.T, keys token.KeySet, user, party string) string {
	t.Helper()
	c := destClaims("crypt")
	c.Subject, c.Party = user, party
	return sign(t, keys, c, 0)
}

// TestGuestsCannotFillAnInstancedMap: all guests together start at most
// instanced.MaxGuestPerMap instances of a map, whatever parties they are
// in; keyed players start theirs meanwhile, each at most
// instanced.MaxPerUser, and joining a party's instance costs nothing.
func TestGuestsCannotFillAnInstancedMap(t *testing.T) {
	t.Parallel()
	e := newEnv(t, func(o *Options) { o.readyWait = 100 * time.Millisecond })
	keys := e.readyRoom("demo", "ws://10.0.0.7:7350/ws", withInstancedMap("crypt"))
	for i := range instanced.MaxGuestPerMap { // one party each
		e.destination("demo", partyToken(t, keys, fmt.Sprint(GuestPrefix, i), fmt.Sprint("flood-", i)), DestinationRequest{Map: "crypt", Party: fmt.Sprint("flood-", i)})
		e.awaitCached("crypt", instanced.GuestsCreator, i+1)
	}
	for _, party := range []string{"flood-late", ""} {
		late := partyToken(t, keys, GuestPrefix+"late", party)
		want(t, "a guest past the guests' pool", e.destination("demo", late, DestinationRequest{Map: "crypt", Party: party}), http.StatusConflict, CodeRoomFull)
	}

	for i, party := range []string{"raid-1", "raid-2"} { // a keyed player's share
		r := e.destination("demo", partyToken(t, keys, "u-alice", party), DestinationRequest{Map: "crypt", Party: party})
		if r.status == http.StatusConflict && r.errorBody(t).Code == CodeRoomFull {
			t.Fatalf("alice's party %d refused: %s", i, r)
		}
	}
	e.awaitCached("crypt", instanced.Creator("demo", "u-alice", false, ""), instanced.MaxPerUser)
	want(t, "alice's third party", e.destination("demo", partyToken(t, keys, "u-alice", "raid-3"), DestinationRequest{Map: "crypt", Party: "raid-3"}),
		http.StatusConflict, CodeRoomFull)
	joined := e.destination("demo", partyToken(t, keys, "u-bob", "raid-1"), DestinationRequest{Map: "crypt", Party: "raid-1"})
	if joined.status == http.StatusConflict && joined.errorBody(t).Code == CodeRoomFull {
		t.Fatalf("bob joining alice's raid-1: %s, want its instance", joined)
	}
	if got := testutil.ToFloat64(partyInstancesRefused.WithLabelValues(budgetUser)); got < 1 {
		t.Errorf("refusals by the user budget counted %v, want at least 1", got)
	}
}

// awaitCached waits until the handler's cache holds n instances of the
// demo room's map that creator started ("": anyone): a budget is counted
// there, so a request sent before would be counted against less (and
// start the instance a budget should have refused).
func (e *env) awaitCached(mapName, creator string, n int) {
	e.t.Helper()
	labels := client.MatchingLabels{gamev1.LabelRoom: "demo", gamev1.LabelMap: mapName}
	if creator != "" {
		labels[instanced.LabelCreator] = creator
	}
	wait.Eventually(e.t, pollTimeout, fmt.Sprintf("%d instances of %s by %q in the cache", n, mapName, creator), func() error {
		var list gamev1.MapInstanceList
		err := e.h.cached.List(e.ctx, &list, client.InNamespace(e.ns), labels)
		if err == nil && len(list.Items) != n {
			err = fmt.Errorf("the cache has %d", len(list.Items))
		}
		return err
	})
}

// TestOneAddressCannotTakeTheGuestsPool: the guests of one network
// address (the token's adr, which the room server sets) start at most
// instanced.MaxGuestPerAddress instances of a map; guests of another
// address still start theirs.
func TestOneAddressCannotTakeTheGuestsPool(t *testing.T) {
	t.Parallel()
	e := newEnv(t, func(o *Options) { o.readyWait = 100 * time.Millisecond })
	keys := e.readyRoom("demo", "ws://10.0.0.7:7350/ws", withInstancedMap("crypt"))
	guestFrom := func(address, source string) string {
		c := destClaims("crypt")
		c.Subject, c.From, c.Address = GuestPrefix+source, source, directory.AddressClaim(address)
		return sign(t, keys, c, 0)
	}
	for i := range instanced.MaxGuestPerAddress {
		r := e.destination("demo", guestFrom("203.0.113.7", fmt.Sprint("demo-source-", i)), DestinationRequest{Map: "crypt"})
		if r.status == http.StatusConflict && r.errorBody(t).Code == CodeRoomFull {
			t.Fatalf("the address's instance %d refused: %s", i, r)
		}
	}
	one := instanced.Creator("demo", "", true, directory.AddressClaim("203.0.113.7"))
	e.awaitCached("crypt", one, instanced.MaxGuestPerAddress)
	want(t, "the address's next instance", e.destination("demo", guestFrom("203.0.113.7", "demo-source-x"), DestinationRequest{Map: "crypt"}),
		http.StatusConflict, CodeRoomFull)
	other := e.destination("demo", guestFrom("198.51.100.9", "demo-source-x"), DestinationRequest{Map: "crypt"})
	if other.status == http.StatusConflict && other.errorBody(t).Code == CodeRoomFull {
		t.Fatalf("a guest of another address refused: %s", other)
	}
}

// TestABurstFromOneAddressKeepsItsBudget: guests of one address entering
// all at once, each alone, start no more than
// instanced.MaxGuestPerAddress instances: the budget counts the starts
// the cache has not seen yet.
func TestABurstFromOneAddressKeepsItsBudget(t *testing.T) {
	t.Parallel()
	e := newEnv(t, func(o *Options) { o.readyWait = 100 * time.Millisecond })
	keys := e.readyRoom("demo", "ws://10.0.0.7:7350/ws", withInstancedMap("crypt"))
	const guests = 8
	answers := make([]<-chan reply, guests)
	for i := range guests {
		c := destClaims("crypt")
		c.Subject, c.Address = fmt.Sprint(GuestPrefix, "burst-", i), directory.AddressClaim("203.0.113.8")
		answers[i] = e.async("demo", sign(t, keys, c, 0), DestinationRequest{Map: "crypt"})
	}
	full := 0
	for _, a := range answers {
		if r := <-a; r.status == http.StatusConflict && errorCode(r) == CodeRoomFull {
			full++
		}
	}
	if n := len(e.partyInstances("demo", "crypt")); n != instanced.MaxGuestPerAddress || full != guests-n {
		t.Fatalf("%d guests of one address at once started %d instances (%d refused room_full), want %d", guests, n, full, instanced.MaxGuestPerAddress)
	}
}

// TestPortalArrivalsHoldSeats: a portal's player holds a seat of its
// destination for its transfer token's life, as a join's ticket does:
// members racing into their party's instance never overfill it
// (parties.maxSize), nor players into a shared map (maxPlayersPerMap).
func TestPortalArrivalsHoldSeats(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	keys := e.readyRoom("demo", "ws://10.0.0.7:7350/ws", withInstancedMap("crypt"), withMap("forest"), func(r *gamev1.GameRoom) {
		r.Spec.Parties.MaxSize, r.Spec.MaxPlayersPerMap = 3, 4
	})
	asked := e.async("demo", partyToken(t, keys, "u-0", "p-seats"), DestinationRequest{Map: "crypt", Party: "p-seats"})
	e.setStatus(e.awaitInstance("demo", "crypt"), ready("ws://10.0.0.30:7350/ws"))
	resolved(t, <-asked)
	forest := e.createInstance("demo", "forest")
	e.setStatus(forest, func(s *gamev1.MapInstanceStatus) {
		ready("ws://10.0.0.31:7350/ws")(s)
		s.Players = 2
	})
	toForest := destClaims("forest")
	e.eventually(http.StatusOK, "", func() reply {
		return e.destination("demo", sign(t, keys, toForest, 0), DestinationRequest{Map: "forest"})
	})

	for _, tc := range []struct {
		name, mapName, party string
		free                 int
	}{
		{"members into their party's instance", "crypt", "p-seats", 2},
		{"players into the forest", "forest", "", 1},
	} {
		answers := make([]<-chan reply, 5)
		for i := range answers {
			c := destClaims(tc.mapName)
			c.Subject, c.Party = fmt.Sprint("u-", tc.mapName, i), tc.party
			answers[i] = e.async("demo", sign(t, keys, c, 0), DestinationRequest{Map: tc.mapName, Party: tc.party})
		}
		ok, full := 0, 0
		for _, a := range answers {
			switch r := <-a; {
			case r.status == http.StatusOK:
				ok++
			case errorCode(r) == CodeRoomFull:
				full++
			default:
				t.Fatalf("%s: answer %s", tc.name, r)
			}
		}
		if ok != tc.free || full != len(answers)-tc.free {
			t.Fatalf("%s: %d admitted and %d refused room_full, want %d admitted (the free seats)", tc.name, ok, full, tc.free)
		}
	}
}
