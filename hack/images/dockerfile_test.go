package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestTheDockerfilesBuildWhatMakeImagesBuilds: no Docker runs here, so
// the Dockerfiles are held to the image hack/images writes: a static
// build, a scratch final stage, the same non-root user, entrypoint, CA
// certificates and title label.
func TestTheDockerfilesBuildWhatMakeImagesBuilds(t *testing.T) {
	for _, name := range []string{"manager", "roomserver"} {
		path := filepath.Join("..", "..", "cmd", name, "Dockerfile")
		raw, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		text := string(raw)
		final := text[strings.LastIndex(text, "\nFROM ")+1:]
		for _, want := range []string{
			"FROM scratch\n",
			"USER " + nonRootUser + "\n",
			`ENTRYPOINT ["/` + name + `"]`,
			"/etc/ssl/certs/ca-certificates.crt",
			`org.opencontainers.image.title="roomkeeper-` + name + `"`,
		} {
			if !strings.Contains(final, want) {
				t.Errorf("%s: the final stage lacks %q", path, want)
			}
		}
		if !strings.Contains(text, "CGO_ENABLED=0") || !strings.Contains(text, "./cmd/"+name) {
			t.Errorf("%s: does not build ./cmd/%s with CGO_ENABLED=0", path, name)
		}
		if !strings.Contains(text, "nonroot:x:65532:65532:") {
			t.Errorf("%s: no passwd entry for the non-root user", path)
		}
	}
}
