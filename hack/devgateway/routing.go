package main

import (
	"cmp"
	"fmt"
	"math/rand/v2"
	"net"
	"slices"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"
)

// routeTable is what the gateway serves: every match of every accepted
// route rule, most specific first. It is never changed once built.
type routeTable struct {
	entries []tableEntry
}

// tableEntry is one match of one route rule.
type tableEntry struct {
	route     types.NamespacedName
	rule      int
	hostnames []string // exact, lower case; empty: any host
	exact     bool     // an Exact path match, else PathPrefix
	path      string   // the match's value; a PathPrefix without its trailing slash
	rewrite   *gatewayv1.HTTPURLRewriteFilter
	backends  []backend
}

// backend is one backendRef of a rule, resolved to ready endpoints.
type backend struct {
	name    string   // namespace/service:port, for messages
	weight  int32    // share of the rule's requests
	addrs   []string // ready endpoints, host:port
	problem string   // why addrs is empty when the ref did not resolve
}

// newRouteTable orders entries by Gateway API precedence: a route naming
// the host before one taking any host, then the longest path, an Exact
// match before a PathPrefix of the same path, then the order given (oldest
// route first).
func newRouteTable(entries []tableEntry) *routeTable {
	slices.SortStableFunc(entries, func(a, b tableEntry) int {
		return cmp.Or(
			-boolCompare(len(a.hostnames) > 0, len(b.hostnames) > 0),
			cmp.Compare(len(b.path), len(a.path)),
			-boolCompare(a.exact, b.exact))
	})
	return &routeTable{entries: entries}
}

// boolCompare orders false before true.
func boolCompare(a, b bool) int {
	switch {
	case a == b:
		return 0
	case a:
		return 1
	}
	return -1
}

// lookup returns the entry serving host (lower case, without port) and
// path, or nil.
func (t *routeTable) lookup(host, path string) *tableEntry {
	for i := range t.entries {
		e := &t.entries[i]
		if len(e.hostnames) > 0 && !slices.Contains(e.hostnames, host) {
			continue
		}
		if e.matches(path) {
			return e
		}
	}
	return nil
}

// matches reports whether path matches e's path match. A PathPrefix
// matches whole path elements: /abc matches /abc, /abc/ and /abc/def, not
// /abcd.
func (e *tableEntry) matches(path string) bool {
	if e.exact {
		return path == e.path
	}
	return path == e.path || strings.HasPrefix(path, e.path+"/")
}

// rewritePath applies the URLRewrite filter's path modifier to path, which
// e matches.
func (e *tableEntry) rewritePath(path string) string {
	if e.rewrite == nil || e.rewrite.Path == nil {
		return path
	}
	switch m := e.rewrite.Path; m.Type {
	case gatewayv1.FullPathHTTPPathModifier:
		return ptr.Deref(m.ReplaceFullPath, "/")
	case gatewayv1.PrefixMatchHTTPPathModifier:
		rewritten := strings.TrimSuffix(ptr.Deref(m.ReplacePrefixMatch, ""), "/") + path[len(e.path):]
		if rewritten == "" {
			return "/"
		}
		return rewritten
	}
	return path
}

// rewriteHost is the Host header to send upstream: the URLRewrite
// filter's hostname, else the client's.
func (e *tableEntry) rewriteHost(host string) string {
	if e.rewrite != nil && e.rewrite.Hostname != nil {
		return string(*e.rewrite.Hostname)
	}
	return host
}

// pick chooses a backend by weight and one of its ready endpoints at
// random. It returns "" and the reason when there is none.
func (e *tableEntry) pick() (addr, why string) {
	var total int32
	for _, b := range e.backends {
		total += b.weight
	}
	if total == 0 {
		return "", fmt.Sprintf("route %s rule %d has no backend to send to (none, or all of weight 0)", e.route, e.rule)
	}
	n := rand.Int32N(total)
	for _, b := range e.backends {
		if n >= b.weight {
			n -= b.weight
			continue
		}
		switch {
		case len(b.addrs) > 0:
			return b.addrs[rand.IntN(len(b.addrs))], ""
		case b.problem != "":
			return "", b.problem
		default:
			return "", "no ready endpoint for " + b.name
		}
	}
	return "", "no backend" // not reached: n < total
}

