package main

import (
	"cmp"
	"fmt"
	"slices"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"
)

// controllerName is the gateway's name in GatewayClass spec.controllerName
// and HTTPRoute status.parents[].controllerName.
const controllerName gatewayv1.GatewayController = "roomkeeper.dev/devgateway"

// Kinds the gateway reads and writes, as Gateway API references name them.
const (
	kindGatewayClass gatewayv1.Kind = "GatewayClass"
	kindGateway      gatewayv1.Kind = "Gateway"
	kindHTTPRoute    gatewayv1.Kind = "HTTPRoute"
	kindService      gatewayv1.Kind = "Service"
)

// snapshot is the part of the cluster the gateway acts on, read from the
// cache in one go.
type snapshot struct {
	classes  []gatewayv1.GatewayClass
	gateways []gatewayv1.Gateway
	routes   []gatewayv1.HTTPRoute
	services []corev1.Service
	slices   []discoveryv1.EndpointSlice
	pods     []corev1.Pod
}

// options are the facts about this gateway that a plan depends on.
type options struct {
	className string                         // Gateways of this class are served
	address   gatewayv1.GatewayStatusAddress // where they are served
}

// plan is what the gateway makes of a snapshot: the routes to serve and
// the status changes to write.
type plan struct {
	table   *routeTable
	updates []statusUpdate
}

// statusUpdate is one object whose status should change from before's to
// after's.
type statusUpdate struct {
	kind          gatewayv1.Kind
	before, after client.Object
	shared        bool // other controllers write parts of this status too
}

// makePlan computes the routing table and every status the gateway owns
// from s. It is pure: now stamps new condition transitions.
func makePlan(s snapshot, o options, now metav1.Time) plan {
	gateways := map[types.NamespacedName]*gatewayv1.Gateway{}
	for i := range s.gateways {
		gateways[client.ObjectKeyFromObject(&s.gateways[i])] = &s.gateways[i]
	}
	backends := newBackendIndex(s.services, s.slices, s.pods)
	attached := map[listenerKey]int32{}
	var p plan
	var entries []tableEntry
	for _, route := range sortedRoutes(s.routes) {
		rules, resolved := backends.resolve(route)
		parents, accepted := routeParents(route, gateways, o.className, resolved, now)
		for l := range accepted {
			attached[l]++
		}
		if len(accepted) > 0 {
			entries = append(entries, routeEntries(route, rules)...)
		}
		after := route.DeepCopy()
		after.Status.Parents = parents
		p.add(statusUpdate{kind: kindHTTPRoute, before: route, after: after, shared: true}, route.Status, after.Status)
	}
	p.table = newRouteTable(entries)
	for _, gw := range s.gateways {
		if string(gw.Spec.GatewayClassName) != o.className {
			continue
		}
		after := gw.DeepCopy()
		after.Status = gatewayStatus(&gw, o.address, attached, now)
		p.add(statusUpdate{kind: kindGateway, before: &gw, after: after}, gw.Status, after.Status)
	}
	for _, class := range s.classes {
		if class.Name != o.className || class.Spec.ControllerName != controllerName {
			continue
		}
		after := class.DeepCopy()
		meta.SetStatusCondition(&after.Status.Conditions, metav1.Condition{
			Type:               string(gatewayv1.GatewayClassConditionStatusAccepted),
			Status:             metav1.ConditionTrue,
			Reason:             string(gatewayv1.GatewayClassReasonAccepted),
			Message:            "Served by roomkeeper devgateway",
			ObservedGeneration: class.Generation,
			LastTransitionTime: now,
		})
		p.add(statusUpdate{kind: kindGatewayClass, before: &class, after: after}, class.Status, after.Status)
	}
	return p
}

// add records u when the status changed from oldStatus to newStatus.
func (p *plan) add(u statusUpdate, oldStatus, newStatus any) {
	if !equality.Semantic.DeepEqual(oldStatus, newStatus) {
		p.updates = append(p.updates, u)
	}
}

