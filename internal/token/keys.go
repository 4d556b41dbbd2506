// Package token signs and verifies join tickets and transfer tokens, and
// defines the key set the operator stores in each room's key Secret.
package token

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
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
