package install_test

import (
	"bytes"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"
)

const chartDir = "charts/roomkeeper"

// helmTemplate renders the chart as `helm template` would for an install
// into installNamespace, CRDs included.
func helmTemplate(t *testing.T, release string, set ...string) string {
	t.Helper()
	args := []string{"template", release, chartDir, "--namespace", installNamespace, "--include-crds"}
	for _, s := range set {
		args = append(args, "--set", s)
	}
	out, err := runTool(nil, tool(t, "ROOMKEEPER_HELM", "helm"), args...)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// TestTheChartAppliesToAControlPlane: with its defaults, with every option
// on and with the join API off, the chart's output passes a server-side
// dry run, and what the manager is told points at what the chart creates.
func TestTheChartAppliesToAControlPlane(t *testing.T) {
	cases := []struct {
		name, release string
		set           []string
		want          []string
		absent        []string
	}{{
		name: "defaults", release: "games",
		want: []string{
			"customresourcedefinition.apiextensions.k8s.io/gamerooms.game.roomkeeper.dev",
			"customresourcedefinition.apiextensions.k8s.io/mapinstances.game.roomkeeper.dev",
			"serviceaccount/games-roomkeeper", "clusterrole.rbac.authorization.k8s.io/games-roomkeeper-manager",
			"clusterrolebinding.rbac.authorization.k8s.io/games-roomkeeper-manager",
			"role.rbac.authorization.k8s.io/games-roomkeeper-leader-election",
			"rolebinding.rbac.authorization.k8s.io/games-roomkeeper-leader-election",
			"service/games-roomkeeper-metrics", "service/games-roomkeeper-join-api", "deployment.apps/games-roomkeeper-manager",
			"validatingadmissionpolicy.admissionregistration.k8s.io/games-roomkeeper-roomserver-status",
			"validatingadmissionpolicybinding.admissionregistration.k8s.io/games-roomkeeper-roomserver-status",
		},
		absent: []string{"servicemonitor.monitoring.coreos.com/", "prometheusrule.monitoring.coreos.com/", "configmap/", "gateway.gateway.networking.k8s.io/"},
	}, {
		name: "every option", release: "roomkeeper",
		set: []string{"metrics.serviceMonitor.enabled=true", "metrics.prometheusRule.enabled=true", "metrics.dashboard.enabled=true",
			"replicaCount=2", "joinAPI.service.type=LoadBalancer", "joinAPI.service.externalTrafficPolicy=Local",
			"image.tag=v1.2.3", "extraArgs={--zap-log-level=debug}",
			"gateway.enabled=true", "gateway.className=example", "gateway.hostname=games.example.com", "gateway.tlsSecretName=games-tls"},
		want: []string{
			"servicemonitor.monitoring.coreos.com/roomkeeper-manager", "podmonitor.monitoring.coreos.com/roomkeeper-roomservers",
			"prometheusrule.monitoring.coreos.com/roomkeeper", "configmap/roomkeeper-dashboard",
			"deployment.apps/roomkeeper-manager", "service/roomkeeper-join-api",
			"gateway.gateway.networking.k8s.io/roomkeeper",
		},
	}, {
		name: "no join API, an existing service account", release: "quiet",
		set:    []string{"joinAPI.enabled=false", "serviceAccount.create=false", "serviceAccount.name=default", "leaderElection=false"},
		want:   []string{"deployment.apps/quiet-roomkeeper-manager", "clusterrolebinding.rbac.authorization.k8s.io/quiet-roomkeeper-manager"},
		absent: []string{"service/quiet-roomkeeper-join-api", "serviceaccount/", "role.rbac.authorization.k8s.io/"},
	}}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			manifests := helmTemplate(t, tc.release, tc.set...)
			out := dryRunApply(t, manifests)
			for _, want := range tc.want {
				if !applied(out, want) {
					t.Errorf("%s not applied; kubectl said:\n%s", want, out)
				}
			}
			for _, absent := range tc.absent {
				if appliesAny(out, absent) {
					t.Errorf("%s applied, but this case should not create it; kubectl said:\n%s", absent, out)
				}
			}
		})
	}
}

// TestTheChartWiresTheManagerToItsServices: the manager's flags follow the
// values, and map pods are told the join API Service the chart creates.
func TestTheChartWiresTheManagerToItsServices(t *testing.T) {
	manifests := helmTemplate(t, "games", "image.tag=v1.2.3", "workers.gameRooms=4", "maxCharactersPerRoom=500")
	for _, want := range []string{
		"image: \"roomkeeper/manager:v1.2.3\"",
		"- --leader-elect",
		"- --join-api-url=http://games-roomkeeper-join-api.roomkeeper-system.svc:8090",
		"- --gameroom-workers=4",
		"- --max-characters-per-room=500",
		"runAsNonRoot: true",
		"readOnlyRootFilesystem: true",
	} {
		if !strings.Contains(manifests, want) {
			t.Errorf("the rendered chart lacks %q", want)
		}
	}
	if off := helmTemplate(t, "games", "joinAPI.enabled=false"); !strings.Contains(off, "- --join-api-bind-address=0") {
		t.Error("with joinAPI.enabled=false the manager still serves the join API")
	}
}

