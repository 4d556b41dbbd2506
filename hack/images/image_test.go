package main

import (
	"archive/tar"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// readArchive opens an OCI archive as a user's tools would: untarred into
// a layout, the image found by its ref.name annotation.
func readArchive(t *testing.T, archive string) (ref string, img v1.Image) {
	t.Helper()
	dir := t.TempDir()
	f, err := os.Open(archive)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	tr := tar.NewReader(f)
	for {
		hdr, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		path := filepath.Join(dir, filepath.FromSlash(hdr.Name))
		if hdr.Typeflag == tar.TypeDir {
			if err := os.MkdirAll(path, 0o755); err != nil {
				t.Fatal(err)
			}
			continue
		}
		raw, err := io.ReadAll(tr)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, raw, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	idx, err := layout.ImageIndexFromPath(dir)
	if err != nil {
		t.Fatalf("%s is not an OCI layout: %v", archive, err)
	}
	manifest, err := idx.IndexManifest()
	if err != nil {
		t.Fatal(err)
	}
	if len(manifest.Manifests) != 1 {
		t.Fatalf("%s holds %d images, want 1", archive, len(manifest.Manifests))
	}
	desc := manifest.Manifests[0]
	if img, err = idx.Image(desc.Digest); err != nil {
		t.Fatal(err)
	}
	return desc.Annotations[refNameAnnotation], img
}

// imageFilesystem is the image's files: path -> header, and contents.
func imageFilesystem(t *testing.T, img v1.Image) (map[string]*tar.Header, map[string][]byte) {
	t.Helper()
	headers, contents := map[string]*tar.Header{}, map[string][]byte{}
	rc := mutate.Extract(img)
	defer rc.Close()
	tr := tar.NewReader(rc)
	for {
		hdr, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return headers, contents
		}
		if err != nil {
			t.Fatal(err)
		}
		name := strings.TrimSuffix(hdr.Name, "/")
		headers[name] = hdr
		if contents[name], err = io.ReadAll(tr); err != nil {
			t.Fatal(err)
		}
	}
}

// checkImage holds an image to what a cluster needs of it: the binary as
// entrypoint on a scratch base, a numeric non-root user, the labels, the
// platform, and nothing more than the files it needs.
func checkImage(t *testing.T, archive, name, version string) v1.Hash {
	t.Helper()
	ref, img := readArchive(t, archive)
	if want := "roomkeeper/" + name + ":" + version; ref != want {
		t.Errorf("%s: ref.name %q, want %q", archive, ref, want)
	}
	if mt, err := img.MediaType(); err != nil || mt != types.OCIManifestSchema1 {
		t.Errorf("%s: manifest media type %q (%v), want OCI", archive, mt, err)
	}
	cf, err := img.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	if got := cf.Config.Entrypoint; len(got) != 1 || got[0] != "/"+name {
		t.Errorf("%s: entrypoint %q, want [/%s]", archive, got, name)
	}
	if cf.Config.User != nonRootUser {
		t.Errorf("%s: user %q, want %q (numeric, not root)", archive, cf.Config.User, nonRootUser)
	}
	if cf.OS != "linux" || cf.Architecture != runtime.GOARCH {
		t.Errorf("%s: platform %s/%s, want linux/%s", archive, cf.OS, cf.Architecture, runtime.GOARCH)
	}
	for _, key := range []string{"org.opencontainers.image.version", "org.opencontainers.image.source", "org.opencontainers.image.title"} {
		if cf.Config.Labels[key] == "" {
			t.Errorf("%s: label %s missing (labels %v)", archive, key, cf.Config.Labels)
		}
	}
	if got := cf.Config.Labels["org.opencontainers.image.version"]; got != version {
		t.Errorf("%s: version label %q, want %q", archive, got, version)
	}
	layers, err := img.Layers()
	if err != nil || len(layers) != 1 {
		t.Fatalf("%s: %d layers (%v), want 1 on scratch", archive, len(layers), err)
	}
	headers, contents := imageFilesystem(t, img)
	bin := headers[name]
	if bin == nil || bin.Mode&0o111 == 0 || bin.Uid != 0 {
		t.Errorf("%s: /%s is %+v, want an executable owned by root", archive, name, bin)
	}
	if !strings.Contains(string(contents["etc/passwd"]), "nonroot:x:65532:65532:") {
		t.Errorf("%s: /etc/passwd lacks the nonroot user: %q", archive, contents["etc/passwd"])
	}
	if len(contents["etc/ssl/certs/ca-certificates.crt"]) == 0 {
		t.Errorf("%s: no CA certificates", archive)
	}
	if tmp := headers["tmp"]; tmp == nil || tmp.Mode&0o1777 != 0o1777 {
		t.Errorf("%s: /tmp is %+v, want a sticky world-writable directory", archive, tmp)
	}
	digest, err := img.Digest()
	if err != nil {
		t.Fatal(err)
	}
	return digest
}

// buildTiny compiles a small static program.
func buildTiny(t *testing.T, dir string) string {
	t.Helper()
	src := filepath.Join(dir, "main.go")
	if err := os.WriteFile(src, []byte("package main\n\nfunc main() { println(\"hello\") }\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "tiny")
	cmd := exec.Command("go", "build", "-o", out, src)
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS=linux", "GOFLAGS=")
	if raw, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, raw)
	}
	return out
}

func testOptions(out string) options {
	return options{out: out, repository: "roomkeeper", version: "v0.0.0-test", source: "https://example.test/roomkeeper",
		revision: "abc123", caFile: "/etc/ssl/certs/ca-certificates.crt", created: time.Unix(1_700_000_000, 0).UTC(),
		platform: v1.Platform{OS: "linux", Architecture: runtime.GOARCH}}
}

// TestAnImageIsScratchNonRootAndReproducible: the archive holds one image
// a cluster can run, and the same inputs give the same digest.
func TestAnImageIsScratchNonRootAndReproducible(t *testing.T) {
	binary := buildTiny(t, t.TempDir())
	opt := testOptions(t.TempDir())
	archive, err := writeImage(opt, "tiny", binary)
	if err != nil {
		t.Fatal(err)
	}
	first := checkImage(t, archive, "tiny", opt.version)
	if _, img := readArchive(t, archive); img != nil {
		cf, _ := img.ConfigFile()
		if cf.Config.Labels["org.opencontainers.image.revision"] != "abc123" || !cf.Created.Equal(opt.created) {
			t.Errorf("revision label %q, created %v: want abc123, %v", cf.Config.Labels["org.opencontainers.image.revision"], cf.Created, opt.created)
		}
	}
	again, err := writeImage(opt, "tiny", binary)
	if err != nil {
		t.Fatal(err)
	}
	if second := checkImage(t, again, "tiny", opt.version); second != first {
		t.Errorf("the same inputs gave two digests: %s, %s", first, second)
	}
}

// TestADynamicBinaryIsRefused: scratch has no libc, so a binary that
// needs one would not start in the cluster; packing it is an error.
func TestADynamicBinaryIsRefused(t *testing.T) {
	dynamic := "/bin/ls" // dynamically linked on every distribution this runs on
	_, err := writeImage(testOptions(t.TempDir()), "ls", dynamic)
	if err == nil || !strings.Contains(err.Error(), "CGO_ENABLED=0") {
		t.Errorf("packing %s: err = %v, want a refusal naming CGO_ENABLED=0", dynamic, err)
	}
}

// TestTheMadeImages checks what `make images` (run by make test) built
// for this machine: the manager and the room server.
func TestTheMadeImages(t *testing.T) {
	for _, name := range []string{"manager", "roomserver"} {
		archives, _ := filepath.Glob(filepath.Join("..", "..", "bin", "images", name+"_*_"+runtime.GOARCH+".oci.tar"))
		if len(archives) == 0 {
			t.Fatalf("no bin/images/%s_*_%s.oci.tar: run `make images` (make test does)", name, runtime.GOARCH)
		}
		newest := archives[0]
		for _, a := range archives[1:] {
			if modTime(t, a).After(modTime(t, newest)) {
				newest = a
			}
		}
		version := strings.TrimSuffix(strings.TrimPrefix(filepath.Base(newest), name+"_"), "_"+runtime.GOARCH+".oci.tar")
		checkImage(t, newest, name, version)
		runsWithoutLibc(t, newest, name)
	}
}

// runsWithoutLibc takes the entrypoint out of the image, checks it needs
// no dynamic loader, and runs it with -h.
func runsWithoutLibc(t *testing.T, archive, name string) {
	t.Helper()
	_, img := readArchive(t, archive)
	_, contents := imageFilesystem(t, img)
	binary := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(binary, contents[name], 0o755); err != nil {
		t.Fatal(err)
	}
	if err := requireStatic(binary); err != nil {
		t.Errorf("%s: %v", archive, err)
	}
	out, _ := exec.Command(binary, "-h").CombinedOutput() // -h exits 0 or 2 by flag package
	if !strings.Contains(string(out), "Usage of") {
		t.Errorf("%s: /%s -h printed no usage: %q", archive, name, out)
	}
}

func modTime(t *testing.T, path string) time.Time {
	t.Helper()
	info, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	return info.ModTime()
}
