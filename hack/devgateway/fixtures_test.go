package main

import (
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"
)

// Fixture builders shared by the table tests and the envtest suite.

const (
	testClass  = "roomkeeper-dev"
	publicHost = "games.localtest"
	wsPortName = "ws"
)

// newGateway is a Gateway of class with listeners.
func newGateway(ns, name, class string, listeners ...gatewayv1.Listener) *gatewayv1.Gateway {
	return &gatewayv1.Gateway{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec:       gatewayv1.GatewaySpec{GatewayClassName: gatewayv1.ObjectName(class), Listeners: listeners},
	}
}

// httpsListener is a TLS-terminating listener taking routes from the
// namespaces from says.
func httpsListener(name string, port int32, from gatewayv1.FromNamespaces) gatewayv1.Listener {
	return gatewayv1.Listener{
		Name:     gatewayv1.SectionName(name),
		Port:     port,
		Protocol: gatewayv1.HTTPSProtocolType,
		TLS: &gatewayv1.ListenerTLSConfig{
			Mode:            ptr.To(gatewayv1.TLSModeTerminate),
			CertificateRefs: []gatewayv1.SecretObjectReference{{Name: "devgateway-tls"}},
		},
		AllowedRoutes: &gatewayv1.AllowedRoutes{Namespaces: &gatewayv1.RouteNamespaces{From: ptr.To(from)}},
	}
}

// routeOption changes a test HTTPRoute.
type routeOption func(*gatewayv1.HTTPRoute)

// newRoute is an HTTPRoute with nothing but what opts add.
func newRoute(ns, name string, opts ...routeOption) *gatewayv1.HTTPRoute {
	r := &gatewayv1.HTTPRoute{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}
	for _, o := range opts {
		o(r)
	}
	return r
}

// operatorRoute is shaped like the routes the operator writes for a map:
// one hostname, /games/<room>/<map>/ws rewritten to /ws, one Service.
func operatorRoute(ns, name, gatewayNS, gateway, prefix, service string, opts ...routeOption) *gatewayv1.HTTPRoute {
	base := []routeOption{
		withParent(parentRef(gatewayNS, gateway, "")),
		withHostnames(publicHost),
		withRule(prefixRule(prefix, "/ws", service, 80)),
	}
	return newRoute(ns, name, append(base, opts...)...)
}

func withParent(ref gatewayv1.ParentReference) routeOption {
	return func(r *gatewayv1.HTTPRoute) { r.Spec.ParentRefs = append(r.Spec.ParentRefs, ref) }
}

func withHostnames(hosts ...string) routeOption {
	return func(r *gatewayv1.HTTPRoute) {
		for _, h := range hosts {
			r.Spec.Hostnames = append(r.Spec.Hostnames, gatewayv1.Hostname(h))
		}
	}
}

func withRule(rule gatewayv1.HTTPRouteRule) routeOption {
	return func(r *gatewayv1.HTTPRoute) { r.Spec.Rules = append(r.Spec.Rules, rule) }
}

func withCreated(t metav1.Time) routeOption {
	return func(r *gatewayv1.HTTPRoute) { r.CreationTimestamp = t }
}

// parentRef names a Gateway, and a listener unless section is "".
func parentRef(ns, name, section string) gatewayv1.ParentReference {
	ref := gatewayv1.ParentReference{
		Group: ptr.To[gatewayv1.Group](gatewayv1.GroupName),
		Kind:  ptr.To(kindGateway),
		Name:  gatewayv1.ObjectName(name),
	}
	if ns != "" {
		ref.Namespace = ptr.To(gatewayv1.Namespace(ns))
	}
	if section != "" {
		ref.SectionName = ptr.To(gatewayv1.SectionName(section))
	}
	return ref
}

// prefixRule sends a PathPrefix to service:port, the prefix replaced with
// replacement unless that is "".
func prefixRule(prefix, replacement, service string, port int32) gatewayv1.HTTPRouteRule {
	rule := gatewayv1.HTTPRouteRule{
		Matches: []gatewayv1.HTTPRouteMatch{{Path: &gatewayv1.HTTPPathMatch{
			Type: ptr.To(gatewayv1.PathMatchPathPrefix), Value: ptr.To(prefix)}}},
		BackendRefs: []gatewayv1.HTTPBackendRef{backendRef(service, port)},
	}
	if replacement != "" {
		rule.Filters = []gatewayv1.HTTPRouteFilter{{
			Type: gatewayv1.HTTPRouteFilterURLRewrite,
			URLRewrite: &gatewayv1.HTTPURLRewriteFilter{Path: &gatewayv1.HTTPPathModifier{
				Type: gatewayv1.PrefixMatchHTTPPathModifier, ReplacePrefixMatch: ptr.To(replacement)}},
		}}
	}
	return rule
}

// exactRule sends one path to service:port.
func exactRule(path, service string, port int32) gatewayv1.HTTPRouteRule {
	return gatewayv1.HTTPRouteRule{
		Matches: []gatewayv1.HTTPRouteMatch{{Path: &gatewayv1.HTTPPathMatch{
			Type: ptr.To(gatewayv1.PathMatchExact), Value: ptr.To(path)}}},
		BackendRefs: []gatewayv1.HTTPBackendRef{backendRef(service, port)},
	}
}

func backendRef(service string, port int32) gatewayv1.HTTPBackendRef {
	return gatewayv1.HTTPBackendRef{BackendRef: gatewayv1.BackendRef{BackendObjectReference: gatewayv1.BackendObjectReference{
		Name: gatewayv1.ObjectName(service), Port: ptr.To(port)}}}
}

// newService is a Service whose port 80 (named ws) sends to targetPort.
func newService(ns, name string, targetPort int32, selector map[string]string) *corev1.Service {
	return &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: corev1.ServiceSpec{
			Selector: selector,
			Ports: []corev1.ServicePort{{
				Name: wsPortName, Port: 80, Protocol: corev1.ProtocolTCP, TargetPort: intstr.FromInt32(targetPort)}},
		},
	}
}

// newEndpointSlice is service's EndpointSlice with one ready endpoint per
// address, on port (named ws).
func newEndpointSlice(ns, service string, port int32, addrs ...string) *discoveryv1.EndpointSlice {
	es := &discoveryv1.EndpointSlice{
		ObjectMeta: metav1.ObjectMeta{
			Namespace: ns, Name: service + "-1",
			Labels: map[string]string{discoveryv1.LabelServiceName: service},
		},
		AddressType: discoveryv1.AddressTypeIPv4,
		Ports:       []discoveryv1.EndpointPort{{Name: ptr.To(wsPortName), Port: ptr.To(port), Protocol: ptr.To(corev1.ProtocolTCP)}},
	}
	for _, a := range addrs {
		es.Endpoints = append(es.Endpoints, discoveryv1.Endpoint{
			Addresses: []string{a}, Conditions: discoveryv1.EndpointConditions{Ready: ptr.To(true)}})
	}
	return es
}
