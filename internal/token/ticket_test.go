package token

import (
	"crypto/rand"
	"crypto/rsa"
	"encoding/base64"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"
)

// t0 is the fixed "now" of these tests; whole seconds, as JWT times are.
var t0 = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

const ttl = 10 * time.Second

// fakeClock is a settable clock for Signer, Verifier and replay guards.
type fakeClock struct{ now time.Time }

func (c *fakeClock) Now() time.Time          { return c.now }
func (c *fakeClock) Advance(d time.Duration) { c.now = c.now.Add(d) }

func newKeySet(t testing.TB) KeySet {
	t.Helper()
	ks, err := Rotate(KeySet{})
	if err != nil {
		t.Fatal(err)
	}
	return ks
}

func joinClaims() Claims {
	return Claims{Type: TypeJoin, Subject: "user-1", Character: "chr-1", Room: "dungeon", Map: "town"}
}

func transferClaims() Claims {
	return Claims{Type: TypeTransfer, Subject: "user-1", Character: "chr-1", Room: "dungeon", Map: "cave", From: "town", Transfer: "xfr-1", Party: "p1"}
}

func expectFor(c Claims) Expect {
	return Expect{Room: c.Room, Map: c.Map}
}

// mustSign signs c at the clock's now with keys' current key.
func mustSign(t testing.TB, keys KeySource, clock *fakeClock, c Claims) (string, Claims) {
	t.Helper()
	raw, signed, err := NewSigner(keys, clock.Now).Sign(c, ttl)
	if err != nil {
		t.Fatalf("signing: %v", err)
	}
	return raw, signed
}

func TestSignVerifyRoundTrip(t *testing.T) {
	keys := StaticKeys(newKeySet(t))
	for name, c := range map[string]Claims{"join": joinClaims(), "transfer": transferClaims()} {
		t.Run(name, func(t *testing.T) {
			clock := &fakeClock{now: t0.Add(400 * time.Millisecond)}
			raw, signed, err := NewSigner(keys, clock.Now).Sign(c, ttl)
			if err != nil {
				t.Fatal(err)
			}
			want := c
			want.ID = signed.ID
			want.IssuedAt, want.ExpiresAt = t0, t0.Add(ttl)
			if signed != want {
				t.Fatalf("signed claims\n got %+v\nwant %+v", signed, want)
			}
			if n := len(signed.ID); n != 22 {
				t.Errorf("jti %q is %d characters, want 22 (128 bits base64url)", signed.ID, n)
			}

			got, err := NewVerifier(keys, clock.Now).Verify(raw, expectFor(c))
			if err != nil {
				t.Fatalf("verifying: %v", err)
			}
			if got != want {
				t.Fatalf("verified claims\n got %+v\nwant %+v", got, want)
			}
		})
	}
}

func TestSignKeepsGivenIDAndPutsKIDInHeader(t *testing.T) {
	ks := newKeySet(t)
	c := joinClaims()
	c.ID = "fixed-id"
	raw, signed := mustSign(t, StaticKeys(ks), &fakeClock{now: t0}, c)
	if signed.ID != "fixed-id" {
		t.Errorf("jti = %q, want the given one", signed.ID)
	}
	tok, _, err := jwt.NewParser().ParseUnverified(raw, jwt.MapClaims{})
	if err != nil {
		t.Fatal(err)
	}
	if tok.Header["kid"] != ks.Current.ID || tok.Header["alg"] != "HS256" {
		t.Errorf("header = %v, want kid %q and alg HS256", tok.Header, ks.Current.ID)
	}
}

