package joinapi

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	gamev1 "github.com/roomkeeper/roomkeeper/api/v1"
	"github.com/roomkeeper/roomkeeper/internal/token"
)

// want checks one answer's status and error code.
func want(t *testing.T, what string, r reply, status int, code Code) {
	t.Helper()
	if r.status != status || errorCode(r) != code {
		t.Fatalf("%s: answer %s, want %d %s", what, r, status, code)
	}
}

// verify checks a join answer's ticket against the room's keys and returns
// its claims.
func verify(t *testing.T, r reply, keys token.KeySet, room, instance string) (JoinResponse, token.Claims) {
	t.Helper()
	var resp JoinResponse
	if err := json.Unmarshal(r.body, &resp); err != nil {
		t.Fatalf("join answer %s: %v", r, err)
	}
	claims, err := token.NewVerifier(token.StaticKeys(keys), clock).Verify(resp.Ticket,
		token.Expect{Room: room, Map: instance, Types: []string{token.TypeJoin}})
	if err != nil {
		t.Fatalf("the ticket does not verify with the room's keys: %v", err)
	}
	if !claims.ExpiresAt.Equal(resp.ExpiresAt) || !claims.IssuedAt.Equal(testClock) {
		t.Fatalf("ticket iat %v exp %v, answer expiresAt %v; want iat %v and the same exp", claims.IssuedAt, claims.ExpiresAt, resp.ExpiresAt, testClock)
	}
	return resp, claims
}

func TestJoinErrors(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	want(t, "no room", e.join("demo", JoinRequest{}), http.StatusNotFound, CodeRoomNotFound)

	keys := e.createRoom("demo", withMap("forest"), withInstancedMap("crypt"))
	e.eventually(http.StatusConflict, CodeRoomNotReady, func() reply { return e.join("demo", JoinRequest{}) })
	town := e.createInstance("demo", "town")
	want(t, "no status", e.join("demo", JoinRequest{}), http.StatusConflict, CodeRoomNotReady)
	e.setStatus(town, func(s *gamev1.MapInstanceStatus) {
		ready("ws://10.0.0.7:7350/ws")(s)
		s.Endpoint = ""
	})
	e.eventually(http.StatusConflict, CodeRoomNotReady, func() reply { return e.join("demo", JoinRequest{}) })

	for name, body := range map[string]any{
		"unknown map":               JoinRequest{Map: "swamp"},
		"instanced map":             JoinRequest{Map: "crypt"},
		"keyed join without a db":   JoinRequest{AuthKey: "alice-key"},
		"characterId without a key": JoinRequest{CharacterID: "c-1"},
		"overlong characterId":      JoinRequest{AuthKey: "k", CharacterID: strings.Repeat("c", 65)},
		"characterId with a NUL":    JoinRequest{AuthKey: "k", CharacterID: "c-\x00"},
		"characterId with a space":  JoinRequest{AuthKey: "k", CharacterID: "c 1"},
		"overlong authKey":          JoinRequest{AuthKey: strings.Repeat("k", 257)},
		"overlong party":            JoinRequest{Party: strings.Repeat("p", 65)},
		"party with a slash":        JoinRequest{Party: "a/b"},
		"not JSON":                  `{"map": town}`,
		"unknown field":             `{"map": "town", "mapp": "town"}`,
		"wrong type":                `{"map": 7}`,
		"two values":                `{} {}`,
		"body over 4 KiB":           `{"map": "town"` + strings.Repeat(" ", 4096) + `}`,
		"trailing bytes over 4 KiB": `{"map": "town"}` + strings.Repeat(" ", 4096),
	} {
		want(t, name, e.join("demo", body), http.StatusBadRequest, CodeBadRequest)
	}
	r := e.join("demo", JoinRequest{AuthKey: "alice-key"})
	if msg := r.errorBody(t).Message; msg != "this room has no database: join without an authKey" {
		t.Fatalf("keyed join without a database: message %q", msg)
	}

	// Quarantined: 503 with how long, in the body and in Retry-After.
	e.setStatus(town, quarantined(testClock.Add(42*time.Second)))
	r = e.eventually(http.StatusServiceUnavailable, CodeMapQuarantined, func() reply { return e.join("demo", JoinRequest{}) })
	if b := r.errorBody(t); b.RetryAfter != 42 || r.header.Get("Retry-After") != "42" {
		t.Fatalf("quarantined: retryAfter %d, Retry-After %q; want 42", b.RetryAfter, r.header.Get("Retry-After"))
	}
	e.setStatus(town, quarantined(testClock.Add(-time.Minute))) // the operator has not lifted it yet
	r = e.poll(func() reply { return e.join("demo", JoinRequest{}) }, func(r reply) bool {
		return errorCode(r) == CodeMapQuarantined && r.errorBody(t).RetryAfter == 1
	})
	if r.header.Get("Retry-After") != "1" {
		t.Fatalf("quarantine past its end: Retry-After %q, want 1", r.header.Get("Retry-After"))
	}

	e.setStatus(town, ready("ws://10.0.0.7:7350/ws"))
	e.eventually(http.StatusOK, "", func() reply { return e.join("demo", JoinRequest{}) })
	if _, claims := verify(t, e.join("demo", JoinRequest{}), keys, "demo", "demo-town"); claims.Party != "" {
		t.Fatalf("a join without a party token has party %q", claims.Party)
	}
	want(t, "forest has no instance", e.join("demo", JoinRequest{Map: "forest"}), http.StatusConflict, CodeRoomNotReady)

	// Without its keys the room cannot sign.
	if err := k8s.Delete(e.ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "demo-token-keys", Namespace: e.ns}}); err != nil {
		t.Fatal(err)
	}
	e.eventually(http.StatusConflict, CodeRoomNotReady, func() reply { return e.join("demo", JoinRequest{}) })
}

