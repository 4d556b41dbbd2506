package main

import (
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"
)

var testNow = metav1.NewTime(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC))

var testOptions = options{
	className: testClass,
	address:   gatewayv1.GatewayStatusAddress{Type: ptr.To(gatewayv1.IPAddressType), Value: "127.0.0.1"},
}

// testSnapshot is a served Gateway "gw/dev" with listener "all" (routes
// from every namespace) and "same" (routes from gw only), a Gateway
// "gw/other" of another class, and Service "rooms/room" with one endpoint.
func testSnapshot(routes ...*gatewayv1.HTTPRoute) snapshot {
	s := snapshot{
		gateways: []gatewayv1.Gateway{
			*newGateway("gw", "dev", testClass,
				httpsListener("all", 443, gatewayv1.NamespacesFromAll),
				httpsListener("same", 8443, gatewayv1.NamespacesFromSame)),
			*newGateway("gw", "other", "istio", httpsListener("all", 443, gatewayv1.NamespacesFromAll)),
		},
		services: []corev1.Service{*newService("rooms", "room", 7000, nil)},
		slices:   []discoveryv1.EndpointSlice{*newEndpointSlice("rooms", "room", 7000, "10.0.0.5")},
	}
	for _, r := range routes {
		s.routes = append(s.routes, *r)
	}
	return s
}

// updated returns the status update plan made for the object kind/name.
func updated(t *testing.T, p plan, kind gatewayv1.Kind, name string) statusUpdate {
	t.Helper()
	for _, u := range p.updates {
		if u.kind == kind && u.after.GetName() == name {
			return u
		}
	}
	t.Fatalf("no status update for %s %s in %d updates", kind, name, len(p.updates))
	return statusUpdate{}
}

// ourParents are the route's status.parents entries of this controller.
func ourParents(r *gatewayv1.HTTPRoute) []gatewayv1.RouteParentStatus {
	var out []gatewayv1.RouteParentStatus
	for _, p := range r.Status.Parents {
		if p.ControllerName == controllerName {
			out = append(out, p)
		}
	}
	return out
}

// conditionSummary is "Type=Status/Reason" for the condition of type t.
func conditionSummary(conditions []metav1.Condition, t string) string {
	c := meta.FindStatusCondition(conditions, t)
	if c == nil {
		return t + " missing"
	}
	return t + "=" + string(c.Status) + "/" + c.Reason
}

