package joinapi

import (
	"crypto/sha256"
	"encoding/hex"
	"net/http"
	"regexp"
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