// TestJoinChecksWhoseInstanceItIs: <room>-<map> names can collide across
// rooms (room a-b map c, room a map b-c); the instance's spec decides.
func TestJoinChecksWhoseInstanceItIs(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.createRoom("a", withMap("b-c"))
	mi := e.createInstance("a-b", "c") // a-b-c, room a-b's
	e.setStatus(mi, ready("ws://10.0.0.9:7350/ws"))
	e.eventually(http.StatusConflict, CodeRoomNotReady, func() reply { return e.join("a", JoinRequest{Map: "b-c"}) })
}

func TestGuestJoin(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	keys := e.readyRoom("demo", "ws://10.0.0.7:7350/ws", withDatabase())
	r := e.join("demo", nil) // a bare POST is a guest joining the default map
	want(t, "guest join", r, http.StatusOK, "")
	resp, claims := verify(t, r, keys, "demo", "demo-town")
	if resp.Endpoint != "ws://10.0.0.7:7350/ws" || resp.Map != "town" {
		t.Fatalf("answer %+v, want town's endpoint", resp)
	}
	if !strings.HasPrefix(claims.Subject, GuestPrefix) || !strings.HasPrefix(claims.Character, GuestPrefix) ||
		claims.Type != token.TypeJoin || claims.Room != "demo" || claims.Map != "demo-town" {
		t.Fatalf("claims %+v, want a guest's join ticket for demo-town", claims)
	}
	if !claims.ExpiresAt.Equal(testClock.Add(10 * time.Second)) {
		t.Fatalf("exp %v, want iat + the default ttl of 10s", claims.ExpiresAt)
	}
	_, again := verify(t, e.join("demo", JoinRequest{}), keys, "demo", "demo-town")
	if again.Subject == claims.Subject || again.Character == claims.Character {
		t.Fatal("two guests got the same ids")
	}
	if n := e.count(`SELECT count(*) FROM pg_tables WHERE schemaname = 'public'`); n != 0 {
		t.Fatalf("guests made the join API open (and migrate) the database: %d tables", n)
	}
}

