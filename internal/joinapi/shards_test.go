package joinapi

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"sigs.k8s.io/controller-runtime/pkg/client"

	gamev1 "github.com/roomkeeper/roomkeeper/api/v1"
	"github.com/roomkeeper/roomkeeper/internal/token"
	"github.com/roomkeeper/roomkeeper/internal/wait"
)

// withTownShards gives the town shards lo..hi of seats seats each.
func withTownShards(lo, hi, seats int32) roomOption {
	return func(r *gamev1.GameRoom) {
		r.Spec.Maps[0].Shards = &gamev1.ShardRange{Min: lo, Max: hi}
		r.Spec.MaxPlayersPerMap = seats
	}
}

// readyShard makes shard n of the demo town Ready with players, as the
// operator and its heartbeat would, and waits until the handler's cache
// sees it.
func (e *env) readyShard(n, players int32) *gamev1.MapInstance {
	e.t.Helper()
	mi := e.createShard("demo", "town", n)
	e.setPlayers(mi, n, players)
	return mi
}

// setPlayers reports players on shard n and waits for the cache.
func (e *env) setPlayers(mi *gamev1.MapInstance, n, players int32) {
	e.t.Helper()
	e.setStatus(mi, func(s *gamev1.MapInstanceStatus) {
		ready(fmt.Sprintf("ws://10.0.1.%d:7350/ws", n))(s)
		s.Players = players
	})
	wait.Eventually(e.t, pollTimeout, "the cache to see "+mi.Name, func() error {
		cached := &gamev1.MapInstance{}
		if err := mgr.GetClient().Get(e.ctx, client.ObjectKeyFromObject(mi), cached); err != nil {
			return err
		}
		if cached.Status.Players != players || cached.Status.Endpoint == "" {
			return fmt.Errorf("%d players at %q", cached.Status.Players, cached.Status.Endpoint)
		}
		return nil
	})
}

// joinsAtOnce sends the joins reqs to room all at once and returns their
// answers, in order.
func (e *env) joinsAtOnce(room string, reqs []JoinRequest) []reply {
	answers := make([]reply, len(reqs))
	var wg sync.WaitGroup
	for i, req := range reqs {
		wg.Go(func() { answers[i] = e.join(room, req) })
	}
	wg.Wait()
	return answers
}

// ticketFor is the instance a join's ticket names.
func ticketFor(t *testing.T, r reply, keys token.KeySet) string {
	t.Helper()
	want(t, "a join", r, http.StatusOK, "")
	var resp JoinResponse
	if err := json.Unmarshal(r.body, &resp); err != nil {
		t.Fatal(err)
	}
	claims, err := token.NewVerifier(token.StaticKeys(keys), clock).Verify(resp.Ticket, token.Expect{Room: "demo", AnyMap: true, Types: []string{token.TypeJoin}})
	if err != nil {
		t.Fatal(err)
	}
	return claims.Map
}

// TestJoinsFillShardsLeastFullFirst: a join of a sharded map gets a
// seat on the least full shard in use; an empty surplus shard (above
// min) only once those are full, so that it can empty and go; with every
// shard full, room_full says the map is at its most shards.
func TestJoinsFillShardsLeastFullFirst(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	keys := e.createRoom("demo", withTownShards(1, 3, 4))
	e.readyShard(1, 3)
	e.readyShard(2, 1)
	e.readyShard(3, 0) // surplus, empty

	var got []string
	for range 4 { // s2 has 3 seats, the first 1
		got = append(got, ticketFor(t, e.join("demo", JoinRequest{}), keys))
	}
	if strings.Join(got, " ") != "demo-town-s2 demo-town-s2 demo-town demo-town-s2" &&
		strings.Join(got, " ") != "demo-town-s2 demo-town-s2 demo-town-s2 demo-town" {
		t.Fatalf("joins went to %v: want the least full shard in use each time, never the empty surplus one", got)
	}
	for i := range 4 {
		if s := ticketFor(t, e.join("demo", JoinRequest{}), keys); s != "demo-town-s3" {
			t.Fatalf("join %d after the shards in use filled went to %s, want the surplus demo-town-s3", i, s)
		}
	}
	refused := testutil.ToFloat64(seatsRefused.WithLabelValues(seatsMap))
	r := e.join("demo", JoinRequest{})
	want(t, "a join with every shard full", r, http.StatusConflict, CodeRoomFull)
	if got := testutil.ToFloat64(seatsRefused.WithLabelValues(seatsMap)) - refused; got < 1 {
		t.Errorf("roomkeeper_join_seats_refused_total{where=map} rose by %v, want at least 1", got)
	}
	if b := r.errorBody(t); !strings.Contains(b.Message, "3 shards (its most)") || b.RetryAfter < 1 {
		t.Fatalf("room_full %+v: want it to say the map is at its most shards, with a retry", b)
	}
}