func TestSignRefusesIncompleteClaims(t *testing.T) {
	signer := NewSigner(StaticKeys(newKeySet(t)), (&fakeClock{now: t0}).Now)
	cases := map[string]func(*Claims){
		"no type":              func(c *Claims) { c.Type = "" },
		"unknown type":         func(c *Claims) { c.Type = "admin" },
		"no subject":           func(c *Claims) { c.Subject = "" },
		"no character":         func(c *Claims) { c.Character = "" },
		"no room":              func(c *Claims) { c.Room = "" },
		"no map":               func(c *Claims) { c.Map = "" },
		"join with from":       func(c *Claims) { c.From = "cave" },
		"transfer, no from":    func(c *Claims) { c.Type = TypeTransfer },
		"transfer, no xfr":     func(c *Claims) { c.Type, c.From = TypeTransfer, "town" },
		"join with xfr":        func(c *Claims) { c.Transfer = "xfr-1" },
		"destination, no from": func(c *Claims) { c.Type = TypeDestination },
		"destination with xfr": func(c *Claims) { c.Type, c.From, c.Transfer = TypeDestination, "town", "x" },
	}
	for name, edit := range cases {
		c := joinClaims()
		edit(&c)
		if raw, _, err := signer.Sign(c, ttl); err == nil {
			t.Errorf("%s: signed %q", name, raw)
		}
	}
	for _, d := range []time.Duration{0, -ttl, 500 * time.Millisecond} {
		if raw, _, err := signer.Sign(joinClaims(), d); err == nil {
			t.Errorf("ttl %v: signed %q", d, raw)
		}
	}
	if raw, _, err := NewSigner(StaticKeys{}, nil).Sign(joinClaims(), ttl); err == nil {
		t.Errorf("no key: signed %q", raw)
	}
}

func TestVerifyRefuses(t *testing.T) {
	ks := newKeySet(t)
	keys := StaticKeys(ks)
	clock := &fakeClock{now: t0}
	raw, _ := mustSign(t, keys, clock, joinClaims())
	header, payload, sig := splitJWT(t, raw)
	other := newKeySet(t)
	signAs := func(m jwt.SigningMethod, kid string, key any) string {
		return signRaw(t, m, kid, key, toWire(mustClaims(t, keys, clock, joinClaims())))
	}

	cases := []struct {
		name string
		raw  string
		want Expect
		err  error
	}{
		{"tampered payload", header + "." + editPayload(t, payload, `"map":"town"`, `"map":"vault"`) + "." + sig, Expect{Room: "dungeon", Map: "vault"}, ErrMalformed},
		{"tampered signature", header + "." + payload + "." + flipChar(sig, 5), expectFor(joinClaims()), ErrMalformed},
		{"signature padding bits", header + "." + payload + "." + flipLastBits(t, sig), expectFor(joinClaims()), ErrMalformed},
		{"no signature", header + "." + payload + ".", expectFor(joinClaims()), ErrMalformed},
		{"alg none", signRaw(t, jwt.SigningMethodNone, ks.Current.ID, jwt.UnsafeAllowNoneSignatureType, toWire(mustClaims(t, keys, clock, joinClaims()))), expectFor(joinClaims()), ErrMalformed},
		{"HS512 with the right key", signAs(jwt.SigningMethodHS512, ks.Current.ID, ks.Current.Secret), expectFor(joinClaims()), ErrMalformed},
		{"HS384 with the right key", signAs(jwt.SigningMethodHS384, ks.Current.ID, ks.Current.Secret), expectFor(joinClaims()), ErrMalformed},
		{"RS256", signAs(jwt.SigningMethodRS256, ks.Current.ID, rsaKey(t)), expectFor(joinClaims()), ErrMalformed},
		{"unknown kid", signAs(jwt.SigningMethodHS256, other.Current.ID, other.Current.Secret), expectFor(joinClaims()), ErrMalformed},
		{"right kid, wrong key", signAs(jwt.SigningMethodHS256, ks.Current.ID, other.Current.Secret), expectFor(joinClaims()), ErrMalformed},
		{"no kid", signAs(jwt.SigningMethodHS256, "", ks.Current.Secret), expectFor(joinClaims()), ErrMalformed},
		{"wrong map", raw, Expect{Room: "dungeon", Map: "cave"}, ErrWrongMap},
		{"wrong room", raw, Expect{Room: "castle", Map: "town"}, ErrMalformed},
		{"wrong room and map", raw, Expect{Room: "castle", Map: "cave"}, ErrMalformed},
		{"wrong type", raw, Expect{Room: "dungeon", Map: "town", Types: []string{TypeTransfer}}, ErrMalformed},
		{"empty", "", expectFor(joinClaims()), ErrMalformed},
		{"garbage", "not a token", expectFor(joinClaims()), ErrMalformed},
		{"two segments", header + "." + payload, expectFor(joinClaims()), ErrMalformed},
		{"four segments", raw + ".x", expectFor(joinClaims()), ErrMalformed},
		{"bad base64", "!!!." + payload + "." + sig, expectFor(joinClaims()), ErrMalformed},
		{"huge", raw + strings.Repeat("A", 10000), expectFor(joinClaims()), ErrMalformed},
	}
	v := NewVerifier(keys, clock.Now)
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, err := v.Verify(tc.raw, tc.want)
			if !errors.Is(err, tc.err) {
				t.Fatalf("error = %v, want %v", err, tc.err)
			}
			t.Log(err)
			if got != (Claims{}) {
				t.Errorf("refused ticket returned claims %+v", got)
			}
		})
	}
}

