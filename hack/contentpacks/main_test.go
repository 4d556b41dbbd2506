package main

import (
	"bytes"
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"sigs.k8s.io/yaml"

	gamev1 "github.com/roomkeeper/roomkeeper/api/v1"
	"github.com/roomkeeper/roomkeeper/internal/content"
	"github.com/roomkeeper/roomkeeper/internal/packs"
)

// TestTheShippedPacksAreTheBuiltInOnes: config/content is what
// `go run ./hack/contentpacks` writes, and each manifest, read as the API
// server stores it, is the built-in pack of its name.
func TestTheShippedPacksAreTheBuiltInOnes(t *testing.T) {
	for _, name := range content.Names() {
		path := filepath.Join("..", "..", "config", "content", name+".yaml")
		shipped, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		want, err := Manifest(name)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(shipped, want) {
			t.Errorf("%s is out of date: run go run ./hack/contentpacks", path)
		}
		gc := &gamev1.GameContent{}
		if err := yaml.UnmarshalStrict(shipped, gc); err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		pack, err := packs.Check(gc)
		if err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		builtIn, _ := content.Named(name)
		if len(builtIn.Critical) == 0 {
			builtIn.Critical = nil
		}
		if !reflect.DeepEqual(pack, builtIn) {
			t.Errorf("%s is not the built-in pack:\n%+v\n%+v", path, pack, builtIn)
		}
	}
}