func TestRouteParentStatus(t *testing.T) {
	unsupportedMatch := prefixRule("/x", "", "room", 80)
	unsupportedMatch.Matches[0].Headers = []gatewayv1.HTTPHeaderMatch{{Name: "X-Room", Value: "a"}}
	exactWithPrefixRewrite := exactRule("/x", "room", 80)
	exactWithPrefixRewrite.Filters = prefixRule("/x", "/ws", "room", 80).Filters
	crossNamespace := prefixRule("/", "", "room", 80)
	crossNamespace.BackendRefs[0].Namespace = ptr.To[gatewayv1.Namespace]("rooms")
	otherKind := prefixRule("/b", "", "bucket", 80)
	otherKind.BackendRefs[0].Group = ptr.To[gatewayv1.Group]("storage.example.com")
	otherKind.BackendRefs[0].Kind = ptr.To[gatewayv1.Kind]("Bucket")
	tests := []struct {
		name               string
		route              *gatewayv1.HTTPRoute
		accepted, resolved string
		routed             bool
	}{
		{"attached", operatorRoute("rooms", "r", "gw", "dev", "/games/a/b/ws", "room"),
			"Accepted=True/Accepted", "ResolvedRefs=True/ResolvedRefs", true},
		{"gateway namespace defaults to the route's", newRoute("gw", "r",
			withParent(parentRef("", "dev", "same")), withRule(prefixRule("/", "", "room", 80))),
			"Accepted=True/Accepted", "ResolvedRefs=False/BackendNotFound", true},
		{"backend in another namespace", newRoute("gw", "r",
			withParent(parentRef("", "dev", "same")), withRule(crossNamespace)),
			"Accepted=True/Accepted", "ResolvedRefs=False/RefNotPermitted", true},
		{"backend of another kind", operatorRoute("rooms", "r", "gw", "dev", "/a", "room", withRule(otherKind)),
			"Accepted=True/Accepted", "ResolvedRefs=False/InvalidKind", true},
		{"missing gateway", operatorRoute("rooms", "r", "gw", "nope", "/a", "room"),
			"Accepted=False/NoMatchingParent", "ResolvedRefs=True/ResolvedRefs", false},
		{"missing listener", newRoute("rooms", "r", withParent(parentRef("gw", "dev", "nope")), withRule(prefixRule("/a", "", "room", 80))),
			"Accepted=False/NoMatchingParent", "ResolvedRefs=True/ResolvedRefs", false},
		{"listener takes routes from its own namespace only", newRoute("rooms", "r",
			withParent(parentRef("gw", "dev", "same")), withRule(prefixRule("/a", "", "room", 80))),
			"Accepted=False/NotAllowedByListeners", "ResolvedRefs=True/ResolvedRefs", false},
		{"missing service", operatorRoute("rooms", "r", "gw", "dev", "/a", "nope"),
			"Accepted=True/Accepted", "ResolvedRefs=False/BackendNotFound", true},
		{"missing service port", newRoute("rooms", "r", withParent(parentRef("gw", "dev", "")), withRule(prefixRule("/a", "", "room", 81))),
			"Accepted=True/Accepted", "ResolvedRefs=False/BackendNotFound", true},
		{"header match", newRoute("rooms", "r", withParent(parentRef("gw", "dev", "")), withRule(unsupportedMatch)),
			"Accepted=False/UnsupportedValue", "ResolvedRefs=True/ResolvedRefs", false},
		{"ReplacePrefixMatch on an Exact match", newRoute("rooms", "r", withParent(parentRef("gw", "dev", "")), withRule(exactWithPrefixRewrite)),
			"Accepted=False/UnsupportedValue", "ResolvedRefs=True/ResolvedRefs", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := makePlan(testSnapshot(tt.route), testOptions, testNow)
			after := updated(t, p, "HTTPRoute", "r").after.(*gatewayv1.HTTPRoute)
			parents := ourParents(after)
			if len(parents) != 1 {
				t.Fatalf("want one parent entry, got %+v", after.Status.Parents)
			}
			got := []string{conditionSummary(parents[0].Conditions, "Accepted"), conditionSummary(parents[0].Conditions, "ResolvedRefs")}
			if want := []string{tt.accepted, tt.resolved}; !slices.Equal(got, want) {
				t.Errorf("conditions %v, want %v (%+v)", got, want, parents[0].Conditions)
			}
			if routed := len(p.table.entries) > 0; routed != tt.routed {
				t.Errorf("routed = %v, want %v", routed, tt.routed)
			}
		})
	}
}

func TestOtherControllersParentsAreKept(t *testing.T) {
	theirs := gatewayv1.RouteParentStatus{
		ParentRef:      parentRef("gw", "other", ""),
		ControllerName: "example.com/istio",
		Conditions:     []metav1.Condition{{Type: "Accepted", Status: metav1.ConditionTrue, Reason: "Accepted"}},
	}
	stale := gatewayv1.RouteParentStatus{ParentRef: parentRef("gw", "gone", ""), ControllerName: controllerName}
	route := operatorRoute("rooms", "r", "gw", "dev", "/a", "room", withParent(parentRef("gw", "other", "")))
	route.Status.Parents = []gatewayv1.RouteParentStatus{stale, theirs}
	p := makePlan(testSnapshot(route), testOptions, testNow)
	after := updated(t, p, "HTTPRoute", "r").after.(*gatewayv1.HTTPRoute)
	if len(after.Status.Parents) != 2 {
		t.Fatalf("want their entry and ours, got %+v", after.Status.Parents)
	}
	if got := after.Status.Parents[0]; got.ControllerName != theirs.ControllerName || got.Conditions[0] != theirs.Conditions[0] {
		t.Errorf("their entry changed: %+v", got)
	}
	if got := after.Status.Parents[1]; got.ControllerName != controllerName || got.ParentRef.Name != "dev" {
		t.Errorf("our entry: %+v", got)
	}
}

// A second plan over the statuses the first one wrote changes nothing: the
// gateway does not write in a loop.
func TestPlanIsStable(t *testing.T) {
	s := testSnapshot(
		operatorRoute("rooms", "a", "gw", "dev", "/a", "room"),
		operatorRoute("rooms", "b", "gw", "nope", "/b", "nope"))
	s.classes = []gatewayv1.GatewayClass{{
		ObjectMeta: metav1.ObjectMeta{Name: testClass},
		Spec:       gatewayv1.GatewayClassSpec{ControllerName: controllerName},
	}}
	first := makePlan(s, testOptions, testNow)
	if len(first.updates) != 4 { // class, served gateway, two routes
		t.Fatalf("first plan: %d updates, want 4", len(first.updates))
	}
	for _, u := range first.updates {
		switch after := u.after.(type) {
		case *gatewayv1.HTTPRoute:
			i := slices.IndexFunc(s.routes, func(r gatewayv1.HTTPRoute) bool { return r.Name == after.Name })
			s.routes[i].Status = after.Status
		case *gatewayv1.Gateway:
			s.gateways[0].Status = after.Status
		case *gatewayv1.GatewayClass:
			s.classes[0].Status = after.Status
		}
	}
	later := metav1.NewTime(testNow.Add(time.Hour))
	if second := makePlan(s, testOptions, later); len(second.updates) != 0 {
		t.Errorf("second plan updates %d objects, first of them %s %s", len(second.updates),
			second.updates[0].kind, second.updates[0].after.GetName())
	}
}

