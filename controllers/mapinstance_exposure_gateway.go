package controllers

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	gamev1 "github.com/roomkeeper/roomkeeper/api/v1"
	"github.com/roomkeeper/roomkeeper/internal/podenv"
)

// A map behind a Gateway gets a Service (its pod's game port) and an
// HTTPRoute, both named after the MapInstance and owned by it. The route
// matches the map's path on the room's hostname and rewrites it to the
// room server's /ws; the Gateway's implementation terminates TLS.

// gatewayAPIMissing is the Exposed message on a cluster without the
// Gateway API.
const gatewayAPIMissing = "The cluster does not serve the Gateway API (gateway.networking.k8s.io/v1 Gateway and HTTPRoute): " +
	"install its CRDs and an implementation, then restart the manager"

// attachRoute applies the map's Service and HTTPRoute and reports whether
// the Gateway's implementation has accepted the route; when it has not,
// whether the Gateway exists at all.
func (r *MapInstanceReconciler) attachRoute(ctx context.Context, mi *gamev1.MapInstance, gw *gamev1.GatewayExposure) (exposure, error) {
	if !r.GatewayAPI {
		return notExposed(gamev1.ReasonGatewayAPIMissing, gatewayAPIMissing), nil
	}
	if _, err := r.ensureOwned(ctx, mi, buildService(mi)); err != nil {
		return exposure{}, err
	}
	live, err := r.ensureOwned(ctx, mi, buildRoute(mi, gw))
	if err != nil {
		return exposure{}, err
	}
	gwNamespace := gatewayNamespace(mi, gw)
	accepted := routeAcceptance(live.(*gatewayv1.HTTPRoute), gwNamespace, gw.Name)
	if !accepted.waiting() {
		return accepted, nil // an accepted route has a Gateway: no need to ask
	}
	err = r.APIReader.Get(ctx, client.ObjectKey{Namespace: gwNamespace, Name: gw.Name}, &gatewayv1.Gateway{})
	switch {
	case apierrors.IsNotFound(err):
		return notExposed(gamev1.ReasonGatewayNotFound, "Gateway %s/%s does not exist", gwNamespace, gw.Name), nil
	case err != nil:
		return exposure{}, fmt.Errorf("reading Gateway %s/%s: %w", gwNamespace, gw.Name, err)
	}
	return accepted, nil
}

// ensureOwned makes want exist as the map's own object: created when
// missing, replaced when it was built from other inputs (the input-hash
// annotation, as for pods: the API server's defaults make a field-by-field
// comparison unreliable), left alone otherwise, so a settled map costs no
// writes. It returns the object as it is, status included.
func (r *MapInstanceReconciler) ensureOwned(ctx context.Context, mi *gamev1.MapInstance, want client.Object) (client.Object, error) {
	hash, err := hashJSON(want)
	if err != nil {
		return nil, err
	}
	want.SetAnnotations(map[string]string{gamev1.AnnotationInputHash: hash})
	kind := fmt.Sprintf("%T", want)
	live := want.DeepCopyObject().(client.Object)
	switch err := r.Get(ctx, client.ObjectKeyFromObject(want), live); {
	case apierrors.IsNotFound(err):
		if err := r.Create(ctx, want, client.FieldOwner(gamev1.FieldManagerOperator)); err != nil {
			return nil, fmt.Errorf("creating %s %s: %w", kind, want.GetName(), err)
		}
		return want, nil
	case err != nil:
		return nil, fmt.Errorf("reading %s %s: %w", kind, want.GetName(), err)
	case !metav1.IsControlledBy(live, mi):
		return nil, fmt.Errorf("%s %s exists and is not MapInstance %s's: delete it or rename the room", kind, want.GetName(), mi.Name)
	case live.GetAnnotations()[gamev1.AnnotationInputHash] == hash:
		return live, nil
	}
	want.SetResourceVersion(live.GetResourceVersion())
	if err := r.Update(ctx, want, client.FieldOwner(gamev1.FieldManagerOperator)); err != nil {
		return nil, fmt.Errorf("updating %s %s: %w", kind, want.GetName(), err)
	}
	return want, nil
}