func TestVerifyAcceptsListedTypes(t *testing.T) {
	keys := StaticKeys(newKeySet(t))
	clock := &fakeClock{now: t0}
	raw, _ := mustSign(t, keys, clock, transferClaims())
	want := Expect{Room: "dungeon", Map: "cave", Types: []string{TypeJoin, TypeTransfer}}
	if _, err := NewVerifier(keys, clock.Now).Verify(raw, want); err != nil {
		t.Fatal(err)
	}
}

func TestVerifyRefusesBadClaimsEvenWhenSigned(t *testing.T) {
	ks := newKeySet(t)
	keys := StaticKeys(ks)
	clock := &fakeClock{now: t0}
	cases := map[string]func(*wireClaims){
		"no jti":            func(w *wireClaims) { w.ID = "" },
		"unknown typ":       func(w *wireClaims) { w.Type = "admin" },
		"no sub":            func(w *wireClaims) { w.Subject = "" },
		"no chr":            func(w *wireClaims) { w.Character = "" },
		"join with from":    func(w *wireClaims) { w.From = "cave" },
		"transfer, no from": func(w *wireClaims) { w.Type = TypeTransfer },
		"transfer, no xfr":  func(w *wireClaims) { w.Type, w.From = TypeTransfer, "town" },
		"join with xfr":     func(w *wireClaims) { w.Transfer = "x" },
		"join with sid":     func(w *wireClaims) { w.Session = "seat" },
		"join with ep":      func(w *wireClaims) { w.Epoch = 7 },
		"resume, no sid":    func(w *wireClaims) { w.Type = TypeResume },
		"resume, ep < 0":    func(w *wireClaims) { w.Type, w.Session, w.Epoch = TypeResume, "seat", -1 },
		"resume with xfr":   func(w *wireClaims) { w.Type, w.Session, w.Transfer = TypeResume, "seat", "x" },
		"no exp":            func(w *wireClaims) { w.ExpiresAt = nil },
		"no iat":            func(w *wireClaims) { w.IssuedAt = nil },
	}
	for name, edit := range cases {
		w := toWire(mustClaims(t, keys, clock, joinClaims()))
		edit(&w)
		raw := signRaw(t, jwt.SigningMethodHS256, ks.Current.ID, ks.Current.Secret, w)
		if _, err := NewVerifier(keys, clock.Now).Verify(raw, expectFor(joinClaims())); !errors.Is(err, ErrMalformed) {
			t.Errorf("%s: error = %v, want ErrMalformed", name, err)
		}
	}
}

// TestResumeTokenRoundTrip signs a resume token and verifies it only
// where resume tokens are asked for, with its seat, attachment and epoch.
func TestResumeTokenRoundTrip(t *testing.T) {
	keys := StaticKeys(newKeySet(t))
	clock := &fakeClock{now: t0}
	c := Claims{Type: TypeResume, Subject: "user-1", Character: "chr-1", Room: "dungeon", Map: "cave",
		Session: "seat-1", Generation: 3, Epoch: 42, Party: "p"}
	raw, _ := mustSign(t, keys, clock, c)
	v := NewVerifier(keys, clock.Now)
	got, err := v.Verify(raw, Expect{Room: "dungeon", Map: "cave", Types: []string{TypeResume}})
	if err != nil {
		t.Fatal(err)
	}
	if got.Session != "seat-1" || got.Generation != 3 || got.Epoch != 42 || got.Party != "p" {
		t.Errorf("claims %+v lost the seat, attachment, epoch or party", got)
	}
	if _, err := v.Verify(raw, Expect{Room: "dungeon", Map: "cave", Types: []string{TypeJoin, TypeTransfer}}); !errors.Is(err, ErrMalformed) {
		t.Errorf("a resume token admitted as a ticket: %v", err)
	}
	if got, err := v.Verify(raw, Expect{Room: "dungeon", AnyMap: true, Types: []string{TypeResume}}); err != nil || got.Map != "cave" {
		t.Errorf("verified for any map: %+v %v", got, err)
	}
	if _, err := v.Verify(raw, Expect{Room: "other", AnyMap: true}); !errors.Is(err, ErrMalformed) {
		t.Errorf("another room, any map: %v", err)
	}
}

