package token

import (
	"bytes"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"strings"
	"testing"
)

func TestKeySetRoundTrip(t *testing.T) {
	current, err := NewKey()
	if err != nil {
		t.Fatal(err)
	}
	previous, err := NewKey()
	if err != nil {
		t.Fatal(err)
	}
	if current.ID == previous.ID || bytes.Equal(current.Secret, previous.Secret) {
		t.Fatal("two new keys are equal")
	}

	for _, ks := range []KeySet{{Current: current}, {Current: current, Previous: &previous}} {
		got, err := KeySetFromData(ks.Data())
		if err != nil {
			t.Fatalf("decoding: %v", err)
		}
		if got.Current.ID != ks.Current.ID || !bytes.Equal(got.Current.Secret, ks.Current.Secret) {
			t.Errorf("current key changed in the round trip")
		}
		if (got.Previous == nil) != (ks.Previous == nil) {
			t.Errorf("previous key presence changed in the round trip")
		}
	}
}

func TestKeySetFromDataRefusesBrokenData(t *testing.T) {
	good, err := NewKey()
	if err != nil {
		t.Fatal(err)
	}
	cases := map[string]map[string][]byte{
		"empty":         {},
		"no key id":     {FileCurrentKey: good.Secret},
		"short key":     {FileCurrentKID: []byte("a"), FileCurrentKey: []byte("short")},
		"half previous": {FileCurrentKID: []byte("a"), FileCurrentKey: good.Secret, FilePreviousKID: []byte("b")},
	}
	for name, data := range cases {
		if _, err := KeySetFromData(data); err == nil {
			t.Errorf("%s: decoded without error", name)
		}
	}
}

func TestRotate(t *testing.T) {
	first, err := Rotate(KeySet{})
	if err != nil {
		t.Fatal(err)
	}
	if first.Current.ID == "" || len(first.Current.Secret) != keyBytes || first.Previous != nil {
		t.Fatalf("rotating the zero key set gave %v", first)
	}
	second, err := Rotate(first)
	if err != nil {
		t.Fatal(err)
	}
	if second.Previous == nil || second.Previous.ID != first.Current.ID ||
		!bytes.Equal(second.Previous.Secret, first.Current.Secret) {
		t.Fatalf("previous after a rotation is %v, want %v", second.Previous, first.Current)
	}
	if second.Current.ID == first.Current.ID || bytes.Equal(second.Current.Secret, first.Current.Secret) {
		t.Fatal("rotation kept the current key")
	}
	if _, err := KeySetFromData(second.Data()); err != nil {
		t.Fatalf("a rotated key set does not decode: %v", err)
	}
}

func TestFormattingNeverShowsSecrets(t *testing.T) {
	first, err := Rotate(KeySet{})
	if err != nil {
		t.Fatal(err)
	}
	ks, err := Rotate(first)
	if err != nil {
		t.Fatal(err)
	}
	// Each value with the key id its %v must still show.
	values := []struct {
		v  any
		id string
	}{
		{ks.Current, ks.Current.ID}, {ks.Previous, ks.Previous.ID}, {first, first.Current.ID},
		{ks, ks.Current.ID}, {&ks, ks.Current.ID}, {StaticKeys(ks), ks.Current.ID},
	}
	for _, verb := range []string{"%v", "%+v", "%#v", "%s", "%q", "%x", "%X", "%d"} {
		for _, tc := range values {
			v, out := tc.v, fmt.Sprintf(verb, tc.v)
			for _, k := range []Key{ks.Current, *ks.Previous} {
				if leaks(out, k.Secret) {
					t.Errorf("fmt %s of %T shows a secret: %s", verb, v, out)
				}
			}
			if verb == "%v" && !strings.Contains(out, tc.id) {
				t.Errorf("fmt %s of %T lost the key id: %s", verb, v, out)
			}
		}
	}
}

// leaks reports whether out shows secret in any of the usual encodings.
func leaks(out string, secret []byte) bool {
	for _, enc := range []string{
		string(secret), hex.EncodeToString(secret), strings.ToUpper(hex.EncodeToString(secret)),
		base64.StdEncoding.EncodeToString(secret), base64.RawURLEncoding.EncodeToString(secret),
		fmt.Sprintf("%d", secret), fmt.Sprintf("%q", secret), // %v of a []byte prints %d
	} {
		if strings.Contains(out, enc) {
			return true
		}
	}
	return false
}