// sortedRoutes orders routes by Gateway API precedence among equals: the
// oldest first, then by namespace and name.
func sortedRoutes(routes []gatewayv1.HTTPRoute) []*gatewayv1.HTTPRoute {
	out := make([]*gatewayv1.HTTPRoute, len(routes))
	for i := range routes {
		out[i] = &routes[i]
	}
	slices.SortFunc(out, func(a, b *gatewayv1.HTTPRoute) int {
		return cmp.Or(
			a.CreationTimestamp.Compare(b.CreationTimestamp.Time),
			cmp.Compare(a.Namespace, b.Namespace),
			cmp.Compare(a.Name, b.Name))
	})
	return out
}

// listenerKey names one listener of one Gateway.
type listenerKey struct {
	gateway  types.NamespacedName
	listener gatewayv1.SectionName
}

// routeParents returns route's status.parents: the entries of other
// controllers as they are, then one entry per parentRef to a served or
// missing Gateway. accepted holds the listeners the route attached to.
func routeParents(route *gatewayv1.HTTPRoute, gateways map[types.NamespacedName]*gatewayv1.Gateway,
	className string, resolved metav1.Condition, now metav1.Time) (parents []gatewayv1.RouteParentStatus, accepted map[listenerKey]bool) {
	accepted = map[listenerKey]bool{}
	var ours []gatewayv1.RouteParentStatus
	for _, ref := range route.Spec.ParentRefs {
		if !refersTo(ref.Group, ref.Kind, gatewayv1.GroupName, kindGateway) {
			continue
		}
		key := types.NamespacedName{Namespace: route.Namespace, Name: string(ref.Name)}
		if ref.Namespace != nil {
			key.Namespace = string(*ref.Namespace)
		}
		gw := gateways[key]
		if gw != nil && string(gw.Spec.GatewayClassName) != className {
			continue // another implementation's Gateway
		}
		acceptance := metav1.Condition{
			Type:    string(gatewayv1.RouteConditionAccepted),
			Status:  metav1.ConditionFalse,
			Reason:  string(gatewayv1.RouteReasonNoMatchingParent),
			Message: fmt.Sprintf("Gateway %s does not exist", key),
		}
		if gw != nil {
			listeners, reason, message := attach(gw, ref, route.Namespace)
			acceptance.Reason, acceptance.Message = string(reason), message
			if problem := unsupported(route); len(listeners) > 0 && problem != "" {
				acceptance.Reason, acceptance.Message = string(gatewayv1.RouteReasonUnsupportedValue), problem
			} else if len(listeners) > 0 {
				acceptance.Status = metav1.ConditionTrue
				for _, l := range listeners {
					accepted[listenerKey{gateway: key, listener: l}] = true
				}
			}
		}
		entry := gatewayv1.RouteParentStatus{ParentRef: ref, ControllerName: controllerName}
		if old := parentStatus(route.Status.Parents, ref); old != nil {
			entry.Conditions = slices.Clone(old.Conditions)
		}
		for _, c := range []metav1.Condition{acceptance, resolved} {
			c.ObservedGeneration, c.LastTransitionTime = route.Generation, now
			meta.SetStatusCondition(&entry.Conditions, c)
		}
		ours = append(ours, entry)
	}
	for _, p := range route.Status.Parents {
		if p.ControllerName != controllerName {
			parents = append(parents, p)
		}
	}
	return append(parents, ours...), accepted
}

// parentStatus is this controller's entry for ref in parents, or nil.
func parentStatus(parents []gatewayv1.RouteParentStatus, ref gatewayv1.ParentReference) *gatewayv1.RouteParentStatus {
	for i := range parents {
		if parents[i].ControllerName == controllerName && equality.Semantic.DeepEqual(parents[i].ParentRef, ref) {
			return &parents[i]
		}
	}
	return nil
}