// TestPartyTokenRoundTrip signs a party token and verifies it only where
// party tokens are asked for: it names no map, so no map admits it, and a
// party token with what would place a player is refused even when signed.
func TestPartyTokenRoundTrip(t *testing.T) {
	ks := newKeySet(t)
	keys := StaticKeys(ks)
	clock := &fakeClock{now: t0}
	c := Claims{Type: TypeParty, Subject: "user-1", Room: "dungeon", Party: "p-1", Role: RoleLeader}
	raw, _ := mustSign(t, keys, clock, c)
	v := NewVerifier(keys, clock.Now)
	got, err := v.Verify(raw, Expect{Room: "dungeon", AnyMap: true, Types: []string{TypeParty}})
	if err != nil || got.Party != "p-1" || got.Role != RoleLeader || got.Subject != "user-1" {
		t.Fatalf("verified %+v, %v; want the leader of p-1", got, err)
	}
	for _, want := range []Expect{
		{Room: "dungeon", Map: "town"},
		{Room: "dungeon", Map: "", AnyMap: true, Types: []string{TypeJoin, TypeTransfer, TypeResume}},
	} {
		if _, err := v.Verify(raw, want); err == nil {
			t.Errorf("a party token admitted by %+v", want)
		}
	}
	for name, edit := range map[string]func(*wireClaims){
		"no pty":        func(w *wireClaims) { w.Party = "" },
		"another role":  func(w *wireClaims) { w.Role = "admin" },
		"with a map":    func(w *wireClaims) { w.Map = "town" },
		"with a chr":    func(w *wireClaims) { w.Character = "chr-1" },
		"with a seat":   func(w *wireClaims) { w.Session = "seat" },
		"join with rol": func(w *wireClaims) { w.Type, w.Character, w.Map = TypeJoin, "chr-1", "town" },
	} {
		w := toWire(mustClaims(t, keys, clock, c))
		edit(&w)
		forged := signRaw(t, jwt.SigningMethodHS256, ks.Current.ID, ks.Current.Secret, w)
		if _, err := v.Verify(forged, Expect{Room: "dungeon", AnyMap: true}); !errors.Is(err, ErrMalformed) {
			t.Errorf("%s: error = %v, want ErrMalformed", name, err)
		}
	}
}

func TestVerifyNeedsRoomAndMap(t *testing.T) {
	keys := StaticKeys(newKeySet(t))
	clock := &fakeClock{now: t0}
	raw, _ := mustSign(t, keys, clock, joinClaims())
	for _, want := range []Expect{{Map: "town"}, {Room: "dungeon"}, {Room: "dungeon", Map: "town", AnyMap: true}} {
		if _, err := NewVerifier(keys, clock.Now).Verify(raw, want); err == nil {
			t.Errorf("verified against %+v", want)
		}
	}
}

func TestVerifyExpiry(t *testing.T) {
	keys := StaticKeys(newKeySet(t))
	clock := &fakeClock{now: t0}
	raw, c := mustSign(t, keys, clock, joinClaims())
	v := NewVerifier(keys, clock.Now)

	clock.now = c.ExpiresAt.Add(DefaultLeeway - time.Millisecond)
	if _, err := v.Verify(raw, expectFor(c)); err != nil {
		t.Fatalf("inside the leeway: %v", err)
	}
	clock.now = c.ExpiresAt.Add(DefaultLeeway)
	if _, err := v.Verify(raw, expectFor(c)); !errors.Is(err, ErrExpired) {
		t.Fatalf("at exp+leeway: error = %v, want ErrExpired", err)
	}
	if _, err := v.WithLeeway(5*time.Second).Verify(raw, expectFor(c)); err != nil {
		t.Fatalf("with a longer leeway: %v", err)
	}
	clock.Advance(time.Hour)
	if _, err := v.Verify(raw, expectFor(c)); !errors.Is(err, ErrExpired) {
		t.Fatalf("an hour later: error = %v, want ErrExpired", err)
	}
}

