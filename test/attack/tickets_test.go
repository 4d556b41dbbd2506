package attack

import (
	"context"
	"crypto/rand"
	"crypto/rsa"
	"encoding/base64"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"

	"github.com/roomkeeper/roomkeeper/internal/protocol"
	"github.com/roomkeeper/roomkeeper/internal/token"
	"github.com/roomkeeper/roomkeeper/pkg/client"
)

// claims are the claims of a join ticket for character as the join API
// would sign them now, for an attacker to change before signing.
func claims(character string) jwt.MapClaims {
	now := time.Now()
	return jwt.MapClaims{
		"jti": newCharacter("jti"), "typ": token.TypeJoin, "sub": "user-" + character, "chr": character,
		"room": room, "map": instance, "iat": now.Unix(), "exp": now.Add(ticketTTL).Unix(),
	}
}

// with returns c changed by pairs of claim, value; a nil value removes
// the claim.
func with(c jwt.MapClaims, kv ...any) jwt.MapClaims {
	for i := 0; i+1 < len(kv); i += 2 {
		name := kv[i].(string)
		if kv[i+1] == nil {
			delete(c, name)
			continue
		}
		c[name] = kv[i+1]
	}
	return c
}

// forge signs c with method and key, naming kid ("" for no kid header).
func forge(t testing.TB, method jwt.SigningMethod, key any, kid string, c jwt.MapClaims) string {
	t.Helper()
	tok := jwt.NewWithClaims(method, c)
	if kid != "" {
		tok.Header["kid"] = kid
	}
	raw, err := tok.SignedString(key)
	if err != nil {
		t.Fatalf("signing %s: %v", method.Alg(), err)
	}
	return raw
}

// roomSigned is c signed as the room signs (HS256, its key and kid): only
// the claims are the attack.
func roomSigned(t testing.TB, c jwt.MapClaims) string {
	t.Helper()
	needSuite(t)
	return forge(t, jwt.SigningMethodHS256, suite.keys.Current.Secret, suite.keys.Current.ID, c)
}

// tampered is a good ticket whose character was changed after signing.
func tampered(t testing.TB, character, to string) string {
	t.Helper()
	parts := strings.Split(ticket(t, character), ".")
	payload, err := base64.RawURLEncoding.DecodeString(parts[1])
	if err != nil {
		t.Fatal(err)
	}
	var c map[string]any
	if err := json.Unmarshal(payload, &c); err != nil {
		t.Fatal(err)
	}
	c["chr"], c["sub"] = to, "user-"+to
	if payload, err = json.Marshal(c); err != nil {
		t.Fatal(err)
	}
	parts[1] = base64.RawURLEncoding.EncodeToString(payload)
	return strings.Join(parts, ".")
}

