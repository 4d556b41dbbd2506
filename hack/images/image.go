package main

import (
	"archive/tar"
	"bytes"
	"debug/elf"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// options are what every image of one run shares.
type options struct {
	out, repository, version, revision, source, caFile string
	created                                            time.Time
	platform                                           v1.Platform
}

// The non-root user the images run as (distroless's "nonroot"). It is
// numeric in the config so that a pod's runAsNonRoot can be checked
// without a passwd lookup.
const (
	nonRootID   = 65532
	nonRootUser = "65532:65532"
)

// refNameAnnotation names the image inside an OCI layout;
// containerdNameAnnotation is the name `ctr images import` gives it, in
// the normalized form a kubelet asks containerd for.
const (
	refNameAnnotation        = "org.opencontainers.image.ref.name"
	containerdNameAnnotation = "io.containerd.image.name"
)

// writeImage builds the image of binary as <repository>/<name>:<version>
// and writes its archive.
func writeImage(opt options, name, binary string) (string, error) {
	img, err := buildImage(opt, name, binary)
	if err != nil {
		return "", err
	}
	staging, err := os.MkdirTemp("", "roomkeeper-image-")
	if err != nil {
		return "", err
	}
	defer os.RemoveAll(staging)
	p, err := layout.Write(staging, empty.Index)
	if err != nil {
		return "", err
	}
	ref := fmt.Sprintf("%s/%s:%s", opt.repository, name, opt.version)
	if err := p.AppendImage(img, layout.WithAnnotations(map[string]string{refNameAnnotation: ref, containerdNameAnnotation: normalized(ref)}),
		layout.WithPlatform(opt.platform)); err != nil {
		return "", err
	}
	archive := archivePath(opt, name)
	return archive, tarDirectory(staging, archive, opt.created)
}

// buildImage is the image: scratch, one layer, the binary as entrypoint.
func buildImage(opt options, name, binary string) (v1.Image, error) {
	files, err := imageFiles(opt, name, binary)
	if err != nil {
		return nil, err
	}
	layerTar, err := tarFiles(files, opt.created)
	if err != nil {
		return nil, err
	}
	layer, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) {
		return io.NopCloser(bytes.NewReader(layerTar)), nil
	}, tarball.WithMediaType(types.OCILayer))
	if err != nil {
		return nil, err
	}
	base := mutate.MediaType(empty.Image, types.OCIManifestSchema1)
	base = mutate.ConfigMediaType(base, types.OCIConfigJSON)
	img, err := mutate.Append(base, mutate.Addendum{Layer: layer, History: v1.History{
		Created: v1.Time{Time: opt.created}, CreatedBy: "hack/images " + name, Comment: "static binary on scratch"}})
	if err != nil {
		return nil, err
	}
	img, err = mutate.Config(img, v1.Config{
		Entrypoint: []string{"/" + name},
		User:       nonRootUser,
		WorkingDir: "/",
		Env:        []string{"PATH=/", "SSL_CERT_FILE=/etc/ssl/certs/ca-certificates.crt"},
		Labels:     labels(opt, name),
	})
	if err != nil {
		return nil, err
	}
	img, err = mutate.CreatedAt(img, v1.Time{Time: opt.created})
	if err != nil {
		return nil, err
	}
	cf, err := img.ConfigFile()
	if err != nil {
		return nil, err
	}
	cf = cf.DeepCopy()
	cf.OS, cf.Architecture = opt.platform.OS, opt.platform.Architecture
	return mutate.ConfigFile(img, cf)
}

// labels are the OCI annotation keys the image config carries.
func labels(opt options, name string) map[string]string {
	l := map[string]string{
		"org.opencontainers.image.title":   "roomkeeper-" + name,
		"org.opencontainers.image.version": opt.version,
		"org.opencontainers.image.source":  opt.source,
		"org.opencontainers.image.created": opt.created.Format(time.RFC3339),
		"org.opencontainers.image.vendor":  "Roomkeeper",
	}
	if opt.revision != "" {
		l["org.opencontainers.image.revision"] = opt.revision
	}
	return l
}

// imageFile is one entry of the image's layer.
type imageFile struct {
	path     string
	mode     int64
	uid      int
	content  []byte
	dir      bool
	fromDisk string
}

