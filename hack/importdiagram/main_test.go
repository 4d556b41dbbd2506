package main

import (
	"os"
	"strings"
	"testing"
)

// TestTheArchitectureDocShowsTheImportsOfTheCode fails when a change of
// the imports did not redraw docs/architecture.md's import diagram.
func TestTheArchitectureDocShowsTheImportsOfTheCode(t *testing.T) {
	graph, err := loadGraph("../..")
	if err != nil {
		t.Fatal(err)
	}
	doc, err := os.ReadFile("../../docs/architecture.md")
	if err != nil {
		t.Fatal(err)
	}
	want, err := replaceDrawing(string(doc), draw(graph))
	if err != nil {
		t.Fatal(err)
	}
	if want != string(doc) {
		t.Fatal("docs/architecture.md's import diagram differs from the code's imports: go run ./hack/importdiagram -write docs/architecture.md")
	}
}

func TestDrawOrdersByLayer(t *testing.T) {
	got := draw(map[string][]string{
		"api/v1":              {},
		"internal/sim":        {"internal/mapgen"},
		"cmd/roomserver":      {"internal/roomserver", "internal/podenv"},
		"internal/roomserver": {"internal/sim"},
	})
	want := "```\n" +
		"cmd/roomserver      -> internal/podenv, internal/roomserver\n" +
		"internal/roomserver -> internal/sim\n" +
		"internal/sim        -> internal/mapgen\n" +
		"api/v1              -> (none)\n" +
		"```\n"
	if got != want {
		t.Fatalf("draw =\n%s\nwant\n%s", got, want)
	}
	if _, err := replaceDrawing("no markers", got); err == nil || !strings.Contains(err.Error(), "markers") {
		t.Fatalf("a file without markers: %v", err)
	}
}