// TestForgedAndInvalidTicketsAreRefused: every ticket that is not one the
// room signed for this map, now, is refused with the documented code and
// a close 1008 (docs/protocol.md, Error codes); the controls show that
// the server admits good tickets meanwhile.
func TestForgedAndInvalidTicketsAreRefused(t *testing.T) {
	ctx := caseContext(t)
	r := startServer(t, newDatabase(t), townMap)
	otherKey, err := token.NewKey()
	if err != nil {
		t.Fatal(err)
	}
	rsaKey, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	kid, secret := suite.keys.Current.ID, suite.keys.Current.Secret
	now := time.Now()
	long := strings.Repeat("u", 129)
	cases := []struct {
		name   string
		ticket func(character string) string
		want   protocol.Code
	}{
		{"forged signature, the room's kid", func(c string) string {
			return forge(t, jwt.SigningMethodHS256, otherKey.Secret, kid, claims(c))
		}, protocol.CodeUnauthorized},
		{"claims changed after signing", func(c string) string { return tampered(t, c, c+"-stolen") }, protocol.CodeUnauthorized},
		{"alg none", func(c string) string {
			return forge(t, jwt.SigningMethodNone, jwt.UnsafeAllowNoneSignatureType, kid, claims(c))
		}, protocol.CodeUnauthorized},
		{"HS512 with the room's key", func(c string) string {
			return forge(t, jwt.SigningMethodHS512, secret, kid, claims(c))
		}, protocol.CodeUnauthorized},
		{"RS256", func(c string) string { return forge(t, jwt.SigningMethodRS256, rsaKey, kid, claims(c)) }, protocol.CodeUnauthorized},
		{"unknown kid, the room's key", func(c string) string {
			return forge(t, jwt.SigningMethodHS256, secret, "not-"+kid, claims(c))
		}, protocol.CodeUnauthorized},
		{"no kid, the room's key", func(c string) string { return forge(t, jwt.SigningMethodHS256, secret, "", claims(c)) }, protocol.CodeUnauthorized},
		{"expired", func(c string) string {
			return roomSigned(t, with(claims(c), "iat", now.Add(-time.Minute).Unix(), "exp", now.Add(-50*time.Second).Unix()))
		}, protocol.CodeTokenExpired},
		{"expired and forged", func(c string) string {
			return forge(t, jwt.SigningMethodHS256, otherKey.Secret, kid,
				with(claims(c), "iat", now.Add(-time.Minute).Unix(), "exp", now.Add(-50*time.Second).Unix()))
		}, protocol.CodeUnauthorized},
		{"no exp", func(c string) string { return roomSigned(t, with(claims(c), "exp", nil)) }, protocol.CodeUnauthorized},
		{"valid for ten years", func(c string) string {
			return roomSigned(t, with(claims(c), "exp", now.AddDate(10, 0, 0).Unix()))
		}, protocol.CodeUnauthorized},
		{"issued two minutes in the future", func(c string) string {
			return roomSigned(t, with(claims(c), "iat", now.Add(2*time.Minute).Unix(), "exp", now.Add(2*time.Minute+ticketTTL).Unix()))
		}, protocol.CodeUnauthorized},
		{"not valid before a minute from now", func(c string) string {
			return roomSigned(t, with(claims(c), "nbf", now.Add(time.Minute).Unix()))
		}, protocol.CodeUnauthorized},
		{"another room", func(c string) string { return roomSigned(t, with(claims(c), "room", "other")) }, protocol.CodeUnauthorized},
		{"another map of the room", func(c string) string { return roomSigned(t, with(claims(c), "map", "demo-crypt")) }, protocol.CodeWrongMap},
		{"a destination request", func(c string) string {
			return roomSigned(t, with(claims(c), "typ", token.TypeDestination, "from", "demo-crypt"))
		}, protocol.CodeUnauthorized},
		{"an unknown typ", func(c string) string { return roomSigned(t, with(claims(c), "typ", "admin")) }, protocol.CodeUnauthorized},
		{"a transfer token of no transfer", func(c string) string {
			return roomSigned(t, with(claims(c), "typ", token.TypeTransfer, "from", "demo-crypt", "xfr", "no-such-transfer"))
		}, protocol.CodeUnauthorized},
		{"sub over 128 bytes", func(c string) string { return roomSigned(t, with(claims(c), "sub", long)) }, protocol.CodeUnauthorized},
		{"chr over 128 bytes", func(c string) string { return roomSigned(t, with(claims(c), "chr", long)) }, protocol.CodeUnauthorized},
		{"chr with a NUL byte", func(c string) string { return roomSigned(t, with(claims(c), "chr", c+"\x00admin")) }, protocol.CodeUnauthorized},
		{"chr with a newline", func(c string) string { return roomSigned(t, with(claims(c), "chr", c+"\nadmin")) }, protocol.CodeUnauthorized},
		{"sub with an escape", func(c string) string { return roomSigned(t, with(claims(c), "sub", "user-\x1b[2J")) }, protocol.CodeUnauthorized},
		{"jti with DEL", func(c string) string { return roomSigned(t, with(claims(c), "jti", "j\x7f")) }, protocol.CodeUnauthorized},
		{"ticket over 4096 bytes", func(c string) string {
			return roomSigned(t, with(claims(c), "pad", strings.Repeat("p", 4096)))
		}, protocol.CodeUnauthorized},
		{"not a JWT", func(string) string { return "not-a-jwt" }, protocol.CodeUnauthorized},
		{"empty", func(string) string { return "" }, protocol.CodeUnauthorized},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			expectRefusedHello(t, ctx, r, protocol.Hello{Ticket: tc.ticket(newCharacter("forger"))}, tc.want)
		})
	}
	t.Run("unknown resume token", func(t *testing.T) {
		expectRefusedHello(t, ctx, r, protocol.Hello{Resume: "q3JxAAAAAAAAAAAAAAAAAA"}, protocol.CodeUnauthorized)
	})

	// Controls: the same server admits what the room does sign.
	t.Run("control: a good ticket", func(t *testing.T) {
		expectWelcome(t, ctx, r, protocol.Hello{Ticket: ticket(t, newCharacter("good"))})
	})
	t.Run("control: issued 30 s in the future (clock skew)", func(t *testing.T) {
		c := newCharacter("skewed")
		raw := roomSigned(t, with(claims(c), "iat", now.Add(30*time.Second).Unix(), "exp", now.Add(30*time.Second+ticketTTL).Unix()))
		expectWelcome(t, ctx, r, protocol.Hello{Ticket: raw})
	})
	t.Run("control: chr of exactly 128 bytes", func(t *testing.T) {
		c := newCharacter("c")
		c += strings.Repeat("c", 128-len(c))
		expectWelcome(t, ctx, r, protocol.Hello{Ticket: ticket(t, c, func(cl *token.Claims) { cl.Subject = "user-128" })})
	})
	t.Run("control: a guest ticket for a guest character", func(t *testing.T) {
		g := newCharacter("guest")
		expectWelcome(t, ctx, r, protocol.Hello{Ticket: ticket(t, g, func(c *token.Claims) { c.Subject = g })})
	})
	logResources(t, r, "after the ticket attacks")
}