func imageFiles(opt options, name, binary string) ([]imageFile, error) {
	if err := requireStatic(binary); err != nil {
		return nil, err
	}
	if _, err := os.Stat(opt.caFile); err != nil {
		return nil, fmt.Errorf("CA certificates: %w (install Debian's ca-certificates, or pass --ca-certificates)", err)
	}
	passwd := fmt.Sprintf("root:x:0:0:root:/root:/sbin/nologin\nnonroot:x:%d:%d:nonroot:/home/nonroot:/sbin/nologin\n", nonRootID, nonRootID)
	group := fmt.Sprintf("root:x:0:\nnonroot:x:%d:\n", nonRootID)
	return []imageFile{
		{path: "etc", mode: 0o755, dir: true},
		{path: "etc/group", mode: 0o644, content: []byte(group)},
		{path: "etc/passwd", mode: 0o644, content: []byte(passwd)},
		{path: "etc/ssl", mode: 0o755, dir: true},
		{path: "etc/ssl/certs", mode: 0o755, dir: true},
		{path: "etc/ssl/certs/ca-certificates.crt", mode: 0o644, fromDisk: opt.caFile},
		{path: "home", mode: 0o755, dir: true},
		{path: "home/nonroot", mode: 0o700, uid: nonRootID, dir: true},
		{path: "tmp", mode: 0o1777, dir: true},
		{path: name, mode: 0o755, fromDisk: binary},
	}, nil
}

// requireStatic refuses a dynamically linked binary: on scratch there is
// no libc for it to load.
func requireStatic(binary string) error {
	f, err := elf.Open(binary)
	if err != nil {
		return fmt.Errorf("%s: not a Linux executable: %w", binary, err)
	}
	defer f.Close()
	for _, prog := range f.Progs {
		if prog.Type == elf.PT_INTERP {
			return fmt.Errorf("%s is dynamically linked: build it with CGO_ENABLED=0", binary)
		}
	}
	return nil
}

// tarFiles writes files as a tar with fixed owners and times, so that the
// same files give the same layer digest.
func tarFiles(files []imageFile, mtime time.Time) ([]byte, error) {
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, f := range files {
		content := f.content
		if f.fromDisk != "" {
			raw, err := os.ReadFile(f.fromDisk)
			if err != nil {
				return nil, err
			}
			content = raw
		}
		hdr := &tar.Header{Name: f.path, Mode: f.mode, Uid: f.uid, Gid: f.uid, ModTime: mtime, Format: tar.FormatPAX}
		if f.dir {
			hdr.Typeflag, hdr.Name = tar.TypeDir, f.path+"/"
		} else {
			hdr.Typeflag, hdr.Size = tar.TypeReg, int64(len(content))
		}
		if err := tw.WriteHeader(hdr); err != nil {
			return nil, err
		}
		if _, err := tw.Write(content); err != nil {
			return nil, err
		}
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// tarDirectory writes the OCI layout under dir as the archive, entries in
// lexical order with fixed times.
func tarDirectory(dir, archive string, mtime time.Time) error {
	var paths []string
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err == nil && path != dir {
			paths = append(paths, path)
		}
		return err
	})
	if err != nil {
		return err
	}
	slices.Sort(paths)
	files := make([]imageFile, 0, len(paths))
	for _, path := range paths {
		rel, _ := filepath.Rel(dir, path)
		info, err := os.Stat(path)
		if err != nil {
			return err
		}
		f := imageFile{path: filepath.ToSlash(rel), mode: 0o644, dir: info.IsDir()}
		if f.dir {
			f.mode = 0o755
		} else {
			f.fromDisk = path
		}
		files = append(files, f)
	}
	raw, err := tarFiles(files, mtime)
	if err != nil {
		return err
	}
	return os.WriteFile(archive, raw, 0o644)
}

// normalized is ref as Docker's reference grammar completes it (the
// default registry docker.io; library/ for a one-part name), the name a
// kubelet asks containerd for.
func normalized(ref string) string {
	first, _, _ := strings.Cut(ref, "/")
	switch {
	case !strings.Contains(ref, "/"):
		return "docker.io/library/" + ref
	case strings.ContainsAny(first, ".:") || first == "localhost":
		return ref
	}
	return "docker.io/" + ref
}