func TestGatewayStatus(t *testing.T) {
	s := testSnapshot(
		operatorRoute("rooms", "a", "gw", "dev", "/a", "room"),
		operatorRoute("rooms", "b", "gw", "dev", "/b", "room"))
	s.gateways[0].Spec.Listeners = append(s.gateways[0].Spec.Listeners,
		gatewayv1.Listener{Name: "tcp", Port: 9000, Protocol: gatewayv1.TCPProtocolType})
	p := makePlan(s, testOptions, testNow)
	gw := updated(t, p, "Gateway", "dev").after.(*gatewayv1.Gateway)
	if len(gw.Status.Addresses) != 1 || gw.Status.Addresses[0].Value != "127.0.0.1" {
		t.Errorf("addresses %+v", gw.Status.Addresses)
	}
	for _, c := range []string{"Accepted", "Programmed"} {
		if !meta.IsStatusConditionTrue(gw.Status.Conditions, c) {
			t.Errorf("%s", conditionSummary(gw.Status.Conditions, c))
		}
	}
	attached := map[gatewayv1.SectionName]int32{}
	accepted := map[gatewayv1.SectionName]string{}
	for _, l := range gw.Status.Listeners {
		attached[l.Name] = l.AttachedRoutes
		accepted[l.Name] = conditionSummary(l.Conditions, "Accepted")
	}
	if attached["all"] != 2 || attached["same"] != 0 || attached["tcp"] != 0 {
		t.Errorf("attached routes %v, want all: 2, same: 0, tcp: 0", attached)
	}
	if accepted["tcp"] != "Accepted=False/UnsupportedProtocol" || accepted["all"] != "Accepted=True/Accepted" {
		t.Errorf("listener acceptance %v", accepted)
	}
	for _, u := range p.updates {
		if u.kind == "Gateway" && u.after.GetName() == "other" {
			t.Error("wrote the status of another class's Gateway")
		}
	}
}

func TestLookupPrecedence(t *testing.T) {
	older := metav1.NewTime(testNow.Add(-time.Hour))
	s := testSnapshot(
		newRoute("rooms", "any-host", withParent(parentRef("gw", "dev", "")),
			withRule(prefixRule("/games/a/b/ws/long", "", "room", 80))),
		newRoute("rooms", "prefix", withParent(parentRef("gw", "dev", "")), withHostnames(publicHost),
			withRule(prefixRule("/games", "", "room", 80)), withRule(prefixRule("/games/a", "", "room", 80))),
		newRoute("rooms", "exact", withParent(parentRef("gw", "dev", "")), withHostnames(publicHost),
			withRule(exactRule("/games/a", "room", 80))),
		newRoute("rooms", "newer", withParent(parentRef("gw", "dev", "")), withHostnames(publicHost),
			withRule(prefixRule("/same", "", "room", 80)), withCreated(testNow)),
		newRoute("rooms", "older", withParent(parentRef("gw", "dev", "")), withHostnames(publicHost),
			withRule(prefixRule("/same", "", "room", 80)), withCreated(older)),
	)
	table := makePlan(s, testOptions, testNow).table
	tests := []struct {
		host, path, want string // want: route/rule, or "" for no route
	}{
		{publicHost, "/games/a", "exact/0"},
		{publicHost, "/games/a/", "prefix/1"},
		{publicHost, "/games/a/b/ws/long", "prefix/1"}, // a named host beats any host, even with a longer path
		{"other.localtest", "/games/a/b/ws/long/x", "any-host/0"},
		{"other.localtest", "/games/a", ""},
		{publicHost, "/games/ab", "prefix/0"},
		{publicHost, "/gamesx", ""},
		{publicHost, "/same/x", "older/0"},
	}
	for _, tt := range tests {
		got := ""
		if e := table.lookup(tt.host, tt.path); e != nil {
			got = e.route.Name + "/" + strconv.Itoa(e.rule)
		}
		if got != tt.want {
			t.Errorf("lookup(%s, %s) = %q, want %q", tt.host, tt.path, got, tt.want)
		}
	}
}

