package auth

// Added by hack/node.sh: Traefik's basic auth checks passwords with a fork
// of go-http-auth that the Go module proxy does not serve; the release it
// serves lacks CheckSecret. This checks the htpasswd hashes Roomkeeper's
// cluster could use: bcrypt and {SHA}. Any other hash is refused.

import (
	"crypto/sha1"
	"crypto/subtle"
	"encoding/base64"
	"strings"

	"golang.org/x/crypto/bcrypt"
)

func roomkeeperCheckSecret(password, secret string) bool {
	switch {
	case strings.HasPrefix(secret, "$2"):
		return bcrypt.CompareHashAndPassword([]byte(secret), []byte(password)) == nil
	case strings.HasPrefix(secret, "{SHA}"):
		sum := sha1.Sum([]byte(password))
		want := base64.StdEncoding.EncodeToString(sum[:])
		return subtle.ConstantTimeCompare([]byte(secret[len("{SHA}"):]), []byte(want)) == 1
	}
	return false
}
