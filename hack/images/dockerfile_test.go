package main

import (
	"os"
	"regexp"
	"strings"
	"testing"
)

// TestTheDockerfileBuildsWhatMakeImagesBuilds: no Docker runs here, so
// the Dockerfile is held to the images hack/images writes: a static
// build, a scratch base with the same non-root user and CA certificates,
// and per binary a target with its entrypoint and title label.
func TestTheDockerfileBuildsWhatMakeImagesBuilds(t *testing.T) {
	raw, err := os.ReadFile("../../Dockerfile")
	if err != nil {
		t.Fatal(err)
	}
	text := string(raw)
	stages := map[string]string{}
	for _, stage := range regexp.MustCompile(`(?m)^FROM `).Split(text, -1)[1:] {
		header, body, _ := strings.Cut(stage, "\n")
		fields := strings.Fields(header)
		stages[fields[len(fields)-1]] = header + "\n" + body
	}
	base := stages["base"]
	for _, want := range []string{"scratch AS base", "USER " + nonRootUser + "\n", "/etc/ssl/certs/ca-certificates.crt"} {
		if !strings.Contains(base, want) {
			t.Errorf("Dockerfile: the base stage lacks %q", want)
		}
	}
	if build := stages["build"]; !strings.Contains(build, "CGO_ENABLED=0") || !strings.Contains(build, "nonroot:x:65532:65532:") {
		t.Errorf("Dockerfile: the build stage is not static or has no non-root user")
	}
	for _, name := range []string{"manager", "roomserver"} {
		stage := stages[name]
		for _, want := range []string{"base AS " + name, `ENTRYPOINT ["/` + name + `"]`, `org.opencontainers.image.title="roomkeeper-` + name + `"`} {
			if !strings.Contains(stage, want) {
				t.Errorf("Dockerfile: target %s lacks %q", name, want)
			}
		}
		if !strings.Contains(stages["build"], "./cmd/"+name) {
			t.Errorf("Dockerfile: the build stage does not build ./cmd/%s", name)
		}
	}
}
