package controllers

import (
	"context"
	"fmt"
	"net"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	gamev1 "github.com/roomkeeper/roomkeeper/api/v1"
	"github.com/roomkeeper/roomkeeper/internal/podenv"
)

// +kubebuilder:rbac:groups=core,resources=services,verbs=get;list;watch;create;update;delete
// +kubebuilder:rbac:groups=core,resources=nodes,verbs=get;list;watch
// +kubebuilder:rbac:groups=gateway.networking.k8s.io,resources=httproutes,verbs=get;list;watch;create;update;delete
// +kubebuilder:rbac:groups=gateway.networking.k8s.io,resources=gateways,verbs=get

// exposureRetry is how soon a map whose exposure waits on something
// outside the operator (a Gateway to appear, a route to be accepted, a
// host port to be freed) is looked at again.
const exposureRetry = 10 * time.Second

// exposure is what preparing a map's exposure found: its Exposed
// condition, and whether the map must get no pod until it changes.
type exposure struct {
	status          metav1.ConditionStatus
	reason, message string
	holdPod         bool
}

func exposed(reason, format string, args ...any) exposure {
	return exposure{status: metav1.ConditionTrue, reason: reason, message: fmt.Sprintf(format, args...)}
}

func notExposed(reason, format string, args ...any) exposure {
	return exposure{status: metav1.ConditionFalse, reason: reason, message: fmt.Sprintf(format, args...)}
}

// waiting says whether the map should be looked at again soon.
func (e exposure) waiting() bool { return e.status != metav1.ConditionTrue }

// prepareExposure puts in place what the map's pod and endpoint need
// before the pod is built: a host port (written to the status first, so
// that no pod ever uses a port the statuses do not record), or a Service
// and an HTTPRoute. What another exposure type left behind is removed.
func (r *MapInstanceReconciler) prepareExposure(ctx context.Context, before, mi *gamev1.MapInstance, x *gamev1.Exposure) (exposure, error) {
	if x.Type != gamev1.ExposureHostPort {
		r.ports().release(client.ObjectKeyFromObject(mi))
		r.ports().release(handoverPortKey(client.ObjectKeyFromObject(mi)))
		mi.Status.HostPort = 0
		if mi.Status.Handover != nil {
			mi.Status.Handover.HostPort = 0
		}
	}
	if x.Type != gamev1.ExposureGateway {
		if err := r.removeRoute(ctx, mi); err != nil {
			return exposure{}, err
		}
	}
	switch x.Type {
	case gamev1.ExposureHostPort:
		return r.assignHostPort(ctx, before, mi)
	case gamev1.ExposureGateway:
		return r.attachRoute(ctx, mi, x.Gateway)
	default:
		return exposed(gamev1.ReasonDirect, "Reachable at the pod's address, inside the pod network"), nil
	}
}

func (r *MapInstanceReconciler) assignHostPort(ctx context.Context, before, mi *gamev1.MapInstance) (exposure, error) {
	port, ok, err := r.ports().assign(client.ObjectKeyFromObject(mi), mi.Status.HostPort)
	if err != nil {
		return exposure{}, err
	}
	if !ok {
		mi.Status.HostPort = 0
		e := notExposed(gamev1.ReasonHostPortsExhausted,
			"Every port of the manager's --host-port-range %s is held by another MapInstance", r.ports().portRange)
		if r.ports().shareUsed(mi.Namespace) {
			e = notExposed(gamev1.ReasonHostPortShareUsed,
				"Namespace %s holds its share of the manager's --host-port-range (--host-ports-per-namespace %d)", mi.Namespace, r.ports().perNamespace)
		}
		e.holdPod = true
		return e, nil
	}
	if mi.Status.HostPort != port {
		mi.Status.HostPort = port
		if err := r.writeStatusNow(ctx, before, mi); err != nil {
			return exposure{}, fmt.Errorf("recording host port %d: %w", port, err)
		}
	}
	return exposed(gamev1.ReasonHostPortAssigned, "Node port %d", port), nil
}

// publishEndpoint turns the pod's own endpoint, which observePod set,
// into the one players use, and sets the Exposed condition.
func (r *MapInstanceReconciler) publishEndpoint(ctx context.Context, mi *gamev1.MapInstance, x *gamev1.Exposure, pod *corev1.Pod, e exposure, now metav1.Time) error {
	if mi.Status.Endpoint != "" {
		switch {
		case e.status != metav1.ConditionTrue:
			mi.Status.Endpoint = ""
		case x.Type == gamev1.ExposureHostPort:
			address, err := r.nodeAddress(ctx, pod.Spec.NodeName)
			if err != nil {
				return err
			}
			if address == "" {
				mi.Status.Endpoint = ""
				e = notExposed(gamev1.ReasonNodeAddressUnknown, "Node %q has no ExternalIP or InternalIP address", pod.Spec.NodeName)
				break
			}
			mi.Status.Endpoint = hostPortEndpoint(address, mi.Status.HostPort)
		case x.Type == gamev1.ExposureGateway:
			mi.Status.Endpoint = gatewayEndpoint(mi, x.Gateway)
		}
	}
	setCondition(&mi.Status.Conditions, gamev1.ConditionExposed, e.status, e.reason, e.message, mi.Generation, now)
	return nil
}

// hostPortEndpoint is the endpoint of a pod at port of a node's address.
func hostPortEndpoint(address string, port int32) string {
	return "ws://" + net.JoinHostPort(address, strconv.Itoa(int(port))) + podenv.GamePath
}

// nodeAddress is the address players reach a node at: its ExternalIP, or
// its InternalIP when it has none; "" when it has neither.
func (r *MapInstanceReconciler) nodeAddress(ctx context.Context, nodeName string) (string, error) {
	node := &corev1.Node{}
	if err := r.Get(ctx, client.ObjectKey{Name: nodeName}, node); err != nil {
		if apierrors.IsNotFound(err) {
			return "", nil
		}
		return "", fmt.Errorf("reading node %s: %w", nodeName, err)
	}
	for _, want := range []corev1.NodeAddressType{corev1.NodeExternalIP, corev1.NodeInternalIP} {
		for _, a := range node.Status.Addresses {
			if a.Type == want && a.Address != "" {
				return a.Address, nil
			}
		}
	}
	return "", nil
}

// gatewayPath is the path players use for a map behind a Gateway:
// /<namespace>/<room>/<map>/ws, and for a party's copy of an instanced map
// or a shared map's shard /<namespace>/<room>/<map>/<instance suffix>/ws
// (.../town/s2/ws).
func gatewayPath(mi *gamev1.MapInstance) string {
	parts := []string{mi.Namespace, mi.Spec.RoomName, mi.Spec.MapName}
	if suffix, ok := strings.CutPrefix(mi.Name, gamev1.MapInstanceName(mi.Spec.RoomName, mi.Spec.MapName)+"-"); ok {
		parts = append(parts, suffix)
	}
	return "/" + strings.Join(parts, "/") + podenv.GamePath
}

// gatewayEndpoint is the wss:// URL of a map behind its Gateway.
func gatewayEndpoint(mi *gamev1.MapInstance, gw *gamev1.GatewayExposure) string {
	return gatewayURL(gw, gatewayPath(mi))
}

// gatewayURL is the wss:// URL of path on the Gateway's hostname.
func gatewayURL(gw *gamev1.GatewayExposure, path string) string {
	host := gw.Hostname
	if gw.Port != 0 && gw.Port != 443 {
		host = net.JoinHostPort(host, strconv.Itoa(int(gw.Port)))
	}
	return "wss://" + host + path
}
