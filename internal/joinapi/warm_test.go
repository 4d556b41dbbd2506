package joinapi

import (
	"net/http"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"

	gamev1 "github.com/roomkeeper/roomkeeper/api/v1"
	"github.com/roomkeeper/roomkeeper/internal/instanced"
)

// withWarmCrypt adds an instanced crypt whose pool keeps n warm.
func withWarmCrypt(n int32) roomOption {
	return func(r *gamev1.GameRoom) {
		withInstancedMap("crypt")(r)
		r.Spec.Maps[len(r.Spec.Maps)-1].Warm = n
	}
}

// startWarm creates n Ready warm instances of the demo room's crypt, as
// the operator would, and waits until the handler's cache has them.
func (e *env) startWarm(n int) []gamev1.MapInstance {
	e.t.Helper()
	room := e.getRoom("demo")
	crypt, _ := room.Spec.Map("crypt")
	var out []gamev1.MapInstance
	for i, name := range instanced.WarmNames("demo", "crypt", e.partyInstances("demo", "crypt"), n) {
		mi := instanced.NewWarm(room, crypt, name)
		e.create(mi)
		e.setStatus(mi, ready("ws://10.0.1."+string(rune('1'+i))+":7350/ws"))
		out = append(out, *mi)
	}
	e.awaitCached("crypt", instanced.PoolCreator, len(out))
	return out
}

// TestPartiesRaceForTheLastWarmInstance: two parties entering at once
// with one warm instance left get two instances: one claims it, the other
// starts one cold; a member of the first party entering later gets its
// party's, and the claim shows in the instance's labels and the metrics.
//
// Not parallel: it reads the process-wide claims counter, which the other
// warm-pool tests move too.
func TestPartiesRaceForTheLastWarmInstance(t *testing.T) {
	e := newEnv(t)
	keys := e.readyRoom("demo", "ws://10.0.0.7:7350/ws", withWarmCrypt(1))
	warm := e.startWarm(1)[0]
	claimedBefore, coldBefore := testutil.ToFloat64(warmClaims.WithLabelValues(claimWarm)), testutil.ToFloat64(warmClaims.WithLabelValues(claimCold))

	a := e.async("demo", partyToken(t, keys, "u-a", "p-a"), DestinationRequest{Map: "crypt", Party: "p-a"})
	b := e.async("demo", partyToken(t, keys, "u-b", "p-b"), DestinationRequest{Map: "crypt", Party: "p-b"})
	cold := e.awaitInstance("demo", "crypt", warm.Name)
	e.setStatus(cold, ready("ws://10.0.2.1:7350/ws"))
	da, db := resolved(t, <-a), resolved(t, <-b)
	if da.Instance == db.Instance || (da.Instance != warm.Name && db.Instance != warm.Name) {
		t.Fatalf("parties a and b got %s and %s: want the warm %s for one and another for the other", da.Instance, db.Instance, warm.Name)
	}
	winner := map[bool]string{true: "p-a", false: "p-b"}[da.Instance == warm.Name]
	if got := testutil.ToFloat64(warmClaims.WithLabelValues(claimWarm)) - claimedBefore; got != 1 {
		t.Errorf("claims counted %v, want 1", got)
	}
	if got := testutil.ToFloat64(warmClaims.WithLabelValues(claimCold)) - coldBefore; got != 1 {
		t.Errorf("cold starts counted %v, want 1", got)
	}
	var claimed gamev1.MapInstance
	for _, mi := range e.partyInstances("demo", "crypt") {
		if mi.Name == warm.Name {
			claimed = mi
		}
	}
	label := instanced.Label("demo", "crypt", instanced.PartyKey(winner, ""))
	if instanced.IsWarm(&claimed) || claimed.Labels[gamev1.LabelParty] != label || claimed.Annotations[gamev1.AnnotationClaimedAt] == "" {
		t.Fatalf("the claimed instance has labels %v and annotations %v: want party %s's, out of the pool", claimed.Labels, claimed.Annotations, winner)
	}
	member := e.destination("demo", partyToken(t, keys, "u-member", winner), DestinationRequest{Map: "crypt", Party: winner})
	if d := resolved(t, member); d.Instance != warm.Name {
		t.Fatalf("a member of %s got %s, want its party's %s", winner, d.Instance, warm.Name)
	}
}

// TestOnePartyMeetsOnOneWarmInstance: members of one party entering at
// once all get the one instance one of them claimed.
func TestOnePartyMeetsOnOneWarmInstance(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	keys := e.readyRoom("demo", "ws://10.0.0.7:7350/ws", withWarmCrypt(3))
	e.startWarm(3)
	const members = 6
	answers := make([]<-chan reply, members)
	for i := range members {
		answers[i] = e.async("demo", partyToken(t, keys, "u-"+string(rune('a'+i)), "p-raid"), DestinationRequest{Map: "crypt", Party: "p-raid"})
	}
	first := resolved(t, <-answers[0]).Instance
	for i := 1; i < members; i++ {
		if got := resolved(t, <-answers[i]).Instance; got != first {
			t.Fatalf("member %d got %s, member 0 %s: the party was split", i, got, first)
		}
	}
	warm := 0
	for _, mi := range e.partyInstances("demo", "crypt") {
		if instanced.IsWarm(&mi) {
			warm++
		}
	}
	if warm != 2 {
		t.Fatalf("%d warm instances left, want 2: the party claimed one", warm)
	}
}

// TestAUserCannotTakeTheWholePool: a claim counts against its creator's
// budget like a start: a keyed user's third party gets room_full, with
// warm instances left.
func TestAUserCannotTakeTheWholePool(t *testing.T) {
	t.Parallel()
	e := newEnv(t, func(o *Options) { o.readyWait = 100 * time.Millisecond })
	keys := e.readyRoom("demo", "ws://10.0.0.7:7350/ws", withWarmCrypt(4))
	e.startWarm(4)
	for i, party := range []string{"p-1", "p-2"} {
		resolved(t, e.destination("demo", partyToken(t, keys, "u-alice", party), DestinationRequest{Map: "crypt", Party: party}))
		e.awaitCached("crypt", instanced.Creator("demo", "u-alice", false, ""), i+1)
	}
	want(t, "alice's third party", e.destination("demo", partyToken(t, keys, "u-alice", "p-3"), DestinationRequest{Map: "crypt", Party: "p-3"}),
		http.StatusConflict, CodeRoomFull)
}
