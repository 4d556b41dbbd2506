package controllers

import (
	"context"
	"errors"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/events"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	gamev1 "github.com/roomkeeper/roomkeeper/api/v1"
)

// MapInstanceReconciler runs one room-server pod per MapInstance and reports
// the pod's state in the MapInstance's status.
type MapInstanceReconciler struct {
	client.Client
	Recorder events.EventRecorder
	Clock    clock.PassiveClock
}

// +kubebuilder:rbac:groups=game.roomkeeper.dev,resources=mapinstances,verbs=get;list;watch
// +kubebuilder:rbac:groups=game.roomkeeper.dev,resources=mapinstances/status,verbs=get;update;patch
// +kubebuilder:rbac:groups=core,resources=pods,verbs=get;list;watch;create;delete
// +kubebuilder:rbac:groups=events.k8s.io,resources=events,verbs=create;patch

// Reconcile keeps one MapInstance's pod current and reports on it.
func (r *MapInstanceReconciler) Reconcile(ctx context.Context, req ctrl.Request) (_ ctrl.Result, reterr error) {
	mi := &gamev1.MapInstance{}
	if err := r.Get(ctx, req.NamespacedName, mi); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if !mi.DeletionTimestamp.IsZero() {
		return ctrl.Result{}, nil // the pod goes with its owner
	}
	before := mi.DeepCopy()
	defer func() {
		reterr = errors.Join(reterr, patchStatus(ctx, r.Client, before, mi, before.Status, mi.Status))
	}()

	desired, err := buildPod(mi)
	if err != nil {
		return ctrl.Result{}, reconcile.TerminalError(err)
	}
	pod, err := r.currentPod(ctx, mi)
	if err != nil {
		return ctrl.Result{}, err
	}
	pod, err = r.syncPod(ctx, mi, desired, pod)
	if err != nil {
		return ctrl.Result{}, err
	}
	mi.Status = observePod(mi.Status, pod, mi.Generation, metav1.NewTime(r.Clock.Now()))
	return ctrl.Result{}, nil
}

// currentPod returns the MapInstance's pod, or nil when there is none.
func (r *MapInstanceReconciler) currentPod(ctx context.Context, mi *gamev1.MapInstance) (*corev1.Pod, error) {
	pod := &corev1.Pod{}
	err := r.Get(ctx, client.ObjectKey{Namespace: mi.Namespace, Name: mi.Name}, pod)
	switch {
	case apierrors.IsNotFound(err):
		return nil, nil
	case err != nil:
		return nil, fmt.Errorf("reading pod: %w", err)
	case !metav1.IsControlledBy(pod, mi):
		return nil, fmt.Errorf("pod %s exists but does not belong to MapInstance %s", pod.Name, mi.Name)
	}
	return pod, nil
}

// syncPod creates the pod when it is missing and deletes it when it was
// built from other inputs; the deletion's watch event brings the
// replacement. It returns the pod to report on.
func (r *MapInstanceReconciler) syncPod(ctx context.Context, mi *gamev1.MapInstance, desired, pod *corev1.Pod) (*corev1.Pod, error) {
	switch {
	case pod == nil:
		if err := r.Create(ctx, desired, client.FieldOwner(FieldManager)); err != nil {
			return nil, fmt.Errorf("creating pod: %w", err)
		}
		r.Recorder.Eventf(mi, desired, corev1.EventTypeNormal, EventPodCreated, "CreatePod", "Created pod %s", desired.Name)
		return desired, nil
	case pod.DeletionTimestamp != nil:
		return pod, nil
	case pod.Annotations[gamev1.AnnotationInputHash] != desired.Annotations[gamev1.AnnotationInputHash]:
		if err := r.Delete(ctx, pod, client.Preconditions{UID: &pod.UID}); err != nil && !apierrors.IsNotFound(err) {
			return nil, fmt.Errorf("deleting outdated pod: %w", err)
		}
		r.Recorder.Eventf(mi, pod, corev1.EventTypeNormal, EventPodReplacing, "ReplacePod",
			"Replacing pod %s: its spec changed", pod.Name)
		now := metav1.NewTime(r.Clock.Now())
		pod.DeletionTimestamp = &now // report it as draining until the watch says it is gone
		return pod, nil
	}
	return pod, nil
}

// SetupWithManager registers the controller and what it watches.
func (r *MapInstanceReconciler) SetupWithManager(mgr ctrl.Manager) error {
	return ctrl.NewControllerManagedBy(mgr).
		// Only spec changes: status writes, including the pod's heartbeats,
		// must not wake the controller.
		For(&gamev1.MapInstance{}, builder.WithPredicates(predicate.GenerationChangedPredicate{})).
		Owns(&corev1.Pod{}).
		Named("mapinstance").
		Complete(r)
}