// TestTicketsCannotTakeAnotherCharacter: a guest ticket naming a player's
// character, a player's ticket naming a guest character (unauthorized),
// and a player's ticket naming another player's character (not_owner)
// are refused, and the owner plays on.
func TestTicketsCannotTakeAnotherCharacter(t *testing.T) {
	ctx := caseContext(t)
	r := startServer(t, newDatabase(t), townMap)
	hilda := newCharacter("hilda")
	owner := join(t, ctx, r, hilda)

	t.Run("guest ticket for a player's character", func(t *testing.T) {
		expectRefusedHello(t, ctx, r, protocol.Hello{Ticket: ticket(t, hilda, func(c *token.Claims) { c.Subject = "guest-" + hilda })},
			protocol.CodeUnauthorized)
	})
	t.Run("player's ticket for a guest character", func(t *testing.T) {
		expectRefusedHello(t, ctx, r, protocol.Hello{Ticket: ticket(t, "guest-"+newCharacter("c"))}, protocol.CodeUnauthorized)
	})
	t.Run("player's ticket for another player's character", func(t *testing.T) {
		expectRefusedHello(t, ctx, r, protocol.Hello{Ticket: ticket(t, hilda, func(c *token.Claims) { c.Subject = "user-eve" })},
			protocol.CodeNotOwner)
	})
	expectPlaying(t, ctx, owner, "the owner")
}

// TestReplayedTicketsAreRefusedAcrossARestart: a used ticket is
// token_replayed while its player plays, after it left, and on a new room
// server process (killed and restarted on the same database) before the
// ticket expires.
func TestReplayedTicketsAreRefusedAcrossARestart(t *testing.T) {
	ctx := caseContext(t)
	dsn := newDatabase(t)
	first := startServer(t, dsn, townMap)
	character := newCharacter("replayer")
	// The longest lifetime the room accepts, so the ticket outlives the
	// restart: a replay must be refused as a replay, not as expired.
	raw, signed, err := suite.signer.Sign(token.Claims{Type: token.TypeJoin, Subject: "user-" + character, Character: character,
		Room: room, Map: instance}, maxLifetime)
	if err != nil {
		t.Fatal(err)
	}
	c, err := client.Dial(ctx, first.url, protocol.Hello{Ticket: raw}, client.Options{})
	if err != nil {
		t.Fatalf("first use of the ticket: %v", err)
	}
	t.Run("while its player plays", func(t *testing.T) {
		expectRefusedHello(t, ctx, first, protocol.Hello{Ticket: raw}, protocol.CodeTokenReplayed)
	})
	_ = c.Close()
	t.Run("after its player left", func(t *testing.T) {
		expectRefusedHello(t, ctx, first, protocol.Hello{Ticket: raw}, protocol.CodeTokenReplayed)
	})

	killedAt := time.Now()
	first.kill()
	second := startServer(t, dsn, townMap)
	record(t, "kill -9 to the new process ready", "%s", time.Since(killedAt).Round(time.Millisecond))
	if left := time.Until(signed.ExpiresAt); left < 3*time.Second {
		t.Fatalf("the restart took so long that the ticket (valid until %s) is about to expire: cannot test a replay", signed.ExpiresAt)
	}
	t.Run("on a restarted server", func(t *testing.T) {
		expectRefusedHello(t, ctx, second, protocol.Hello{Ticket: raw}, protocol.CodeTokenReplayed)
	})
	t.Run("control: a new ticket on the restarted server", func(t *testing.T) {
		expectWelcome(t, ctx, second, protocol.Hello{Ticket: ticket(t, newCharacter("fresh"))})
	})
	var consumed int
	if err := openDB(t, dsn).QueryRowContext(ctx, "SELECT count(*) FROM consumed_tokens WHERE jti = $1", signed.ID).Scan(&consumed); err != nil {
		t.Fatal(err)
	}
	if consumed != 1 {
		t.Fatalf("consumed_tokens has %d rows for the ticket's jti, want 1", consumed)
	}
	logResources(t, second, "restarted server")
}

// expectPlaying fails unless c's movement is still applied.
func expectPlaying(t *testing.T, ctx context.Context, c *client.Client, who string) {
	t.Helper()
	seq, err := c.MoveSteps(0, 1, 2)
	if err != nil {
		t.Fatalf("%s cannot send: %v", who, err)
	}
	if s, err := c.WaitFor(ctx, func(s client.State) bool { return s.AckSeq >= seq }); err != nil {
		t.Fatalf("%s no longer plays (closed: %v): %v", who, s.Closed, err)
	}
}
