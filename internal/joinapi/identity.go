package joinapi

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"net/http"
	"strings"
)

// userIDDomain prefixes the authKey in the hash, so a user id is never the
// plain SHA-256 of a key: a table of hashes of common strings made for any
// other purpose does not reverse it, and a future scheme can use another
// prefix without colliding with this one.
const userIDDomain = "roomkeeper.dev/user-id/v1\x00"

// userIDHexChars is how much of the hash a user id keeps: 128 bits, as
// unique as a UUID.
const userIDHexChars = 32

// maxAuthKeyBytes bounds an authKey; a real one is a random string of a few
// dozen characters.
const maxAuthKeyBytes = 256

// GuestPrefix starts the user and character ids of disposable guests; the
// room server never persists a user whose id starts with it.
const GuestPrefix = "guest-"

// guestIDBytes is the random part of a guest id.
const guestIDBytes = 12

// UserID derives the player's user id from their authKey: "u-" and the
// first 32 hex characters of SHA-256(domain prefix || authKey). The same
// key always gives the same id; the id does not give the key back.
func UserID(authKey string) string {
	sum := sha256.Sum256([]byte(userIDDomain + authKey))
	return "u-" + hex.EncodeToString(sum[:])[:userIDHexChars]
}

// guestID is GuestPrefix and 96 random bits.
func guestID() string {
	b := make([]byte, guestIDBytes)
	_, _ = rand.Read(b) // crypto/rand.Read never fails (Go 1.24+)
	return GuestPrefix + hex.EncodeToString(b)
}

// normalAuthKey is the one way an authKey enters the API, whether it
// comes in a join body or an Authorization header: white space around it
// (Unicode's, as strings.TrimSpace sees it) is not part of it, so " key",
// "key\n" and "key" are one user; only white space is no key at all. A
// key longer than maxAuthKeyBytes, once trimmed, is refused.
func normalAuthKey(raw string) (string, error) {
	key := strings.TrimSpace(raw)
	if len(key) > maxAuthKeyBytes {
		return "", fail(CodeBadRequest, "authKey is longer than %d bytes", maxAuthKeyBytes)
	}
	return key, nil
}

// bearerKey is the authKey of an "Authorization: Bearer <authKey>" header.
func bearerKey(r *http.Request) (string, error) {
	credential, ok := bearer(r)
	if !ok {
		return "", fail(CodeUnauthorized, "send your authKey as Authorization: Bearer <authKey>")
	}
	return normalAuthKey(credential)
}

// bearer is the credential of an "Authorization: Bearer <credential>"
// header; false when there is none.
func bearer(r *http.Request) (string, bool) {
	scheme, credential, ok := strings.Cut(r.Header.Get("Authorization"), " ")
	credential = strings.TrimSpace(credential)
	if !ok || !strings.EqualFold(scheme, "Bearer") || credential == "" {
		return "", false
	}
	return credential, true
}