// TestKustomizeAppliesToAControlPlane: `make deploy`'s manifests pass a
// server-side dry run.
func TestKustomizeAppliesToAControlPlane(t *testing.T) {
	manifests, err := runTool(nil, tool(t, "ROOMKEEPER_KUSTOMIZE", "kustomize"), "build", "config/default")
	if err != nil {
		t.Fatal(err)
	}
	out := dryRunApply(t, manifests)
	for _, want := range []string{
		"customresourcedefinition.apiextensions.k8s.io/gamerooms.game.roomkeeper.dev",
		"clusterrole.rbac.authorization.k8s.io/roomkeeper-manager-role",
		"service/roomkeeper-join-api", "service/roomkeeper-metrics", "deployment.apps/roomkeeper-controller-manager",
		"validatingadmissionpolicy.admissionregistration.k8s.io/roomkeeper-roomserver-status",
		"validatingadmissionpolicybinding.admissionregistration.k8s.io/roomkeeper-roomserver-status",
	} {
		if !applied(out, want) {
			t.Errorf("%s not applied; kubectl said:\n%s", want, out)
		}
	}
}

// TestTheChartCarriesTheGeneratedManifests: the chart's CRDs and roles are
// what `make manifests` generates into config/.
func TestTheChartCarriesTheGeneratedManifests(t *testing.T) {
	pairs := map[string]string{
		"config/rbac/role.yaml":                       chartDir + "/files/manager-role.yaml",
		"config/rbac/leader_election_role.yaml":       chartDir + "/files/leader-election-role.yaml",
		"config/rbac/room_admin_role.yaml":            chartDir + "/files/room-admin-role.yaml",
		"config/policy/roomserver_status_policy.yaml": chartDir + "/files/roomserver-status-policy.yaml",
	}
	crds, _ := filepath.Glob(filepath.Join(root, "config", "crd", "bases", "*.yaml"))
	for _, crd := range crds {
		pairs["config/crd/bases/"+filepath.Base(crd)] = chartDir + "/crds/" + filepath.Base(crd)
	}
	charted, _ := filepath.Glob(filepath.Join(root, chartDir, "crds", "*.yaml"))
	if len(crds) == 0 || len(charted) != len(crds) {
		t.Errorf("config has %d CRDs, the chart %d", len(crds), len(charted))
	}
	for generated, copied := range pairs {
		a, errA := os.ReadFile(filepath.Join(root, generated))
		b, errB := os.ReadFile(filepath.Join(root, copied))
		if errA != nil || errB != nil || !bytes.Equal(a, b) {
			t.Errorf("%s differs from %s (%v, %v): run `make manifests`", copied, generated, errA, errB)
		}
	}
}

// TestEveryChartValueIsDocumented: each value of values.yaml is in the
// chart's README.
func TestEveryChartValueIsDocumented(t *testing.T) {
	raw, err := os.ReadFile(filepath.Join(root, chartDir, "values.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var values map[string]any
	if err := yaml.Unmarshal(raw, &values); err != nil {
		t.Fatal(err)
	}
	readme, err := os.ReadFile(filepath.Join(root, chartDir, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	keys := valueKeys("", values)
	if len(keys) < 20 {
		t.Fatalf("only %d values found: %v", len(keys), keys)
	}
	for _, key := range keys {
		if !strings.Contains(string(readme), "`"+key+"`") {
			t.Errorf("value %s is not in %s/README.md", key, chartDir)
		}
	}
}

// valueKeys lists the dotted paths of values' leaves (an empty map is a
// leaf: it takes free-form keys).
func valueKeys(prefix string, values map[string]any) []string {
	var keys []string
	for k, v := range values {
		path := prefix + k
		if m, ok := v.(map[string]any); ok && len(m) > 0 && !freeForm(path) {
			keys = append(keys, valueKeys(path+".", m)...)
			continue
		}
		keys = append(keys, path)
	}
	slices.Sort(keys)
	return keys
}

// freeForm values pass through to Kubernetes as they are; the README
// documents them as a whole.
func freeForm(path string) bool {
	switch path {
	case "resources", "podSecurityContext", "securityContext", "metrics.dashboard.labels":
		return true
	}
	return false
}