func TestPathMatch(t *testing.T) {
	tests := []struct {
		exact       bool
		value, path string
		want        bool
	}{
		{false, "/abc", "/abc", true},
		{false, "/abc", "/abc/", true},
		{false, "/abc", "/abc/def", true},
		{false, "/abc", "/abcd", false},
		{false, "/abc/", "/abc", true},
		{false, "/abc/", "/abc/def", true},
		{false, "/", "/anything", true},
		{false, "/", "/", true},
		{true, "/abc", "/abc", true},
		{true, "/abc", "/abc/", false},
		{true, "/abc", "/Abc", false},
	}
	for _, tt := range tests {
		route := newRoute("rooms", "r", withRule(prefixRule(tt.value, "", "room", 80)))
		if tt.exact {
			route = newRoute("rooms", "r", withRule(exactRule(tt.value, "room", 80)))
		}
		e := routeEntries(route, [][]backend{nil})[0]
		if got := e.matches(tt.path); got != tt.want {
			t.Errorf("exact=%v %q matches %q = %v, want %v", tt.exact, tt.value, tt.path, got, tt.want)
		}
	}
}

// The ReplacePrefixMatch table of the Gateway API's HTTPPathModifier.
func TestRewritePath(t *testing.T) {
	tests := []struct{ path, prefix, replacement, want string }{
		{"/foo/bar", "/foo", "/xyz", "/xyz/bar"},
		{"/foo/bar", "/foo", "/xyz/", "/xyz/bar"},
		{"/foo/bar", "/foo/", "/xyz", "/xyz/bar"},
		{"/foo/bar", "/foo/", "/xyz/", "/xyz/bar"},
		{"/foo", "/foo", "/xyz", "/xyz"},
		{"/foo/", "/foo", "/xyz", "/xyz/"},
		{"/foo/bar", "/foo", "", "/bar"},
		{"/foo/", "/foo", "", "/"},
		{"/foo", "/foo", "", "/"},
		{"/foo/", "/foo", "/", "/"},
		{"/foo", "/foo", "/", "/"},
		{"/games/demo/town/ws", "/games/demo/town/ws", "/ws", "/ws"},
		{"/anything", "/", "/ws", "/ws/anything"},
	}
	for _, tt := range tests {
		rule := prefixRule(tt.prefix, "/placeholder", "room", 80)
		rule.Filters[0].URLRewrite.Path.ReplacePrefixMatch = ptr.To(tt.replacement)
		e := routeEntries(newRoute("rooms", "r", withRule(rule)), [][]backend{nil})[0]
		if got := e.rewritePath(tt.path); got != tt.want {
			t.Errorf("%s with prefix %s replaced by %q = %s, want %s", tt.path, tt.prefix, tt.replacement, got, tt.want)
		}
	}
	full := prefixRule("/foo", "", "room", 80)
	full.Filters = []gatewayv1.HTTPRouteFilter{{Type: gatewayv1.HTTPRouteFilterURLRewrite, URLRewrite: &gatewayv1.HTTPURLRewriteFilter{
		Hostname: ptr.To[gatewayv1.PreciseHostname]("inside.localtest"),
		Path:     &gatewayv1.HTTPPathModifier{Type: gatewayv1.FullPathHTTPPathModifier, ReplaceFullPath: ptr.To("/ws")},
	}}}
	e := routeEntries(newRoute("rooms", "r", withRule(full)), [][]backend{nil})[0]
	if got := e.rewritePath("/foo/bar"); got != "/ws" {
		t.Errorf("ReplaceFullPath: %s", got)
	}
	if got := e.rewriteHost(publicHost); got != "inside.localtest" {
		t.Errorf("hostname rewrite: %s", got)
	}
}

func TestReadyAddresses(t *testing.T) {
	es := newEndpointSlice("rooms", "room", 7000, "10.0.0.1", "10.0.0.2", "10.0.0.3")
	es.Endpoints[1].Conditions.Ready = ptr.To(false)
	es.Endpoints[2].Conditions.Ready = nil // unknown counts as ready
	es.Endpoints[2].Addresses = append(es.Endpoints[2].Addresses, "10.0.0.9")
	other := newEndpointSlice("rooms", "room", 9000, "10.0.0.4")
	other.Ports[0].Name = ptr.To("metrics")
	got := readyAddresses([]*discoveryv1.EndpointSlice{es, other}, wsPortName)
	if want := []string{"10.0.0.1:7000", "10.0.0.3:7000"}; !slices.Equal(got, want) {
		t.Errorf("readyAddresses = %v, want %v", got, want)
	}
}