// routeEntries turns the rules of an accepted route into table entries, one
// per match; a rule without matches matches every path.
func routeEntries(route *gatewayv1.HTTPRoute, rules [][]backend) []tableEntry {
	var hostnames []string
	for _, h := range route.Spec.Hostnames {
		hostnames = append(hostnames, strings.ToLower(string(h)))
	}
	var entries []tableEntry
	for i, rule := range route.Spec.Rules {
		base := tableEntry{route: types.NamespacedName{Namespace: route.Namespace, Name: route.Name},
			rule: i, hostnames: hostnames, backends: rules[i]}
		for _, f := range rule.Filters {
			if f.Type == gatewayv1.HTTPRouteFilterURLRewrite {
				base.rewrite = f.URLRewrite
			}
		}
		matches := rule.Matches
		if len(matches) == 0 {
			matches = []gatewayv1.HTTPRouteMatch{{}}
		}
		for _, m := range matches {
			e := base
			e.path = "/"
			if m.Path != nil {
				e.exact = ptr.Deref(m.Path.Type, gatewayv1.PathMatchPathPrefix) == gatewayv1.PathMatchExact
				e.path = ptr.Deref(m.Path.Value, "/")
			}
			if !e.exact {
				e.path = strings.TrimSuffix(e.path, "/")
			}
			entries = append(entries, e)
		}
	}
	return entries
}

// backendIndex finds Services, their EndpointSlices by Service name and
// Pods by namespace.
type backendIndex struct {
	services map[types.NamespacedName]*corev1.Service
	slices   map[types.NamespacedName][]*discoveryv1.EndpointSlice
	pods     map[string][]*corev1.Pod
}

func newBackendIndex(services []corev1.Service, endpointSlices []discoveryv1.EndpointSlice, pods []corev1.Pod) backendIndex {
	idx := backendIndex{
		services: map[types.NamespacedName]*corev1.Service{},
		slices:   map[types.NamespacedName][]*discoveryv1.EndpointSlice{},
		pods:     map[string][]*corev1.Pod{},
	}
	for i := range services {
		s := &services[i]
		idx.services[types.NamespacedName{Namespace: s.Namespace, Name: s.Name}] = s
	}
	for i := range endpointSlices {
		es := &endpointSlices[i]
		if name := es.Labels[discoveryv1.LabelServiceName]; name != "" {
			key := types.NamespacedName{Namespace: es.Namespace, Name: name}
			idx.slices[key] = append(idx.slices[key], es)
		}
	}
	for i := range pods {
		idx.pods[pods[i].Namespace] = append(idx.pods[pods[i].Namespace], &pods[i])
	}
	return idx
}

// resolve resolves every backendRef of route, rule by rule, and returns its
// ResolvedRefs condition (without generation and time): False with the
// first problem found.
func (idx backendIndex) resolve(route *gatewayv1.HTTPRoute) ([][]backend, metav1.Condition) {
	resolved := metav1.Condition{
		Type:    string(gatewayv1.RouteConditionResolvedRefs),
		Status:  metav1.ConditionTrue,
		Reason:  string(gatewayv1.RouteReasonResolvedRefs),
		Message: "All backendRefs resolved",
	}
	rules := make([][]backend, len(route.Spec.Rules))
	for i, rule := range route.Spec.Rules {
		for _, ref := range rule.BackendRefs {
			b, reason := idx.backend(route.Namespace, ref.BackendRef)
			rules[i] = append(rules[i], b)
			if reason != "" && resolved.Status == metav1.ConditionTrue {
				resolved.Status, resolved.Reason, resolved.Message = metav1.ConditionFalse, string(reason), b.problem
			}
		}
	}
	return rules, resolved
}

