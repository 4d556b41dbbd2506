package controllers

import (
	"fmt"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/rest"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"
)

// recorderName is the reporting controller of the operator's events.
const recorderName = "roomkeeper-manager"

// CacheOptions keep the manager's cache to the objects it created: a
// cluster's other Pods, Secrets, Services, HTTPRoutes, Leases and RBAC objects are
// never held in memory. gatewayAPI says whether the cluster serves
// HTTPRoutes (ServesGatewayAPI): a cache told about a kind the API server
// does not know fails to start.
// Nor are managed fields, which the operator never reads and which are a
// large part of every cached MapInstance and pod.
func CacheOptions(gatewayAPI bool) cache.Options {
	managed := labels.SelectorFromSet(ManagedSelector)
	byObject := map[client.Object]cache.ByObject{}
	owned := []client.Object{&corev1.Secret{}, &corev1.ServiceAccount{}, &rbacv1.Role{}, &rbacv1.RoleBinding{}, &corev1.Service{}, &corev1.ConfigMap{}, &coordinationv1.Lease{}}
	if gatewayAPI {
		owned = append(owned, &gatewayv1.HTTPRoute{})
	}
	for _, obj := range owned {
		byObject[obj] = cache.ByObject{Label: managed}
	}
	byObject[&corev1.Pod{}] = cache.ByObject{Label: managed, Transform: trimPod}
	return cache.Options{ByObject: byObject, DefaultTransform: cache.TransformStripManagedFields()}
}

// DefaultWorkers is how many objects of each kind reconcile at once unless
// told otherwise. A room's reconcile waits on several writes in a row (its
// Secret, then each MapInstance, then its status), so with 2 at once the
// rooms' MapInstances lagged behind a burst of new rooms on the 2-core test
// control plane; with 8 all pods existed 15-47% sooner, with less
// API-server work per pod (docs/benchmarks.md). A worker costs nothing
// while idle.
const DefaultWorkers = 8

// trimPod keeps of a cached pod what the operator reads: its metadata
// (without managed fields), its status, and of its spec the ServiceAccount
// and node. The containers (args, environment, probes) are most of a pod,
// and the operator compares a pod with what it would build by the
// input-hash annotation, never by its spec.
func trimPod(obj any) (any, error) {
	pod, ok := obj.(*corev1.Pod)
	if !ok {
		return obj, nil
	}
	pod.ManagedFields = nil
	pod.Spec = corev1.PodSpec{ServiceAccountName: pod.Spec.ServiceAccountName, NodeName: pod.Spec.NodeName}
	return pod, nil
}

// Options configure the controllers.
type Options struct {
	// Clock tells the time; restart backoff, quarantine and key rotation
	// are computed from it.
	Clock clock.PassiveClock
	// MaxRequeue, when set, caps timed requeues, for tests that move Clock
	// faster than real time.
	MaxRequeue time.Duration
	// RoomCountsDelay is how long a change of a map's player counts alone
	// waits before it is reported in its GameRoom's status (15 s when 0).
	RoomCountsDelay time.Duration
	// GameRoomWorkers and MapInstanceWorkers are how many objects of each
	// kind reconcile at once (DefaultWorkers when 0): reconciles wait on
	// the API server, so a few in flight keep it busy.
	GameRoomWorkers    int
	MapInstanceWorkers int
	// Pods are the manager's settings every map pod gets: the join API's
	// URL for portal destinations, the browser origins (BuildPod).
	Pods PodSettings
	// HostPortRange is where exposure HostPort takes node ports from
	// (DefaultHostPortRange when zero).
	HostPortRange PortRange
	// HostPortsPerNamespace, when positive, is the ports of the range one
	// namespace's maps may hold at once (--host-ports-per-namespace).
	HostPortsPerNamespace int
	// GatewayAPI says the cluster serves the Gateway API's HTTPRoutes:
	// learned once, by ServesGatewayAPI, for the cache (CacheOptions) and
	// the controllers alike. A cluster that installs it later needs the
	// manager restarted.
	GatewayAPI bool
}

// SetupWithManager registers both controllers with mgr.
func SetupWithManager(mgr ctrl.Manager, opts Options) error {
	if opts.Clock == nil {
		opts.Clock = clock.RealClock{}
	}
	if opts.GameRoomWorkers <= 0 {
		opts.GameRoomWorkers = DefaultWorkers
	}
	if opts.MapInstanceWorkers <= 0 {
		opts.MapInstanceWorkers = DefaultWorkers
	}
	recorder := mgr.GetEventRecorder(recorderName)
	watchInventory(mgr.GetClient())
	rooms := &GameRoomReconciler{Client: mgr.GetClient(), APIReader: mgr.GetAPIReader(), Recorder: recorder, Clock: opts.Clock,
		MaxRequeue: opts.MaxRequeue, CountsDelay: opts.RoomCountsDelay}
	if err := rooms.SetupWithManager(mgr, opts.GameRoomWorkers); err != nil {
		return err
	}
	maps := &MapInstanceReconciler{Client: mgr.GetClient(), APIReader: mgr.GetAPIReader(), Recorder: recorder, Clock: opts.Clock,
		MaxRequeue: opts.MaxRequeue, Pods: opts.Pods, HostPortRange: opts.HostPortRange,
		HostPortsPerNamespace: opts.HostPortsPerNamespace, GatewayAPI: opts.GatewayAPI}
	if err := maps.SetupWithManager(mgr, opts.MapInstanceWorkers); err != nil {
		return err
	}
	packs := &GameContentReconciler{Client: mgr.GetClient(), APIReader: mgr.GetAPIReader(), Recorder: recorder, Clock: opts.Clock}
	return packs.SetupWithManager(mgr)
}

// ServesGatewayAPI tells whether the cluster at cfg serves the Gateway
// API's HTTPRoutes (gateway.networking.k8s.io/v1), which exposure Gateway
// writes and the manager then caches and watches.
func ServesGatewayAPI(cfg *rest.Config) (bool, error) {
	dc, err := discovery.NewDiscoveryClientForConfig(cfg)
	if err != nil {
		return false, err
	}
	resources, err := dc.ServerResourcesForGroupVersion(gatewayv1.GroupVersion.String())
	switch {
	case apierrors.IsNotFound(err):
		return false, nil
	case err != nil:
		return false, fmt.Errorf("discovering the Gateway API: %w", err)
	}
	for _, r := range resources.APIResources {
		if r.Name == "httproutes" {
			return true, nil
		}
	}
	return false, nil
}
