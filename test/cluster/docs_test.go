package cluster

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// docsMarker precedes each block of docs/install.md the suite runs: the
// commands a platform team reads are the ones proven here.
const docsMarker = "<!-- test/cluster runs this block: "

// docsBlock is the shell block of docs/install.md named name.
func docsBlock(name string) (string, error) {
	f, err := os.Open(filepath.Join(suite.root, "docs", "install.md"))
	if err != nil {
		return "", err
	}
	defer f.Close()
	lines := bufio.NewScanner(f)
	for lines.Scan() {
		if strings.TrimSpace(lines.Text()) != docsMarker+name+" -->" {
			continue
		}
		if !lines.Scan() || lines.Text() != "```sh" {
			return "", fmt.Errorf("docs/install.md: the block %q is not a ```sh block", name)
		}
		var block []string
		for lines.Scan() && lines.Text() != "```" {
			block = append(block, lines.Text())
		}
		return strings.Join(block, "\n"), nil
	}
	return "", fmt.Errorf("docs/install.md has no block %q (%s%s -->)", name, docsMarker, name)
}

// runDocs runs the block of docs/install.md named name as a reader would
// on make cluster: from a directory that has the repository's charts/ and
// the cluster's state as .cluster/, with Helm on PATH, KUBECONFIG set and
// VERSION the tag of make images' archives.
func runDocs(name string) error {
	block, err := docsBlock(name)
	if err != nil {
		return err
	}
	dir, err := docsDir()
	if err != nil {
		return err
	}
	cmd := exec.Command("sh", "-ec", block)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "KUBECONFIG="+suite.kubeconfig, "VERSION="+suite.version,
		"PATH="+filepath.Join(dir, "bin")+string(os.PathListSeparator)+os.Getenv("PATH"))
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("docs/install.md's %s block: %w\n%s", name, err, out)
	}
	return nil
}

// docsDir is where the docs' commands run (made on first use).
func docsDir() (string, error) {
	dir := filepath.Join(suite.dir, "reader")
	if _, err := os.Stat(dir); err == nil {
		return dir, nil
	}
	helm := os.Getenv("ROOMKEEPER_HELM")
	if helm == "" {
		return "", fmt.Errorf("ROOMKEEPER_HELM is not set: run `make test` (it builds Helm and passes its path)")
	}
	if err := os.MkdirAll(filepath.Join(dir, "bin"), 0o755); err != nil {
		return "", err
	}
	links := map[string]string{
		"charts":   filepath.Join(suite.root, "charts"),
		".cluster": filepath.Join(suite.dir, "state"),
		"bin/helm": helm,
	}
	for name, target := range links {
		if err := os.Symlink(target, filepath.Join(dir, name)); err != nil {
			return "", err
		}
	}
	return dir, nil
}