func TestKeyedJoin(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	keys := e.readyRoom("demo", "ws://10.0.0.7:7350/ws", withDatabase(), withMap("forest"), func(r *gamev1.GameRoom) {
		r.Spec.Tokens.TTL = &metav1.Duration{Duration: 30 * time.Second}
	})
	forest := e.createInstance("demo", "forest")
	e.setStatus(forest, ready("ws://10.0.0.8:7350/ws"))
	const key = "alice-auth-key-0123456789"

	_, first := verify(t, e.join("demo", JoinRequest{AuthKey: key}), keys, "demo", "demo-town")
	if first.Subject != UserID(key) || !strings.HasPrefix(first.Character, "c-") {
		t.Fatalf("first keyed join: claims %+v, want sub %s and a new character", first, UserID(key))
	}
	if !first.ExpiresAt.Equal(testClock.Add(30 * time.Second)) {
		t.Fatalf("exp %v, want iat + the room's ttl of 30s", first.ExpiresAt)
	}
	list := e.characters(key)
	if len(list) != 1 || list[0].ID != first.Character || list[0].Name != "hero" || !list[0].Active {
		t.Fatalf("after the first join the user has %+v, want one active hero %s", list, first.Character)
	}
	r := e.eventually(http.StatusOK, "", func() reply { return e.join("demo", JoinRequest{AuthKey: key, Map: "forest"}) })
	resp, second := verify(t, r, keys, "demo", "demo-forest")
	if second.Character != first.Character || resp.Endpoint != "ws://10.0.0.8:7350/ws" || resp.Map != "forest" {
		t.Fatalf("second join: %+v %+v, want the same character in forest", resp, second)
	}
	alt := e.createCharacter(key, CreateCharacterRequest{Name: "Bram"}, http.StatusCreated)
	_, third := verify(t, e.join("demo", JoinRequest{AuthKey: key, CharacterID: alt.ID}), keys, "demo", "demo-town")
	if third.Character != alt.ID {
		t.Fatalf("join with characterId %s played %s", alt.ID, third.Character)
	}
	want(t, "missing character", e.join("demo", JoinRequest{AuthKey: key, CharacterID: "c-missing"}), http.StatusNotFound, CodeNotFound)
	if n := e.count(`SELECT count(*) FROM characters`); n != 2 {
		t.Fatalf("%d characters, want hero and Bram", n)
	}
}

func TestQuarantineLeft(t *testing.T) {
	t.Parallel()
	now := time.Unix(1000, 0)
	at := func(d time.Duration) *metav1.Time { return &metav1.Time{Time: now.Add(d)} }
	twoMinutes := &metav1.Duration{Duration: 2 * time.Minute}
	for _, tc := range []struct {
		name       string
		until      *metav1.Time
		quarantine *metav1.Duration
		want       int
	}{
		{"whole seconds", at(42 * time.Second), twoMinutes, 42},
		{"rounded up", at(41500 * time.Millisecond), twoMinutes, 42},
		{"over", at(-time.Minute), twoMinutes, -60}, // retryIn makes it 1
		{"no end recorded: the room's quarantine", nil, twoMinutes, 120},
		{"no end, no quarantine: the CRD's default", nil, nil, 60},
	} {
		mi := &gamev1.MapInstance{Status: gamev1.MapInstanceStatus{QuarantinedUntil: tc.until}}
		if got := quarantineLeft(mi, tc.quarantine, now); got != tc.want {
			t.Errorf("%s: %d, want %d", tc.name, got, tc.want)
		}
	}
	if got := fail(CodeMapQuarantined, "x").retryIn(-60).body.RetryAfter; got != 1 {
		t.Errorf("retryIn(-60) = %d, want at least 1", got)
	}
}

// TestJoinInternalError: a key Secret the join API cannot read is the
// operator's problem, not the player's: 500 internal, the cause logged at
// error level and not sent.
func TestJoinInternalError(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.readyRoom("demo", "ws://10.0.0.7:7350/ws")
	secret := &corev1.Secret{}
	if err := k8s.Get(e.ctx, client.ObjectKey{Namespace: e.ns, Name: "demo-token-keys"}, secret); err != nil {
		t.Fatal(err)
	}
	secret.Data = map[string][]byte{token.FileCurrentKID: []byte("k1"), token.FileCurrentKey: []byte("short")}
	if err := k8s.Update(e.ctx, secret); err != nil {
		t.Fatal(err)
	}
	r := e.eventually(http.StatusInternalServerError, CodeInternal, func() reply { return e.join("demo", JoinRequest{}) })
	if msg := r.errorBody(t).Message; msg != "internal error" {
		t.Fatalf("internal error message %q tells the client too much", msg)
	}
	if logs := e.log.String(); !strings.Contains(logs, "Request failed") || !strings.Contains(logs, "current.key") {
		t.Fatalf("the cause is not logged:\n%s", logs)
	}
}

