// Package token signs and verifies join tickets and transfer tokens, and
// defines the key set the operator stores in each room's key Secret.
package token

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
)

// Names of the entries in a room's key Secret. Mounted into a map pod they
// become files of these names in the key directory.
const (
	FileCurrentKID  = "current.kid"
	FileCurrentKey  = "current.key"
	FilePreviousKID = "previous.kid"
	FilePreviousKey = "previous.key"
)

// keyBytes is the HMAC-SHA256 key size: a key as long as the hash output.
const keyBytes = 32

// Key is one HMAC-SHA256 signing key and the id tokens name it by.
type Key struct {
	ID     string
	Secret []byte
}

// KeySet is what a room signs with (Current) and still accepts (Current and
// Previous, so tokens signed just before a rotation stay valid).
type KeySet struct {
	Current  Key
	Previous *Key
}

// NewKey returns a fresh random key with a random id.
func NewKey() (Key, error) {
	secret := make([]byte, keyBytes)
	if _, err := rand.Read(secret); err != nil {
		return Key{}, fmt.Errorf("generating key: %w", err)
	}
	id := make([]byte, 8)
	if _, err := rand.Read(id); err != nil {
		return Key{}, fmt.Errorf("generating key id: %w", err)
	}
	return Key{ID: hex.EncodeToString(id), Secret: secret}, nil
}

// String names the key by its id only, so a key that ends up in a log line or
// an error message never shows its secret.
func (k Key) String() string {
	return "Key{ID: " + k.ID + ", Secret: <redacted>}"
}

// GoString redacts the secret from %#v as well.
func (k Key) GoString() string {
	return "token.Key{ID: " + strconv.Quote(k.ID) + ", Secret: <redacted>}"
}

// Format redacts the secret under every verb: without it fmt would print the
// secret's bytes for %d or %x, which bypass String.
func (k Key) Format(f fmt.State, verb rune) {
	if verb == 'v' && f.Flag('#') {
		_, _ = io.WriteString(f, k.GoString())
		return
	}
	_, _ = io.WriteString(f, k.String())
}

// KeySource gives the current key set. Implementations are safe for
// concurrent use; callers ask again for every token, so a rotation is seen
// without restarting anything.
type KeySource interface {
	Keys() KeySet
}

// StaticKeys is a KeySource that never changes: tests, and roomctl minting a
// ticket from a key set it read once.
type StaticKeys KeySet

// Keys returns the fixed key set.
func (s StaticKeys) Keys() KeySet {
	return KeySet(s)
}

// Rotate returns the key set after one rotation: previous := current,
// current := a new key. The old previous key is dropped, so a token outlives
// at most one rotation. Rotating the zero KeySet gives a first key and no
// previous one, so the operator can create and rotate with the same call.
func Rotate(ks KeySet) (KeySet, error) {
	next, err := NewKey()
	if err != nil {
		return KeySet{}, err
	}
	if ks.Current.ID == "" {
		return KeySet{Current: next}, nil
	}
	previous := ks.Current
	return KeySet{Current: next, Previous: &previous}, nil
}

// Data encodes the key set as Secret data.
func (ks KeySet) Data() map[string][]byte {
	data := map[string][]byte{
		FileCurrentKID: []byte(ks.Current.ID),
		FileCurrentKey: ks.Current.Secret,
	}
	if ks.Previous != nil {
		data[FilePreviousKID] = []byte(ks.Previous.ID)
		data[FilePreviousKey] = ks.Previous.Secret
	}
	return data
}

// WriteDir writes the key set into dir as the operator's Secret is
// mounted: one file per key of Data, readable by the owner only.
func (ks KeySet) WriteDir(dir string) error {
	for name, data := range ks.Data() {
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o600); err != nil {
			return err
		}
	}
	return nil
}

// KeySetFromData decodes Secret data (or the mounted files) into a key set.
func KeySetFromData(data map[string][]byte) (KeySet, error) {
	current, err := keyFrom(data, FileCurrentKID, FileCurrentKey)
	if err != nil {
		return KeySet{}, err
	}
	ks := KeySet{Current: current}
	if _, ok := data[FilePreviousKID]; ok {
		previous, err := keyFrom(data, FilePreviousKID, FilePreviousKey)
		if err != nil {
			return KeySet{}, err
		}
		ks.Previous = &previous
	}
	return ks, nil
}

func keyFrom(data map[string][]byte, idName, secretName string) (Key, error) {
	id, secret := string(data[idName]), data[secretName]
	if id == "" {
		return Key{}, fmt.Errorf("key set: %s is missing", idName)
	}
	if len(secret) < keyBytes {
		return Key{}, errors.New("key set: " + secretName + " is missing or shorter than 32 bytes")
	}
	return Key{ID: id, Secret: secret}, nil
}