// TestJoinsRacingOverShardsNeverOverfillOne: joins racing for a sharded
// map's last seats get one ticket a free seat, spread over the shards.
func TestJoinsRacingOverShardsNeverOverfillOne(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	keys := e.createRoom("demo", withTownShards(2, 2, 5))
	e.readyShard(1, 3)
	e.readyShard(2, 4)
	answers := e.joinsAtOnce("demo", make([]JoinRequest, 10))
	per := map[string]int{}
	for _, r := range answers {
		if r.status == http.StatusOK {
			per[ticketFor(t, r, keys)]++
			continue
		}
		want(t, "a join of a full map", r, http.StatusConflict, CodeRoomFull)
	}
	if per["demo-town"] != 2 || per["demo-town-s2"] != 1 {
		t.Fatalf("tickets per shard %v: want the 2 and 1 free seats", per)
	}
}

// TestAPartyStaysOnOneShard: members of a party joining at once get one
// shard; a member joining after a new shard appeared still gets it;
// when it is full a member gets room_full, not another shard.
func TestAPartyStaysOnOneShard(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	keys := e.createRoom("demo", withTownShards(1, 3, 6))
	e.readyShard(1, 1)
	e.readyShard(2, 1)
	lead := partyAnswer(t, e.createParty("demo", nil))
	members := make([]string, 3)
	for i := range members {
		members[i] = partyAnswer(t, e.do(http.MethodPost, e.roomPath("demo")+"/parties/"+lead.Party+"/invites", lead.Token, nil)).Token
	}
	reqs := make([]JoinRequest, len(members))
	for i, m := range members {
		reqs[i] = JoinRequest{PartyToken: m}
	}
	answers := e.joinsAtOnce("demo", reqs)
	shard := ticketFor(t, answers[0], keys)
	for i, r := range answers[1:] {
		if s := ticketFor(t, r, keys); s != shard {
			t.Fatalf("member %d got %s, member 0 %s: the party was split", i+1, s, shard)
		}
	}

	e.readyShard(3, 0)
	if s := ticketFor(t, e.join("demo", JoinRequest{PartyToken: lead.Token}), keys); s != shard {
		t.Fatalf("the leader joining later got %s, want the party's %s", s, shard)
	}
	// The party's shard has 6 seats: 1 player and 4 tickets held; one
	// more fits, then the party's shard is full.
	want(t, "a fifth member", e.join("demo", JoinRequest{PartyToken: members[0]}), http.StatusOK, "")
	r := e.join("demo", JoinRequest{PartyToken: members[1]})
	want(t, "a member when the party's shard is full", r, http.StatusConflict, CodeRoomFull)
	if !strings.Contains(r.errorBody(t).Message, "your party's shard") {
		t.Fatalf("room_full %q does not say it is the party's shard", r.errorBody(t).Message)
	}
	// Others still get the other shards.
	if s := ticketFor(t, e.join("demo", JoinRequest{}), keys); s == shard {
		t.Fatalf("a player in no party got the full %s", s)
	}
}

// TestJoinAFriendsShard: a join may name the shard to join (a friend's
// welcome names it); a full one is room_full, not another; a name that
// is no shard of the map is bad_request.
func TestJoinAFriendsShard(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	keys := e.createRoom("demo", withTownShards(1, 3, 3), withMap("forest"))
	e.readyShard(1, 0)
	e.readyShard(2, 2)
	if s := ticketFor(t, e.join("demo", JoinRequest{Instance: "demo-town-s2"}), keys); s != "demo-town-s2" {
		t.Fatalf("asked for demo-town-s2, got %s", s)
	}
	r := e.join("demo", JoinRequest{Instance: "demo-town-s2"})
	want(t, "the friend's full shard", r, http.StatusConflict, CodeRoomFull)
	if !strings.Contains(r.errorBody(t).Message, "you asked for") {
		t.Fatalf("room_full %q does not say it is the shard asked for", r.errorBody(t).Message)
	}
	forest := e.createInstance("demo", "forest")
	e.setStatus(forest, ready("ws://10.0.0.9:7350/ws"))
	for _, name := range []string{"demo-town-s9", "demo-forest", "other-town", "Demo Town"} {
		want(t, "a join naming "+name, e.join("demo", JoinRequest{Instance: name}), http.StatusBadRequest, CodeBadRequest)
	}
}

// TestPortalsIntoAShardedMapKeepPartiesTogether: a portal into a sharded
// map seats its traveller like a join: a party's members on one shard.
func TestPortalsIntoAShardedMapKeepPartiesTogether(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	keys := e.createRoom("demo", withTownShards(1, 4, 8), withMap("forest"))
	for n := int32(1); n <= 4; n++ {
		e.readyShard(n, 1)
	}
	into := func(user, party string) string {
		c := destClaims("town")
		c.From, c.Subject, c.Party = "demo-forest", user, party
		return resolved(t, e.destination("demo", sign(t, keys, c, 0), DestinationRequest{Map: "town", Party: party})).Instance
	}
	for p := range 4 {
		party := fmt.Sprint("p-", p)
		first := into("u-a"+party, party)
		if second := into("u-b"+party, party); second != first {
			t.Fatalf("party %s crossed to %s and %s", party, first, second)
		}
	}
}