// backend resolves one backendRef of a route in namespace ns. A ref that
// does not resolve has no addresses, a problem and the condition reason
// that names it.
func (idx backendIndex) backend(ns string, ref gatewayv1.BackendRef) (backend, gatewayv1.RouteConditionReason) {
	key := types.NamespacedName{Namespace: ns, Name: string(ref.Name)}
	if ref.Namespace != nil {
		key.Namespace = string(*ref.Namespace)
	}
	port := ptr.Deref(ref.Port, 0)
	b := backend{name: key.String() + ":" + strconv.Itoa(int(port)), weight: ptr.Deref(ref.Weight, 1)}
	fail := func(reason gatewayv1.RouteConditionReason, format string, args ...any) (backend, gatewayv1.RouteConditionReason) {
		b.problem = fmt.Sprintf(format, args...)
		return b, reason
	}
	if !refersTo(ref.Group, ref.Kind, corev1.GroupName, kindService) {
		return fail(gatewayv1.RouteReasonInvalidKind, "backendRef %s: devgateway routes only to core Services", ref.Name)
	}
	if key.Namespace != ns {
		return fail(gatewayv1.RouteReasonRefNotPermitted, "backendRef %s: devgateway routes only to Services in the route's namespace", key)
	}
	svc := idx.services[key]
	if svc == nil {
		return fail(gatewayv1.RouteReasonBackendNotFound, "Service %s not found", key)
	}
	i := slices.IndexFunc(svc.Spec.Ports, func(p corev1.ServicePort) bool {
		return p.Port == port && (p.Protocol == "" || p.Protocol == corev1.ProtocolTCP)
	})
	if i < 0 {
		return fail(gatewayv1.RouteReasonBackendNotFound, "Service %s has no TCP port %d", key, port)
	}
	b.addrs = readyAddresses(idx.slices[key], svc.Spec.Ports[i].Name)
	if len(b.addrs) == 0 && len(svc.Spec.Selector) > 0 {
		b.addrs = podAddresses(idx.pods[key.Namespace], svc.Spec.Selector, svc.Spec.Ports[i])
	}
	return b, ""
}

// readyAddresses lists the ready endpoints of a Service's port, named as in
// the Service, as host:port. As the EndpointSlice API allows, only an
// endpoint's first address is used.
func readyAddresses(endpointSlices []*discoveryv1.EndpointSlice, portName string) []string {
	var addrs []string
	for _, es := range endpointSlices {
		i := slices.IndexFunc(es.Ports, func(p discoveryv1.EndpointPort) bool {
			return ptr.Deref(p.Name, "") == portName && p.Port != nil &&
				ptr.Deref(p.Protocol, corev1.ProtocolTCP) == corev1.ProtocolTCP
		})
		if i < 0 {
			continue
		}
		port := strconv.Itoa(int(*es.Ports[i].Port))
		for _, ep := range es.Endpoints {
			if len(ep.Addresses) > 0 && ptr.Deref(ep.Conditions.Ready, true) {
				addrs = append(addrs, net.JoinHostPort(ep.Addresses[0], port))
			}
		}
	}
	slices.Sort(addrs)
	return slices.Compact(addrs)
}

// podAddresses lists the ready Pods selected by selector as host:port, the
// Service port's targetPort resolved against their containers, as the
// EndpointSlice controller would. It stands in for EndpointSlices, which may
// not hold loopback addresses: localnode gives the development cluster's
// pods addresses in 127.0.0.0/8, so their Services get no endpoints.
func podAddresses(pods []*corev1.Pod, selector map[string]string, port corev1.ServicePort) []string {
	sel := labels.SelectorFromSet(selector)
	var addrs []string
	for _, pod := range pods {
		if !sel.Matches(labels.Set(pod.Labels)) || !podReady(pod) {
			continue
		}
		if target := targetPort(pod, port); target != 0 {
			addrs = append(addrs, net.JoinHostPort(pod.Status.PodIP, strconv.Itoa(int(target))))
		}
	}
	slices.Sort(addrs)
	return addrs
}

// podReady reports whether pod has an address and is Ready.
func podReady(pod *corev1.Pod) bool {
	if pod.DeletionTimestamp != nil || pod.Status.PodIP == "" || pod.Status.Phase != corev1.PodRunning {
		return false
	}
	return slices.ContainsFunc(pod.Status.Conditions, func(c corev1.PodCondition) bool {
		return c.Type == corev1.PodReady && c.Status == corev1.ConditionTrue
	})
}

// targetPort is the pod's port the Service port sends to, or 0 when a
// named targetPort names none of its containers' TCP ports.
func targetPort(pod *corev1.Pod, port corev1.ServicePort) int32 {
	switch tp := port.TargetPort; {
	case tp.Type == intstr.String:
		for _, c := range pod.Spec.Containers {
			for _, cp := range c.Ports {
				if cp.Name == tp.StrVal && (cp.Protocol == "" || cp.Protocol == corev1.ProtocolTCP) {
					return cp.ContainerPort
				}
			}
		}
		return 0
	case tp.IntVal != 0:
		return tp.IntVal
	default:
		return port.Port
	}
}
