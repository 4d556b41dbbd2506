package mapgen

import (
	"context"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"
)

// goCommand finds the go tool the wasm checks run. It fails rather than
// skips: a silently skipped portability check would pass in CI.
func goCommand(t *testing.T, args ...string) *exec.Cmd {
	t.Helper()
	goBin, err := exec.LookPath("go")
	if err != nil {
		t.Fatalf("the go command is not on PATH (%v); put the Go toolchain's bin directory on PATH, "+
			"it is needed to check that mapgen builds for GOOS=js GOARCH=wasm", err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 3*time.Minute)
	t.Cleanup(cancel)
	cmd := exec.CommandContext(ctx, goBin, args...)
	cmd.Dir = "." // the package directory: go test runs tests there
	cmd.Env = append(os.Environ(), "GOOS=js", "GOARCH=wasm", "CGO_ENABLED=0")
	return cmd
}

// TestBuildsForWasm keeps the promise that a browser client can compile
// this package and build the same world as the server.
func TestBuildsForWasm(t *testing.T) {
	out, err := goCommand(t, "build", "./").CombinedOutput()
	if err != nil {
		t.Fatalf("GOOS=js GOARCH=wasm go build ./internal/mapgen failed: %v\n%s", err, out)
	}
}

// TestImportsOnlyStandardLibrary guards the import rule of docs/design.md
// section 1 for the whole dependency tree, not just direct imports.
func TestImportsOnlyStandardLibrary(t *testing.T) {
	out, err := goCommand(t, "list", "-deps", "-f", "{{if not .Standard}}{{.ImportPath}}{{end}}", "./").CombinedOutput()
	if err != nil {
		t.Fatalf("go list -deps failed: %v\n%s", err, out)
	}
	for _, pkg := range strings.Fields(string(out)) {
		if pkg != "github.com/roomkeeper/roomkeeper/internal/mapgen" {
			t.Errorf("mapgen depends on non-standard package %s", pkg)
		}
	}
}
