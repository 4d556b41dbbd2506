package testenv

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/prometheus/client_golang/prometheus"
)

// UndocumentedMetrics gathers g and returns how many roomkeeper_ series it
// has and those that docs/operations.md does not name, so a test can keep
// the operations guide as complete as the binaries' /metrics.
func UndocumentedMetrics(g prometheus.Gatherer) (seen int, missing []string, err error) {
	root, err := RepoRoot()
	if err != nil {
		return 0, nil, err
	}
	doc, err := os.ReadFile(filepath.Join(root, "docs", "operations.md"))
	if err != nil {
		return 0, nil, err
	}
	families, err := g.Gather()
	if err != nil {
		return 0, nil, fmt.Errorf("gathering metrics: %w", err)
	}
	for _, f := range families {
		name := f.GetName()
		if !strings.HasPrefix(name, "roomkeeper_") {
			continue // go_*, process_*, controller_runtime_*: documented upstream
		}
		seen++
		if !strings.Contains(string(doc), "`"+name) {
			missing = append(missing, name)
		}
	}
	return seen, missing, nil
}