func TestPodAddressesStandInForEndpointSlices(t *testing.T) {
	pod := func(name, ip string, ready bool, labels map[string]string) corev1.Pod {
		p := corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Namespace: "rooms", Name: name, Labels: labels},
			Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c",
				Ports: []corev1.ContainerPort{{Name: "game", ContainerPort: 7777}}}}},
			Status: corev1.PodStatus{Phase: corev1.PodRunning, PodIP: ip},
		}
		if ready {
			p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}
		}
		return p
	}
	selector := map[string]string{"map": "town"}
	pods := []corev1.Pod{
		pod("ready", "127.0.10.2", true, selector),
		pod("unready", "127.0.10.3", false, selector),
		pod("elsewhere", "127.0.10.4", true, map[string]string{"map": "cave"}),
	}
	named := newService("rooms", "room", 0, selector)
	named.Spec.Ports[0].TargetPort = intstr.FromString("game")
	numbered := newService("rooms", "numbered", 7000, selector)
	withSlice := newService("rooms", "sliced", 7000, selector)
	idx := newBackendIndex([]corev1.Service{*named, *numbered, *withSlice},
		[]discoveryv1.EndpointSlice{*newEndpointSlice("rooms", "sliced", 7000, "10.0.0.1")}, pods)
	for _, tt := range []struct {
		service string
		want    []string
	}{
		{"room", []string{"127.0.10.2:7777"}},
		{"numbered", []string{"127.0.10.2:7000"}},
		{"sliced", []string{"10.0.0.1:7000"}},
	} {
		b, reason := idx.backend("rooms", backendRef(tt.service, 80).BackendRef)
		if reason != "" || !slices.Equal(b.addrs, tt.want) {
			t.Errorf("%s: addresses %v (%s %s), want %v", tt.service, b.addrs, reason, b.problem, tt.want)
		}
	}
}

func TestPick(t *testing.T) {
	e := tableEntry{backends: []backend{
		{name: "rooms/off:80", weight: 0, addrs: []string{"10.0.0.9:1"}},
		{name: "rooms/on:80", weight: 1, addrs: []string{"10.0.0.1:1", "10.0.0.2:1"}},
	}}
	for range 50 {
		if addr, why := e.pick(); addr != "10.0.0.1:1" && addr != "10.0.0.2:1" {
			t.Fatalf("pick = %q (%s)", addr, why)
		}
	}
	e.backends[1].addrs = nil
	if addr, why := e.pick(); addr != "" || !strings.Contains(why, "no ready endpoint for rooms/on:80") {
		t.Errorf("no endpoints: pick = %q, %q", addr, why)
	}
	e.backends[1].problem = "Service rooms/on not found"
	if _, why := e.pick(); why != "Service rooms/on not found" {
		t.Errorf("unresolved: %q", why)
	}
	e.backends[1].weight = 0
	if addr, why := e.pick(); addr != "" || !strings.Contains(why, "no backend to send to") {
		t.Errorf("all weights 0: pick = %q, %q", addr, why)
	}
}

func TestRequestHost(t *testing.T) {
	for in, want := range map[string]string{
		"games.localtest":      "games.localtest",
		"Games.Localtest:8443": "games.localtest",
		"games.localtest.":     "games.localtest",
		"127.0.0.1:8443":       "127.0.0.1",
		"[::1]:8443":           "::1",
		"[::1]":                "::1",
	} {
		if got := requestHost(in); got != want {
			t.Errorf("requestHost(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestParseFlags(t *testing.T) {
	cfg, err := parseFlags([]string{"--kubeconfig", "kc", "--cert-dir", "certs", "--hostnames", "Games.Localtest, localhost,games.localtest"}, new(strings.Builder))
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"localhost", "games.localtest"}; !slices.Equal(cfg.hostnames, want) {
		t.Errorf("hostnames %v, want %v", cfg.hostnames, want)
	}
	if cfg.listen != "127.0.0.1:8443" || cfg.gatewayClass != "roomkeeper-dev" || cfg.httpListen != "" {
		t.Errorf("defaults: %+v", cfg)
	}
	for _, args := range [][]string{
		{"--cert-dir", "certs"},
		{"--kubeconfig", "kc"},
		{"--kubeconfig", "kc", "--cert-dir", "certs", "--hostnames", "*.localtest"},
		{"--kubeconfig", "kc", "--cert-dir", "certs", "--gateway-class", ""},
	} {
		if _, err := parseFlags(args, new(strings.Builder)); err == nil {
			t.Errorf("%v accepted", args)
		}
	}
}
