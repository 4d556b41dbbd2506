package token

import (
	"bytes"
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
