package joinapi

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	gamev1 "github.com/roomkeeper/roomkeeper/api/v1"
	"github.com/roomkeeper/roomkeeper/internal/token"
)

func (e *env) createParty(room string, req any) reply {
	e.t.Helper()
	return e.do(http.MethodPost, e.roomPath(room)+"/parties", "", req)
}

func (e *env) invite(room, party, bearer string) reply {
	e.t.Helper()
	return e.do(http.MethodPost, e.roomPath(room)+"/parties/"+party+"/invites", bearer, nil)
}

// partyAnswer decodes a party answer.
func partyAnswer(t *testing.T, r reply) Party {
	t.Helper()
	var p Party
	if r.status != http.StatusCreated {
		t.Fatalf("party answer %s, want 201", r)
	}
	if err := json.Unmarshal(r.body, &p); err != nil {
		t.Fatalf("party answer %s: %v", r, err)
	}
	return p
}

// TestParties: a party is made by the join API and joined only with its
// token; its leader invites, its members cannot; a party id alone, a
// forged, another room's or an expired token joins nobody to anything.
func TestParties(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	keys := e.readyRoom("demo", "ws://10.0.0.7:7350/ws", withDatabase())
	e.readyRoom("other", "ws://10.0.0.8:7350/ws")

	lead := partyAnswer(t, e.createParty("demo", CreatePartyRequest{AuthKey: "alice-key"}))
	if !strings.HasPrefix(lead.Party, partyIDPrefix) || lead.Role != token.RoleLeader || lead.Leader != UserID("alice-key") ||
		lead.MaxSize != 10 || !lead.ExpiresAt.Equal(testClock.Add(24*time.Hour)) {
		t.Fatalf("created %+v, want alice leading a fresh party of up to 10 for a day", lead)
	}
	if other := partyAnswer(t, e.createParty("demo", nil)); other.Party == lead.Party || !strings.HasPrefix(other.Leader, GuestPrefix) {
		t.Fatalf("a guest's party %+v: want a new party led by a guest", other)
	}
	member := partyAnswer(t, e.invite("demo", lead.Party, lead.Token))
	if member.Party != lead.Party || member.Role != token.RoleMember || member.Leader != lead.Leader || !member.ExpiresAt.Equal(lead.ExpiresAt) {
		t.Fatalf("invited %+v, want a member of %s expiring with it", member, lead.Party)
	}
	for who, tok := range map[string]string{"the leader": lead.Token, "a member": member.Token} {
		_, claims := verify(t, e.join("demo", JoinRequest{PartyToken: tok}), keys, "demo", "demo-town")
		if claims.Party != lead.Party {
			t.Fatalf("%s joined with party %q, want %q", who, claims.Party, lead.Party)
		}
		_, claims = verify(t, e.join("demo", JoinRequest{PartyToken: tok, Party: lead.Party}), keys, "demo", "demo-town")
		if claims.Party != lead.Party {
			t.Fatalf("%s naming its party joined with party %q", who, claims.Party)
		}
	}

	elsewhere := partyAnswer(t, e.createParty("other", nil))
	expired := signedParty(t, keys, lead.Party, token.RoleLeader, -2*time.Hour)
	forged := signedParty(t, e.createKeys("forger"), lead.Party, token.RoleLeader, time.Hour)
	ticket, _ := verify(t, e.join("demo", JoinRequest{}), keys, "demo", "demo-town")
	for name, req := range map[string]JoinRequest{
		"a stolen party id without its token": {Party: lead.Party},
		"another party's id with a token":     {Party: "p-0123456789abcdef01234567", PartyToken: member.Token},
		"another room's party token":          {PartyToken: elsewhere.Token},
		"a token signed with another key":     {PartyToken: forged},
		"an expired party token":              {PartyToken: expired},
		"a join ticket for a party token":     {PartyToken: ticket.Ticket},
		"not a token":                         {PartyToken: "party"},
	} {
		want(t, name, e.join("demo", req), http.StatusUnauthorized, CodeUnauthorized)
	}

	want(t, "a member inviting", e.invite("demo", lead.Party, member.Token), http.StatusForbidden, CodeNotOwner)
	want(t, "an invitation without a token", e.invite("demo", lead.Party, ""), http.StatusUnauthorized, CodeUnauthorized)
	want(t, "an invitation to another party", e.invite("demo", "p-0123456789abcdef01234567", lead.Token), http.StatusUnauthorized, CodeUnauthorized)
	want(t, "an invitation with another room's token", e.invite("demo", elsewhere.Party, elsewhere.Token), http.StatusUnauthorized, CodeUnauthorized)
	want(t, "an invitation with an expired token", e.invite("demo", lead.Party, expired), http.StatusUnauthorized, CodeUnauthorized)
	want(t, "a party in a room that is not", e.createParty("nowhere", nil), http.StatusNotFound, CodeRoomNotFound)
	want(t, "a party with an unknown field", e.createParty("demo", `{"leader": "me"}`), http.StatusBadRequest, CodeBadRequest)
	want(t, "a party naming another room than its path", e.createParty("demo", CreatePartyRequest{Room: "other"}), http.StatusBadRequest, CodeBadRequest)

	// POST /v1/parties names the room in its body.
	byBody := partyAnswer(t, e.do(http.MethodPost, "/v1/parties", "", CreatePartyRequest{Namespace: e.ns, Room: "demo", AuthKey: "bob-key"}))
	if byBody.Leader != UserID("bob-key") || byBody.Role != token.RoleLeader {
		t.Fatalf("POST /v1/parties made %+v, want bob leading a party of demo", byBody)
	}
	if _, claims := verify(t, e.join("demo", JoinRequest{PartyToken: byBody.Token}), keys, "demo", "demo-town"); claims.Party != byBody.Party {
		t.Fatalf("joined with party %q, want %q", claims.Party, byBody.Party)
	}
	want(t, "POST /v1/parties without a room", e.do(http.MethodPost, "/v1/parties", "", CreatePartyRequest{}), http.StatusBadRequest, CodeBadRequest)
	want(t, "POST /v1/parties for a room that is not", e.do(http.MethodPost, "/v1/parties", "", CreatePartyRequest{Namespace: e.ns, Room: "nowhere"}),
		http.StatusNotFound, CodeRoomNotFound)
}

// TestPartyLifetime: a party lasts a day, or the room's key rotation
// interval when that is shorter (its key must still verify it).
func TestPartyLifetime(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.readyRoom("brief", "ws://10.0.0.7:7350/ws", withRotation(time.Hour))
	if p := partyAnswer(t, e.createParty("brief", nil)); !p.ExpiresAt.Equal(testClock.Add(time.Hour)) {
		t.Fatalf("a party of a room rotating keys hourly expires at %v, want in an hour", p.ExpiresAt)
	}
}

// signedParty is a party token of party signed with keys, valid for ttl
// from now (a negative ttl: one that expired -ttl ago).
func signedParty(t *testing.T, keys token.KeySet, party, role string, ttl time.Duration) string {
	t.Helper()
	at := testClock
	if ttl < 0 {
		at, ttl = testClock.Add(2*ttl), -ttl
	}
	raw, _, err := token.NewSigner(token.StaticKeys(keys), func() time.Time { return at }).Sign(token.Claims{
		Type: token.TypeParty, Subject: "u-leader", Room: "demo", Party: party, Role: role}, ttl)
	if err != nil {
		t.Fatal(err)
	}
	return raw
}

func withRotation(d time.Duration) roomOption {
	return func(r *gamev1.GameRoom) { r.Spec.Tokens.RotationInterval = &metav1.Duration{Duration: d} }
}