func TestVerifyExpiredForgeryIsMalformed(t *testing.T) {
	keys := StaticKeys(newKeySet(t))
	clock := &fakeClock{now: t0}
	raw, c := mustSign(t, StaticKeys(newKeySet(t)), clock, joinClaims())
	clock.Advance(time.Hour)
	if _, err := NewVerifier(keys, clock.Now).Verify(raw, expectFor(c)); !errors.Is(err, ErrMalformed) {
		t.Fatalf("error = %v, want ErrMalformed: expiry must not be reported before the signature checks", err)
	}
}

func TestRotation(t *testing.T) {
	ks := newKeySet(t)
	src := &swapKeys{}
	src.set(ks)
	clock := &fakeClock{now: t0}
	raw, c := mustSign(t, src, clock, joinClaims())
	v := NewVerifier(src, clock.Now)

	once, err := Rotate(ks)
	if err != nil {
		t.Fatal(err)
	}
	if once.Previous == nil || once.Previous.ID != ks.Current.ID || once.Current.ID == ks.Current.ID {
		t.Fatalf("one rotation gave %v from %v", once, ks)
	}
	src.set(once)
	if _, err := v.Verify(raw, expectFor(c)); err != nil {
		t.Fatalf("after one rotation: %v", err)
	}
	fresh, _ := mustSign(t, src, clock, joinClaims())
	if kidOf(t, fresh) != once.Current.ID {
		t.Errorf("signer still uses the old key after a rotation")
	}

	twice, err := Rotate(once)
	if err != nil {
		t.Fatal(err)
	}
	src.set(twice)
	if _, err := v.Verify(raw, expectFor(c)); !errors.Is(err, ErrMalformed) {
		t.Fatalf("after two rotations: error = %v, want ErrMalformed", err)
	}
}

// FuzzVerify checks that no input panics the verifier and that nothing but a
// ticket signed with the room's key verifies.
func FuzzVerify(f *testing.F) {
	keys := StaticKeys(newKeySet(f))
	clock := &fakeClock{now: t0}
	foreign, _ := mustSign(f, StaticKeys(newKeySet(f)), clock, joinClaims())
	header, payload, _ := splitJWT(f, foreign)
	for _, seed := range []string{
		"", ".", "..", "a.b.c", foreign, header + "." + payload + ".",
		"eyJhbGciOiJub25lIn0.e30.", header + ".bnVsbA.AAAA", strings.Repeat(".", 100),
	} {
		f.Add(seed)
	}
	v := NewVerifier(keys, clock.Now)
	f.Fuzz(func(t *testing.T, raw string) {
		if c, err := v.Verify(raw, expectFor(joinClaims())); err == nil {
			t.Fatalf("%q verified as %+v", raw, c)
		}
	})
}

func BenchmarkSign(b *testing.B) {
	s := NewSigner(StaticKeys(newKeySet(b)), nil)
	c := joinClaims()
	b.ReportAllocs()
	for b.Loop() {
		if _, _, err := s.Sign(c, ttl); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkVerify(b *testing.B) {
	keys := StaticKeys(newKeySet(b))
	raw, c := mustSign(b, keys, &fakeClock{now: time.Now()}, joinClaims())
	v := NewVerifier(keys, nil)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := v.Verify(raw, expectFor(c)); err != nil {
			b.Fatal(err)
		}
	}
}

// swapKeys is a KeySource a test can rotate under a Signer and Verifier.
type swapKeys struct{ ks KeySet }

func (s *swapKeys) set(ks KeySet) { s.ks = ks }
func (s *swapKeys) Keys() KeySet  { return s.ks }

// mustClaims returns c as Sign would fill it, for tests that sign by hand.
func mustClaims(t testing.TB, keys KeySource, clock *fakeClock, c Claims) Claims {
	t.Helper()
	_, signed := mustSign(t, keys, clock, c)
	return signed
}

// signRaw signs w with any method and key, bypassing Signer's checks, to
// build the tickets an attacker or a broken issuer could send.
func signRaw(t testing.TB, m jwt.SigningMethod, kid string, key any, w wireClaims) string {
	t.Helper()
	tok := jwt.NewWithClaims(m, &w)
	if kid != "" {
		tok.Header["kid"] = kid
	}
	raw, err := tok.SignedString(key)
	if err != nil {
		t.Fatalf("signing with %s: %v", m.Alg(), err)
	}
	return raw
}

func splitJWT(t testing.TB, raw string) (header, payload, sig string) {
	t.Helper()
	parts := strings.Split(raw, ".")
	if len(parts) != 3 {
		t.Fatalf("%d segments in a signed ticket", len(parts))
	}
	return parts[0], parts[1], parts[2]
}

func editPayload(t *testing.T, payload, from, to string) string {
	t.Helper()
	js, err := base64.RawURLEncoding.DecodeString(payload)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(js), from) {
		t.Fatalf("payload %s has no %s", js, from)
	}
	return base64.RawURLEncoding.EncodeToString([]byte(strings.Replace(string(js), from, to, 1)))
}