// routeAcceptance reads what the Gateway's implementation said of the
// route.
func routeAcceptance(route *gatewayv1.HTTPRoute, gwNamespace, gwName string) exposure {
	for _, parent := range route.Status.Parents {
		ns := route.Namespace
		if parent.ParentRef.Namespace != nil {
			ns = string(*parent.ParentRef.Namespace)
		}
		if string(parent.ParentRef.Name) != gwName || ns != gwNamespace {
			continue
		}
		accepted := meta.FindStatusCondition(parent.Conditions, string(gatewayv1.RouteConditionAccepted))
		switch {
		case accepted == nil:
		case accepted.Status == metav1.ConditionTrue:
			return exposed(gamev1.ReasonRouteAttached, "HTTPRoute %s accepted by Gateway %s/%s", route.Name, gwNamespace, gwName)
		default:
			return notExposed(gamev1.ReasonRouteNotAccepted, "Gateway %s/%s refused HTTPRoute %s: %s: %s",
				gwNamespace, gwName, route.Name, accepted.Reason, accepted.Message)
		}
	}
	return exposure{status: metav1.ConditionUnknown, reason: gamev1.ReasonRoutePending,
		message: fmt.Sprintf("Waiting for Gateway %s/%s to accept HTTPRoute %s", gwNamespace, gwName, route.Name)}
}

func gatewayNamespace(mi *gamev1.MapInstance, gw *gamev1.GatewayExposure) string {
	if ns := gw.Namespace; ns != "" {
		return ns
	}
	return mi.Namespace
}

// removeRoute deletes the Service and HTTPRoute a map had behind a
// Gateway, and those of its pods' own routes (the serving pod's, a
// successor's), if the cache says it has them: a few cache lookups, so a
// map that never was behind a Gateway pays next to nothing per reconcile.
func (r *MapInstanceReconciler) removeRoute(ctx context.Context, mi *gamev1.MapInstance) error {
	names := []string{mi.Name, mi.Status.PodName}
	if h := mi.Status.Handover; h != nil {
		names = append(names, h.To)
	}
	for _, name := range names {
		if err := r.deleteRouteNamed(ctx, mi, name); err != nil {
			return err
		}
	}
	return nil
}

// deleteRouteNamed deletes the map's Service and HTTPRoute called name,
// if the cache has them.
func (r *MapInstanceReconciler) deleteRouteNamed(ctx context.Context, mi *gamev1.MapInstance, name string) error {
	if name == "" {
		return nil
	}
	key := client.ObjectKey{Namespace: mi.Namespace, Name: name}
	owned := []client.Object{&corev1.Service{}}
	if r.GatewayAPI {
		owned = append(owned, &gatewayv1.HTTPRoute{})
	}
	for _, obj := range owned {
		if err := r.Get(ctx, key, obj); err != nil {
			if apierrors.IsNotFound(err) {
				continue
			}
			return fmt.Errorf("reading %T %s: %w", obj, key, err)
		}
		if !metav1.IsControlledBy(obj, mi) {
			continue
		}
		if err := r.Delete(ctx, obj); err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("deleting %T %s: %w", obj, key, err)
		}
	}
	return nil
}

// buildService is the Service behind the map's own path: the game port of
// the pod serving the map (status.podName, labelPod), Ready or not
// (publishNotReadyAddresses). A gateway routes to Ready endpoints only,
// and a pod stops being Ready the moment it is deleted, though the pod a
// handover replaces admits players until its successor is Ready: the
// path leads to it until then, and to the successor once the status
// names it, not round-robin to both (docs/operations.md).
func buildService(mi *gamev1.MapInstance) *corev1.Service {
	svc := serviceFor(exposureMeta(mi), map[string]string{labelPod: podKey(mi.Status.PodName), labelManagedBy: managedBy})
	svc.Spec.PublishNotReadyAddresses = true
	return svc
}

