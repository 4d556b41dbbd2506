// Package golden keeps test answers in files (testdata/...) that other
// code reads too: the TypeScript SDK's tests replay the Go codec's and
// simulation's answers from them. A test builds its answer and calls
// Check; `go test -update` rewrites the file instead of comparing.
package golden

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"testing"
)

var update = flag.Bool("update", false, "rewrite the golden files (testdata/...) with what the tests produce")

// Check compares got with the file at path, after writing it there when
// the test runs with -update. howToUpdate is the command that does that,
// for the failure message.
func Check(t testing.TB, path string, got []byte, howToUpdate string) {
	t.Helper()
	if *update {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v: run %s", err, howToUpdate)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s is out of date: run %s, then the SDK's tests (make web-test)", path, howToUpdate)
	}
}
