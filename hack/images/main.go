// Command images is `make images`: it packs static binaries into OCI image
// archives with no Docker and no registry. Each image is one layer on an
// empty (scratch) base: the binary as its entrypoint, a passwd and group
// file with a non-root user, CA certificates (Postgres and API servers
// over TLS need them) and a /tmp. The archive is an OCI image layout in a
// tar (podman load, skopeo copy oci-archive:..., ctr images import,
// crane push after untar), labelled with version, revision and source.
// The same inputs give the same bytes.
package main

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "images:", err)
		os.Exit(1)
	}
}

func run() error {
	var opt options
	var created string
	flag.StringVar(&opt.out, "out", "bin/images", "directory the archives are written to")
	flag.StringVar(&opt.repository, "repository", "roomkeeper", "image name prefix: <repository>/<binary>:<version>")
	flag.StringVar(&opt.version, "version", "dev", "image tag and org.opencontainers.image.version")
	flag.StringVar(&opt.revision, "revision", "", "source revision (git commit) for org.opencontainers.image.revision")
	flag.StringVar(&opt.source, "source", "https://github.com/roomkeeper/roomkeeper", "org.opencontainers.image.source")
	flag.StringVar(&created, "created", "", "image creation time, RFC 3339 or Unix seconds (default: the epoch, for reproducible images)")
	flag.StringVar(&opt.platform.Architecture, "arch", "amd64", "the binaries' GOARCH")
	flag.StringVar(&opt.caFile, "ca-certificates", "/etc/ssl/certs/ca-certificates.crt", "CA bundle copied into each image")
	flag.Usage = func() {
		fmt.Fprintln(flag.CommandLine.Output(), "usage: images [flags] NAME=BINARY ...  (static binaries: CGO_ENABLED=0)")
		flag.PrintDefaults()
	}
	flag.Parse()
	opt.platform.OS = "linux"
	var err error
	if opt.created, err = parseCreated(created); err != nil {
		return err
	}
	if flag.NArg() == 0 {
		flag.Usage()
		return fmt.Errorf("no binaries given")
	}
	if err := os.MkdirAll(opt.out, 0o755); err != nil {
		return err
	}
	for _, arg := range flag.Args() {
		name, binary, ok := strings.Cut(arg, "=")
		if !ok || name == "" || binary == "" {
			return fmt.Errorf("%q: want NAME=BINARY", arg)
		}
		archive, err := writeImage(opt, name, binary)
		if err != nil {
			return fmt.Errorf("%s: %w", name, err)
		}
		fmt.Println(archive)
	}
	return nil
}

// parseCreated reads --created: empty is the Unix epoch.
func parseCreated(s string) (time.Time, error) {
	if s == "" {
		return time.Unix(0, 0).UTC(), nil
	}
	if t, err := time.Parse(time.RFC3339, s); err == nil {
		return t.UTC(), nil
	}
	var secs int64
	if _, err := fmt.Sscan(s, &secs); err != nil {
		return time.Time{}, fmt.Errorf("--created %q: want RFC 3339 or Unix seconds", s)
	}
	return time.Unix(secs, 0).UTC(), nil
}

// archivePath is where the image of name is written.
func archivePath(opt options, name string) string {
	return filepath.Join(opt.out, fmt.Sprintf("%s_%s_%s.oci.tar", name, opt.version, opt.platform.Architecture))
}