// TestStrictBodies: every body the join API reads is strict JSON (keys in
// their exact case, none twice, none unknown), and the answer names the
// key. encoding/json alone takes each of these.
func TestStrictBodies(t *testing.T) {
	t.Parallel()
	h := NewHandler(Options{Log: logr.Discard(), Limits: generous})
	const room = "/v1/namespaces/default/gamerooms/demo"
	for _, tc := range []struct {
		path, body, message string
	}{
		{room + "/join", `{"AuthKey": "k"}`, `body: unknown field "AuthKey": keys are case-sensitive, the field is "authKey"`},
		{room + "/join", `{"map": "town", "MAP": "forest"}`, `body: unknown field "MAP": keys are case-sensitive, the field is "map"`},
		{room + "/join", `{"map": "town", "map": "forest"}`, `body: duplicate key "map"`},
		{room + "/join", `{"authKey": "a", "\u0061uthKey": "b"}`, `body: duplicate key "authKey"`},
		{room + "/join", `{"party": "p", "extra": 1}`, `body: unknown field "extra"`},
		{room + "/characters", `{"name": "Ayla", "Name": "Bram"}`, `body: unknown field "Name": keys are case-sensitive, the field is "name"`},
		{room + "/characters", `{"name": "Ayla", "active": true, "active": false}`, `body: duplicate key "active"`},
		{"/v1/internal/namespaces/default/gamerooms/demo/destinations", `{"map": "crypt", "Party": "p"}`,
			`body: unknown field "Party": keys are case-sensitive, the field is "party"`},
		{"/v1/internal/namespaces/default/gamerooms/demo/destinations", `{"map": "crypt", "map": "town"}`, `body: duplicate key "map"`},
	} {
		req := httptest.NewRequest(http.MethodPost, tc.path, strings.NewReader(tc.body))
		req.Header.Set("Authorization", "Bearer k")
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		var body ErrorBody
		if err := json.Unmarshal(rec.Body.Bytes(), &body); err != nil || rec.Code != http.StatusBadRequest ||
			body.Code != CodeBadRequest || body.Message != tc.message {
			t.Errorf("POST %s %s: answer %d %s, want 400 bad_request %q", tc.path, tc.body, rec.Code, rec.Body, tc.message)
		}
	}
}

// TestABannedUserGetsNoTicket: a user an operator banned is refused a
// join (403 banned, until when and why); others are not; once the ban
// ends, the user joins again.
func TestABannedUserGetsNoTicket(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.readyRoom("demo", "ws://10.0.0.7:7350/ws", withDatabase())
	const cheat, honest = "cheat-auth-key-0123456789", "honest-auth-key-9876543210"
	if r := e.join("demo", JoinRequest{AuthKey: honest}); r.status != http.StatusOK { // the join API migrates the database
		t.Fatalf("a first join: %d %s", r.status, r.body)
	}
	e.exec(`INSERT INTO bans (user_id, until, reason, banned_by) VALUES ($1, $2, 'speed hack', 'mod')`,
		UserID(cheat), testClock.Add(time.Hour))
	r := e.join("demo", JoinRequest{AuthKey: cheat})
	want(t, "a banned user's join", r, http.StatusForbidden, CodeBanned)
	if msg := r.errorBody(t).Message; !strings.Contains(msg, "speed hack") || !strings.Contains(msg, testClock.Add(time.Hour).Format(time.RFC3339)) {
		t.Errorf("the refusal says %q, want until when and why", msg)
	}
	if r := e.join("demo", JoinRequest{AuthKey: honest}); r.status != http.StatusOK {
		t.Errorf("another user's join: %d %s", r.status, r.body)
	}
	e.exec(`UPDATE bans SET until = $1 WHERE user_id = $2`, testClock.Add(-time.Second), UserID(cheat))
	if r := e.join("demo", JoinRequest{AuthKey: cheat}); r.status != http.StatusOK {
		t.Errorf("the join once the ban ended: %d %s", r.status, r.body)
	}
}