// attach returns the listeners of gw that take a route from namespace ns
// through ref, or why none does.
func attach(gw *gatewayv1.Gateway, ref gatewayv1.ParentReference, ns string) ([]gatewayv1.SectionName, gatewayv1.RouteConditionReason, string) {
	var named, admitted []gatewayv1.SectionName
	for _, l := range gw.Spec.Listeners {
		if (ref.SectionName != nil && *ref.SectionName != l.Name) || (ref.Port != nil && *ref.Port != l.Port) {
			continue
		}
		named = append(named, l.Name)
		if admits(gw, l, ns) {
			admitted = append(admitted, l.Name)
		}
	}
	switch {
	case len(named) == 0:
		return nil, gatewayv1.RouteReasonNoMatchingParent,
			fmt.Sprintf("Gateway %s/%s has no listener matching the parentRef's sectionName and port", gw.Namespace, gw.Name)
	case len(admitted) == 0:
		return nil, gatewayv1.RouteReasonNotAllowedByListeners,
			fmt.Sprintf("No listener of Gateway %s/%s admits HTTPRoutes from namespace %s", gw.Namespace, gw.Name, ns)
	}
	return admitted, gatewayv1.RouteReasonAccepted, "Attached to Gateway " + gw.Namespace + "/" + gw.Name
}

// admits reports whether listener l of gw takes HTTPRoutes from namespace
// ns. Of allowedRoutes.namespaces.from it implements Same and All; Selector
// admits nothing.
func admits(gw *gatewayv1.Gateway, l gatewayv1.Listener, ns string) bool {
	if l.Protocol != gatewayv1.HTTPProtocolType && l.Protocol != gatewayv1.HTTPSProtocolType {
		return false
	}
	from := gatewayv1.NamespacesFromSame
	if ar := l.AllowedRoutes; ar != nil {
		if ar.Namespaces != nil && ar.Namespaces.From != nil {
			from = *ar.Namespaces.From
		}
		if len(ar.Kinds) > 0 && !slices.ContainsFunc(ar.Kinds, func(k gatewayv1.RouteGroupKind) bool {
			return refersTo(k.Group, &k.Kind, gatewayv1.GroupName, kindHTTPRoute)
		}) {
			return false
		}
	}
	switch from {
	case gatewayv1.NamespacesFromAll:
		return true
	case gatewayv1.NamespacesFromSame:
		return ns == gw.Namespace
	default:
		return false
	}
}

// refersTo reports whether a reference's group and kind, defaulted, are
// group and kind.
func refersTo(g *gatewayv1.Group, k *gatewayv1.Kind, group string, kind gatewayv1.Kind) bool {
	return (g == nil || string(*g) == group) && (k == nil || *k == kind)
}

// unsupported names the first feature route uses that the gateway does not
// implement, or is "". Such a route is not accepted.
func unsupported(route *gatewayv1.HTTPRoute) string {
	for i, rule := range route.Spec.Rules {
		prefixOnly := true
		for _, m := range rule.Matches {
			if len(m.Headers) > 0 || len(m.QueryParams) > 0 || m.Method != nil {
				return fmt.Sprintf("rules[%d]: devgateway matches only on paths, not headers, query parameters or methods", i)
			}
			if m.Path != nil && m.Path.Type != nil {
				switch *m.Path.Type {
				case gatewayv1.PathMatchPathPrefix:
				case gatewayv1.PathMatchExact:
					prefixOnly = false
				default:
					return fmt.Sprintf("rules[%d]: devgateway does not support path match type %s", i, *m.Path.Type)
				}
			}
		}
		for _, f := range rule.Filters {
			if f.Type != gatewayv1.HTTPRouteFilterURLRewrite || f.URLRewrite == nil {
				return fmt.Sprintf("rules[%d]: devgateway supports only the URLRewrite filter, not %s", i, f.Type)
			}
			if path := f.URLRewrite.Path; path != nil {
				switch path.Type {
				case gatewayv1.FullPathHTTPPathModifier:
				case gatewayv1.PrefixMatchHTTPPathModifier:
					if !prefixOnly {
						return fmt.Sprintf("rules[%d]: ReplacePrefixMatch needs PathPrefix matches", i)
					}
				default:
					return fmt.Sprintf("rules[%d]: devgateway does not support path modifier %s", i, path.Type)
				}
			}
		}
		for _, b := range rule.BackendRefs {
			if len(b.Filters) > 0 {
				return fmt.Sprintf("rules[%d]: devgateway does not support backendRef filters", i)
			}
		}
	}
	return ""
}