// routeMapPath labels the pod the status names now if an earlier
// operator made it without labelPod, and, when moved (the status names
// another pod than attachRoute pointed the Service at earlier in this
// reconcile), points the Service behind the map's own path at it.
func (r *MapInstanceReconciler) routeMapPath(ctx context.Context, mi *gamev1.MapInstance, pod *corev1.Pod, moved bool) error {
	if pod != nil && pod.Name == mi.Status.PodName && pod.Labels[labelPod] != podKey(pod.Name) {
		patch := client.MergeFrom(pod.DeepCopy())
		if pod.Labels == nil {
			pod.Labels = map[string]string{}
		}
		pod.Labels[labelPod] = podKey(pod.Name)
		if err := r.Patch(ctx, pod, patch, client.FieldOwner(gamev1.FieldManagerOperator)); client.IgnoreNotFound(err) != nil {
			return fmt.Errorf("labelling pod %s: %w", pod.Name, err)
		}
	}
	if !moved {
		return nil
	}
	_, err := r.ensureOwned(ctx, mi, buildService(mi))
	return err
}

// serviceFor is a ClusterIP Service of the game port of the pods selector
// selects.
func serviceFor(object metav1.ObjectMeta, selector map[string]string) *corev1.Service {
	return &corev1.Service{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Service"},
		ObjectMeta: object,
		Spec: corev1.ServiceSpec{
			Selector: selector,
			Ports: []corev1.ServicePort{{Name: gamePortName, Port: podenv.GamePort, Protocol: corev1.ProtocolTCP,
				TargetPort: intstr.FromString(gamePortName)}},
		},
	}
}

// buildRoute is the map's HTTPRoute on the room's Gateway.
func buildRoute(mi *gamev1.MapInstance, gw *gamev1.GatewayExposure) *gatewayv1.HTTPRoute {
	return routeTo(exposureMeta(mi), mi, gw, gatewayPath(mi))
}

// routeTo is an HTTPRoute on the room's Gateway that sends path, on the
// room's hostname, to the room server's /ws behind the Service named
// like the route.
func routeTo(object metav1.ObjectMeta, mi *gamev1.MapInstance, gw *gamev1.GatewayExposure, path string) *gatewayv1.HTTPRoute {
	parent := gatewayv1.ParentReference{Name: gatewayv1.ObjectName(gw.Name),
		Namespace: ptr.To(gatewayv1.Namespace(gatewayNamespace(mi, gw)))}
	if gw.SectionName != "" {
		parent.SectionName = ptr.To(gatewayv1.SectionName(gw.SectionName))
	}
	return &gatewayv1.HTTPRoute{
		TypeMeta:   metav1.TypeMeta{APIVersion: gatewayv1.GroupVersion.String(), Kind: "HTTPRoute"},
		ObjectMeta: object,
		Spec: gatewayv1.HTTPRouteSpec{
			CommonRouteSpec: gatewayv1.CommonRouteSpec{ParentRefs: []gatewayv1.ParentReference{parent}},
			Hostnames:       []gatewayv1.Hostname{gatewayv1.Hostname(gw.Hostname)},
			Rules: []gatewayv1.HTTPRouteRule{{
				Matches: []gatewayv1.HTTPRouteMatch{{Path: &gatewayv1.HTTPPathMatch{
					Type: ptr.To(gatewayv1.PathMatchPathPrefix), Value: ptr.To(path)}}},
				Filters: []gatewayv1.HTTPRouteFilter{{Type: gatewayv1.HTTPRouteFilterURLRewrite,
					URLRewrite: &gatewayv1.HTTPURLRewriteFilter{Path: &gatewayv1.HTTPPathModifier{
						Type: gatewayv1.PrefixMatchHTTPPathModifier, ReplacePrefixMatch: ptr.To(podenv.GamePath)}}}},
				BackendRefs: []gatewayv1.HTTPBackendRef{{BackendRef: gatewayv1.BackendRef{BackendObjectReference: gatewayv1.BackendObjectReference{
					Name: gatewayv1.ObjectName(object.Name), Port: ptr.To(gatewayv1.PortNumber(podenv.GamePort))}}}},
			}},
		},
	}
}

