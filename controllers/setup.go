package controllers

import (
	"time"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// recorderName is the reporting controller of the operator's events.
const recorderName = "roomkeeper-manager"

// CacheOptions keep the manager's cache to the objects it created: a
// cluster's other Pods, Secrets and RBAC objects are never held in memory.
func CacheOptions() cache.Options {
	managed := labels.SelectorFromSet(ManagedSelector)
	byObject := map[client.Object]cache.ByObject{}
	for _, obj := range []client.Object{&corev1.Pod{}, &corev1.Secret{}, &corev1.ServiceAccount{}, &rbacv1.Role{}, &rbacv1.RoleBinding{}} {
		byObject[obj] = cache.ByObject{Label: managed}
	}
	return cache.Options{ByObject: byObject}
}

// Options configure the controllers.
type Options struct {
	// Clock tells the time; restart backoff, quarantine and key rotation
	// are computed from it.
	Clock clock.PassiveClock
	// MaxRequeue, when set, caps timed requeues, for tests that move Clock
	// faster than real time.
	MaxRequeue time.Duration
	// Workers is how many objects of each kind reconcile at once (default 4):
	// reconciles wait on the API server, so a few in flight keep it busy.
	Workers int
	// JoinAPIURL is the URL map pods reach the join API at, for portal
	// destinations (MapInstanceReconciler.JoinAPIURL).
	JoinAPIURL string
}

// SetupWithManager registers both controllers with mgr.
func SetupWithManager(mgr ctrl.Manager, opts Options) error {
	if opts.Clock == nil {
		opts.Clock = clock.RealClock{}
	}
	if opts.Workers <= 0 {
		opts.Workers = 4
	}
	recorder := mgr.GetEventRecorder(recorderName)
	watchQuarantined(mgr.GetClient())
	rooms := &GameRoomReconciler{Client: mgr.GetClient(), APIReader: mgr.GetAPIReader(), Recorder: recorder, Clock: opts.Clock,
		MaxRequeue: opts.MaxRequeue}
	if err := rooms.SetupWithManager(mgr, opts.Workers); err != nil {
		return err
	}
	maps := &MapInstanceReconciler{Client: mgr.GetClient(), APIReader: mgr.GetAPIReader(), Recorder: recorder, Clock: opts.Clock,
		MaxRequeue: opts.MaxRequeue, JoinAPIURL: opts.JoinAPIURL}
	return maps.SetupWithManager(mgr, opts.Workers)
}
