package controllers

import (
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

// SetupWithManager registers both controllers with mgr.
func SetupWithManager(mgr ctrl.Manager, clk clock.PassiveClock) error {
	recorder := mgr.GetEventRecorder(recorderName)
	if err := (&GameRoomReconciler{Client: mgr.GetClient(), Recorder: recorder, Clock: clk}).SetupWithManager(mgr); err != nil {
		return err
	}
	return (&MapInstanceReconciler{Client: mgr.GetClient(), Recorder: recorder, Clock: clk}).SetupWithManager(mgr)
}