// exposureMeta names what exposes a map: the MapInstance's name, its
// labels, and the MapInstance as controller owner.
func exposureMeta(mi *gamev1.MapInstance) metav1.ObjectMeta {
	return metav1.ObjectMeta{
		Name: mi.Name, Namespace: mi.Namespace,
		Labels:          mapLabels(mi.Spec.RoomName, mi.Spec.MapName, mi.Name),
		OwnerReferences: []metav1.OwnerReference{*metav1.NewControllerRef(mi, gamev1.GroupVersion.WithKind("MapInstance"))},
	}
}

// A handover behind a Gateway gives the pod taking over a route of its
// own: <the map's path without /ws>/<pod>/ws on the room's hostname,
// through a Service that selects that pod alone (labelPod). The old pod
// hands its players over to that URL while the map's own path routes to
// whichever of the two is Ready. Both objects are named after the pod and
// carry labelPod; they go when the pod stops serving the map: at the end
// of the next handover or when this one is abandoned (deletePodRoute), or
// with the Gateway (removeRoute).

// labelPod names, on a successor pod and on its Service and HTTPRoute, the
// pod they reach (podKey).
const labelPod = "game.roomkeeper.dev/pod"

// podKey is what stands for a pod in labelPod and names its own route's
// Service and HTTPRoute: its name, or, past the 63 characters a label
// value and a Service name may have (a successor, <map instance>-<16 hex>,
// of a map instance named over 46 characters), the name's first 46 and a
// hash of the whole.
func podKey(pod string) string {
	if len(pod) <= validation.DNS1035LabelMaxLength {
		return pod
	}
	sum := sha256.Sum256([]byte(pod))
	return strings.TrimRight(pod[:46], "-") + "-" + hex.EncodeToString(sum[:8])
}

// attachSuccessorRoute applies the Service and HTTPRoute of the pod that
// takes the map over and returns its wss:// URL once the Gateway's
// implementation has accepted the route ("" until then).
func (r *MapInstanceReconciler) attachSuccessorRoute(ctx context.Context, mi *gamev1.MapInstance, gw *gamev1.GatewayExposure, pod string) (string, error) {
	object := exposureMeta(mi)
	object.Name = podKey(pod)
	object.Labels[labelPod] = podKey(pod)
	if _, err := r.ensureOwned(ctx, mi, serviceFor(object, map[string]string{labelPod: podKey(pod), labelManagedBy: managedBy})); err != nil {
		return "", err
	}
	path := successorPath(mi, pod)
	live, err := r.ensureOwned(ctx, mi, routeTo(object, mi, gw, path))
	if err != nil {
		return "", err
	}
	if routeAcceptance(live.(*gatewayv1.HTTPRoute), gatewayNamespace(mi, gw), gw.Name).status != metav1.ConditionTrue {
		return "", nil
	}
	return gatewayURL(gw, path), nil
}

// deletePodRoute deletes the Service and HTTPRoute of pod's own route, if
// it has one. The map's first pod, named after the MapInstance, never has
// one: the objects of that name are the map's own.
func (r *MapInstanceReconciler) deletePodRoute(ctx context.Context, mi *gamev1.MapInstance, pod string) error {
	if pod == mi.Name {
		return nil
	}
	return r.deleteRouteNamed(ctx, mi, podKey(pod))
}

// successorPath is the path of pod's own route.
func successorPath(mi *gamev1.MapInstance, pod string) string {
	return strings.TrimSuffix(gatewayPath(mi), podenv.GamePath) + "/" + pod + podenv.GamePath
}