// gatewayStatus is a served Gateway's status: Accepted and Programmed at
// address, and each listener with the routes attached to it.
func gatewayStatus(gw *gatewayv1.Gateway, address gatewayv1.GatewayStatusAddress, attached map[listenerKey]int32, now metav1.Time) gatewayv1.GatewayStatus {
	status := gatewayv1.GatewayStatus{
		Addresses:  []gatewayv1.GatewayStatusAddress{address},
		Conditions: slices.Clone(gw.Status.Conditions),
	}
	cond := func(t string, ok bool, reason, falseReason, message string) metav1.Condition {
		return condition(t, ok, reason, falseReason, message, gw.Generation, now)
	}
	served := "Served by roomkeeper devgateway on " + address.Value
	meta.SetStatusCondition(&status.Conditions, cond(string(gatewayv1.GatewayConditionAccepted), true,
		string(gatewayv1.GatewayReasonAccepted), "", served))
	meta.SetStatusCondition(&status.Conditions, cond(string(gatewayv1.GatewayConditionProgrammed), true,
		string(gatewayv1.GatewayReasonProgrammed), "", served))
	key := client.ObjectKeyFromObject(gw)
	for _, l := range gw.Spec.Listeners {
		ls := gatewayv1.ListenerStatus{Name: l.Name, AttachedRoutes: attached[listenerKey{gateway: key, listener: l.Name}]}
		for _, old := range gw.Status.Listeners {
			if old.Name == l.Name {
				ls.Conditions = slices.Clone(old.Conditions)
			}
		}
		http := l.Protocol == gatewayv1.HTTPProtocolType || l.Protocol == gatewayv1.HTTPSProtocolType
		message := served
		if http {
			ls.SupportedKinds = []gatewayv1.RouteGroupKind{{Group: ptr.To[gatewayv1.Group](gatewayv1.GroupName), Kind: kindHTTPRoute}}
		} else {
			message = "devgateway serves only HTTP and HTTPS listeners"
		}
		for _, c := range []metav1.Condition{
			cond(string(gatewayv1.ListenerConditionAccepted), http,
				string(gatewayv1.ListenerReasonAccepted), string(gatewayv1.ListenerReasonUnsupportedProtocol), message),
			cond(string(gatewayv1.ListenerConditionProgrammed), http,
				string(gatewayv1.ListenerReasonProgrammed), string(gatewayv1.ListenerReasonInvalid), message),
			cond(string(gatewayv1.ListenerConditionResolvedRefs), true,
				string(gatewayv1.ListenerReasonResolvedRefs), "", "devgateway serves its own certificate; certificateRefs are not read"),
		} {
			meta.SetStatusCondition(&ls.Conditions, c)
		}
		status.Listeners = append(status.Listeners, ls)
	}
	return status
}

// condition is a condition of type t, True with reason when ok and False
// with falseReason otherwise.
func condition(t string, ok bool, reason, falseReason, message string, generation int64, now metav1.Time) metav1.Condition {
	c := metav1.Condition{Type: t, Status: metav1.ConditionTrue, Reason: reason, Message: message,
		ObservedGeneration: generation, LastTransitionTime: now}
	if !ok {
		c.Status, c.Reason = metav1.ConditionFalse, falseReason
	}
	return c
}
