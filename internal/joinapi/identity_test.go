package joinapi

import (
	"crypto/sha256"
	"encoding/hex"
	"math/rand/v2"
	"net/http"
	"regexp"
	"strings"
	"testing"
)

// TestUserID pins the derivation: changing it would orphan every user's
// characters, so a change must be deliberate (a new domain prefix and a
// migration), not an accident.
func TestUserID(t *testing.T) {
	t.Parallel()
	// hex(sha256("roomkeeper.dev/user-id/v1\x00alice-auth-key"))[:32], computed outside Go.
	const golden = "u-cd582a9e3e2b63ffcecae320ef516dbf"
	got := UserID("alice-auth-key")
	if !regexp.MustCompile(`^u-[0-9a-f]{32}$`).MatchString(got) {
		t.Fatalf("UserID = %q, want u- and 32 hex characters", got)
	}
	if got != golden {
		t.Fatalf("UserID(alice-auth-key) = %s, want %s", got, golden)
	}
	if UserID("alice-auth-key") != got {
		t.Fatal("UserID is not deterministic")
	}
	if UserID("alice-auth-key2") == got || UserID("") == got {
		t.Fatal("different keys give the same user id")
	}
	plain := sha256.Sum256([]byte("alice-auth-key"))
	if got == "u-"+hex.EncodeToString(plain[:])[:32] {
		t.Fatal("the user id is the plain SHA-256 of the key: the domain prefix is missing")
	}
}

func TestGuestIDs(t *testing.T) {
	t.Parallel()
	a, b := guestID(), guestID()
	if a == b || !regexp.MustCompile(`^guest-[0-9a-f]{24}$`).MatchString(a) {
		t.Fatalf("guest ids %q %q, want distinct guest-<24 hex>", a, b)
	}
}

func TestBearerKey(t *testing.T) {
	t.Parallel()
	for header, want := range map[string]string{
		"Bearer k1":          "k1",
		"bearer k1":          "k1",
		"Bearer   k1  ":      "k1",
		"":                   "",
		"Bearer":             "",
		"Bearer ":            "",
		"Basic YWxpY2U6eA==": "",
	} {
		r, _ := http.NewRequest(http.MethodGet, "/", nil)
		r.Header.Set("Authorization", header)
		got, err := bearerKey(r)
		if got != want || (want == "") != (err != nil) {
			t.Errorf("Authorization %q: key %q, error %v; want %q", header, got, err, want)
		}
	}
}

// authKeySpace is white space a client might leave around a key: what
// strings.TrimSpace trims, ASCII and not.
var authKeySpace = []string{" ", "\t", "\n", "\r", "\v", "\f", "\u0085", "\u00a0", "\u2003", "\u3000"}

// TestNormalAuthKey: a key with any white space around it is the same
// key, and so the same user, whether it comes in a body or a header.
func TestNormalAuthKey(t *testing.T) {
	t.Parallel()
	r := rand.New(rand.NewPCG(7, 12))
	pad := func(space []string) string {
		var b strings.Builder
		for range r.IntN(4) {
			b.WriteString(space[r.IntN(len(space))])
		}
		return b.String()
	}
	for range 2000 {
		key := make([]byte, 1+r.IntN(64))
		for i := range key {
			key[i] = byte('!' + r.IntN('~'-'!'+1)) // printable ASCII, no space
		}
		padded := pad(authKeySpace) + string(key) + pad(authKeySpace)
		got, err := normalAuthKey(padded)
		if err != nil || got != string(key) || UserID(got) != UserID(string(key)) {
			t.Fatalf("normalAuthKey(%q) = %q, %v; want %q", padded, got, err, key)
		}
		header := "Bearer " + pad([]string{" ", "\t"}) + string(key) + pad([]string{" ", "\t"}) // HTTP allows only these
		req, _ := http.NewRequest(http.MethodGet, "/", nil)
		req.Header.Set("Authorization", header)
		if got, err := bearerKey(req); err != nil || got != string(key) {
			t.Fatalf("Authorization %q: key %q, %v; want %q", header, got, err, key)
		}
	}
	if got, err := normalAuthKey(" \t\u3000 "); got != "" || err != nil {
		t.Fatalf("a key of white space only = %q, %v; want no key", got, err)
	}
	if _, err := normalAuthKey("  " + strings.Repeat("k", maxAuthKeyBytes) + "  "); err != nil {
		t.Fatalf("a key of %d bytes with spaces around it: %v", maxAuthKeyBytes, err)
	}
	if _, err := normalAuthKey(strings.Repeat("k", maxAuthKeyBytes+1)); err == nil {
		t.Fatal("a key over the limit was accepted")
	}
}
