package install_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"sigs.k8s.io/yaml"

	"github.com/roomkeeper/roomkeeper/controllers"
	"github.com/roomkeeper/roomkeeper/internal/joinapi"
	"github.com/roomkeeper/roomkeeper/internal/roomserver"
)

// series is an exported metric family: its labels, and whether it is a
// histogram (which adds _bucket, _sum and _count).
type series struct {
	labels    map[string]bool
	histogram bool
}

var (
	descName   = regexp.MustCompile(`fqName: "([^"]+)"`)
	descLabels = regexp.MustCompile(`variableLabels: \{([^}]*)\}`)
)

// exportedSeries describes what the manager (controllers, join API) and
// the room server define. Describe, unlike a scrape, lists labelled
// families before they have their first child.
func exportedSeries(t *testing.T) map[string]series {
	t.Helper()
	all := append(append(controllers.Collectors(), joinapi.Collectors()...), roomserver.Collectors()...)
	out := map[string]series{}
	for _, c := range all {
		_, histogram := c.(prometheus.Histogram)
		if _, vec := c.(*prometheus.HistogramVec); vec {
			histogram = true
		}
		descs := make(chan *prometheus.Desc, 16)
		go func() { c.Describe(descs); close(descs) }()
		for d := range descs {
			name := descName.FindStringSubmatch(d.String())
			if name == nil {
				t.Fatalf("cannot read the name of %s", d)
			}
			s := series{labels: map[string]bool{}, histogram: histogram}
			if l := descLabels.FindStringSubmatch(d.String()); l != nil {
				for _, label := range strings.Split(l[1], ",") {
					if label = strings.TrimSpace(label); label != "" {
						s.labels[label] = true
					}
				}
			}
			out[name[1]] = s
		}
	}
	return out
}

// expressions are the PromQL of the chart's alerts and dashboard.
func expressions(t *testing.T) map[string]string {
	t.Helper()
	exprs := map[string]string{}
	raw, err := os.ReadFile(filepath.Join(root, chartDir, "files", "alerts.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var rules struct {
		Groups []struct {
			Name  string
			Rules []struct {
				Alert, Expr, For string
				Labels           map[string]string
				Annotations      map[string]string
			}
		}
	}
	if err := yaml.UnmarshalStrict(raw, &rules); err != nil {
		t.Fatalf("alerts.yaml: %v", err)
	}
	for _, g := range rules.Groups {
		for _, r := range g.Rules {
			if r.Alert == "" || r.Expr == "" || r.Labels["severity"] == "" || r.Annotations["summary"] == "" {
				t.Errorf("alerts.yaml: rule %q needs an alert name, an expr, a severity and a summary", r.Alert)
			}
			exprs["alert "+r.Alert] = r.Expr
		}
	}
	raw, err = os.ReadFile(filepath.Join(root, chartDir, "files", "dashboard.json"))
	if err != nil {
		t.Fatal(err)
	}
	var dashboard struct {
		Panels []struct {
			Title   string
			Targets []struct{ Expr, RefID string }
		}
	}
	if err := json.Unmarshal(raw, &dashboard); err != nil {
		t.Fatalf("dashboard.json: %v", err)
	}
	for _, p := range dashboard.Panels {
		for _, target := range p.Targets {
			exprs["panel "+p.Title+" "+target.RefID] = target.Expr
		}
	}
	return exprs
}

var (
	// seriesRef is a roomkeeper_ series in an expression, with its label
	// matchers when it has some.
	seriesRef = regexp.MustCompile(`\b(roomkeeper_[a-z0-9_]+)(\{[^}]*\})?`)
	matcher   = regexp.MustCompile(`([a-zA-Z_][a-zA-Z0-9_]*)\s*(=~|!~|!=|=)`)
)

// TestAlertsAndDashboardNameExportedSeries: every series an alert or a
// panel queries is one the binaries export, with the labels it matches
// on; and the dashboard covers what an SRE looks at first.
func TestAlertsAndDashboardNameExportedSeries(t *testing.T) {
	exported := exportedSeries(t)
	exprs := expressions(t)
	if len(exprs) < 15 {
		t.Fatalf("only %d expressions found", len(exprs))
	}
	used := map[string]bool{}
	for where, expr := range exprs {
		refs := seriesRef.FindAllStringSubmatch(expr, -1)
		if len(refs) == 0 {
			t.Errorf("%s queries no roomkeeper_ series: %s", where, expr)
		}
		for _, ref := range refs {
			name, s, ok := resolve(exported, ref[1])
			if !ok {
				t.Errorf("%s: %s is not exported by the manager or the room server", where, ref[1])
				continue
			}
			used[name] = true
			for _, m := range matcher.FindAllStringSubmatch(ref[2], -1) {
				if !s.labels[m[1]] {
					t.Errorf("%s: %s has no label %q", where, name, m[1])
				}
			}
		}
	}
	for _, want := range []string{"roomkeeper_gamerooms", "roomkeeper_mapinstances", "roomkeeper_players",
		"roomkeeper_map_failures_total", "roomkeeper_quarantined_maps", "roomkeeper_roomserver_tick_duration_seconds",
		"roomkeeper_roomserver_sent_bytes_total", "roomkeeper_join_request_duration_seconds", "roomkeeper_join_requests_total",
		"roomkeeper_roomserver_checkpoint_failures_total"} {
		if !used[want] {
			t.Errorf("no alert or panel shows %s", want)
		}
	}
}

// resolve finds the family a series name belongs to: itself, or a
// histogram's _bucket, _sum or _count.
func resolve(exported map[string]series, name string) (string, series, bool) {
	if s, ok := exported[name]; ok {
		return name, s, true
	}
	for _, suffix := range []string{"_bucket", "_sum", "_count"} {
		base := strings.TrimSuffix(name, suffix)
		if s, ok := exported[base]; ok && base != name && s.histogram {
			if suffix == "_bucket" {
				s.labels["le"] = true
			}
			return base, s, true
		}
	}
	return "", series{}, false
}