// flipChar changes one base64url character in the middle of s.
func flipChar(s string, i int) string {
	b := []byte(s)
	if b[i] == 'A' {
		b[i] = 'B'
	} else {
		b[i] = 'A'
	}
	return string(b)
}

// flipLastBits changes only the unused low bit of the last character of a
// 32-byte signature (43 characters carry 258 bits), so lenient base64 still
// decodes it to the same bytes; only strict decoding tells them apart.
func flipLastBits(t *testing.T, sig string) string {
	t.Helper()
	const alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"
	last := strings.IndexByte(alphabet, sig[len(sig)-1])
	flipped := sig[:len(sig)-1] + string(alphabet[last^1])
	a, errA := base64.RawURLEncoding.DecodeString(sig)
	b, errB := base64.RawURLEncoding.DecodeString(flipped)
	if errA != nil || errB != nil || string(a) != string(b) {
		t.Fatalf("flipping the padding bits changed the decoded signature")
	}
	return flipped
}

func kidOf(t *testing.T, raw string) string {
	t.Helper()
	tok, _, err := jwt.NewParser().ParseUnverified(raw, jwt.MapClaims{})
	if err != nil {
		t.Fatal(err)
	}
	kid, _ := tok.Header["kid"].(string)
	return kid
}

func rsaKey(t *testing.T) *rsa.PrivateKey {
	t.Helper()
	k, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	return k
}

// TestVerifyBoundsTime: a ticket issued in the future, valid for longer
// than the room signs, or not valid yet (nbf) is refused, even correctly
// signed.
func TestVerifyBoundsTime(t *testing.T) {
	ks := newKeySet(t)
	keys := StaticKeys(ks)
	clock := &fakeClock{now: t0}
	want := Expect{Room: "dungeon", Map: "town", MaxLifetime: 20 * time.Second}
	signedWith := func(edit func(*wireClaims)) string {
		w := toWire(mustClaims(t, keys, clock, joinClaims()))
		edit(&w)
		return signRaw(t, jwt.SigningMethodHS256, ks.Current.ID, ks.Current.Secret, w)
	}
	v := NewVerifier(keys, clock.Now)
	for name, edit := range map[string]func(*wireClaims){
		"issued in the future": func(w *wireClaims) {
			w.IssuedAt, w.ExpiresAt = jwt.NewNumericDate(t0.Add(2*time.Minute)), jwt.NewNumericDate(t0.Add(130*time.Second))
		},
		"valid for ten years": func(w *wireClaims) { w.ExpiresAt = jwt.NewNumericDate(t0.Add(10 * 365 * 24 * time.Hour)) },
		"not valid yet":       func(w *wireClaims) { w.NotBefore = jwt.NewNumericDate(t0.Add(time.Minute)) },
		"NUL in chr":          func(w *wireClaims) { w.Character = "chr\x00-1" },
		"overlong sub":        func(w *wireClaims) { w.Subject = strings.Repeat("u", 129) },
	} {
		if _, err := v.Verify(signedWith(edit), want); err == nil {
			t.Errorf("%s: verified", name)
		}
	}
	if _, err := v.Verify(signedWith(func(*wireClaims) {}), want); err != nil {
		t.Fatalf("a plain ticket: %v", err)
	}
	// Every token has a maximum lifetime, also where the caller names none.
	unbounded := want
	unbounded.MaxLifetime = 0
	if _, err := v.Verify(signedWith(func(w *wireClaims) { w.ExpiresAt = jwt.NewNumericDate(t0.Add(DefaultMaxLifetime + time.Second)) }), unbounded); err == nil {
		t.Error("a token valid past DefaultMaxLifetime verified without a MaxLifetime")
	}
	if _, err := v.Verify(signedWith(func(w *wireClaims) { w.ExpiresAt = jwt.NewNumericDate(t0.Add(DefaultMaxLifetime)) }), unbounded); err != nil {
		t.Errorf("a token valid for DefaultMaxLifetime: %v", err)
	}
}
