package controllers

import (
	"context"
	"errors"
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/events"
	"k8s.io/utils/clock"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	gamev1 "github.com/roomkeeper/roomkeeper/api/v1"
	"github.com/roomkeeper/roomkeeper/internal/content"
	"github.com/roomkeeper/roomkeeper/internal/packs"
)

// GameContentReconciler checks content packs. A valid pack's JSON form
// goes into an immutable ConfigMap named after its revision, which the
// map pods that run it mount: a pod keeps the revision it started with
// while a new one rolls the maps by handover. An invalid pack is reported
// (Valid=False, the field named, a Warning event) and its last valid
// revision stays what maps run.
type GameContentReconciler struct {
	client.Client
	// APIReader reads past the cache, which holds only the operator's
	// ConfigMaps: a revision's name held by someone else's is a conflict.
	APIReader client.Reader
	Recorder  events.EventRecorder
	Clock     clock.PassiveClock
}

// +kubebuilder:rbac:groups=game.roomkeeper.dev,resources=gamecontents,verbs=get;list;watch
// +kubebuilder:rbac:groups=game.roomkeeper.dev,resources=gamecontents/status,verbs=get;update
// +kubebuilder:rbac:groups=core,resources=configmaps,verbs=get;list;watch;create;delete

// Reconcile checks one GameContent and publishes its valid revision.
func (r *GameContentReconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	gc := &gamev1.GameContent{}
	if err := r.Get(ctx, req.NamespacedName, gc); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if !gc.DeletionTimestamp.IsZero() {
		return ctrl.Result{}, nil // its ConfigMaps go with it
	}
	before := gc.Status.DeepCopy()
	now := metav1.NewTime(r.Clock.Now())
	gc.Status.ObservedGeneration = gc.Generation
	pack, err := packs.Check(gc)
	if err != nil {
		setCondition(&gc.Status.Conditions, gamev1.ConditionValid, metav1.ConditionFalse, gamev1.ReasonPackInvalid,
			truncate(err.Error(), maxConditionMessage), gc.Generation, now)
		if !meta.IsStatusConditionFalse(before.Conditions, gamev1.ConditionValid) || before.ObservedGeneration != gc.Generation {
			r.Recorder.Eventf(gc, nil, corev1.EventTypeWarning, gamev1.ReasonPackInvalid, "Check",
				"Pack %s is invalid; maps keep revision %q: %s", gc.Name, gc.Status.Revision, firstLine(err.Error()))
		}
	} else if err := r.publish(ctx, gc, pack, now); err != nil {
		var b *blockedError
		if !errors.As(err, &b) {
			return ctrl.Result{}, err
		}
		setCondition(&gc.Status.Conditions, gamev1.ConditionValid, metav1.ConditionFalse, b.reason, b.message, gc.Generation, now)
		r.Recorder.Eventf(gc, nil, corev1.EventTypeWarning, b.reason, "Publish", "%s", b.message)
	}
	if err := r.pruneRevisions(ctx, gc); err != nil {
		return ctrl.Result{}, err
	}
	if equality.Semantic.DeepEqual(*before, gc.Status) {
		return ctrl.Result{}, nil
	}
	return ctrl.Result{}, r.Status().Update(ctx, gc)
}

// publish writes the valid pack's revision ConfigMap and status.
func (r *GameContentReconciler) publish(ctx context.Context, gc *gamev1.GameContent, pack content.Pack, now metav1.Time) error {
	encoded, err := pack.Encode()
	if err != nil {
		return fmt.Errorf("encoding pack %s: %w", gc.Name, err)
	}
	revision := content.Revision(encoded)
	cm := &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: gc.Name + "-" + revision, Namespace: gc.Namespace,
			Labels:          map[string]string{labelManagedBy: managedBy, labelPartOf: partOf, packs.LabelContent: gc.Name},
			OwnerReferences: []metav1.OwnerReference{*metav1.NewControllerRef(gc, gamev1.GroupVersion.WithKind("GameContent"))}},
		Data:      map[string]string{packs.FileKey: string(encoded)},
		Immutable: ptr.To(true),
	}
	if err := r.ensureRevision(ctx, gc, cm); err != nil {
		return err
	}
	gc.Status.Revision, gc.Status.ConfigMap = revision, cm.Name
	gc.Status.Items, gc.Status.Enemies = int32(len(pack.Items)), int32(len(pack.Enemies))
	if pack.Boss.Name != "" {
		gc.Status.Enemies++
	}
	setCondition(&gc.Status.Conditions, gamev1.ConditionValid, metav1.ConditionTrue, gamev1.ReasonPackValid,
		fmt.Sprintf("revision %s: %d items, %d enemies", revision, gc.Status.Items, gc.Status.Enemies), gc.Generation, now)
	return nil
}

// ensureRevision creates the revision's ConfigMap unless the cache holds it
// as the pack's already (every reconcile of a published pack, which pod
// deletions wake, asks nothing of the API server). A name held by someone
// else's ConfigMap, which the cache does not hold, is a conflict: a pod
// never mounts it as the pack.
func (r *GameContentReconciler) ensureRevision(ctx context.Context, gc *gamev1.GameContent, cm *corev1.ConfigMap) error {
	cached := &corev1.ConfigMap{}
	err := r.Get(ctx, client.ObjectKeyFromObject(cm), cached)
	switch {
	case err == nil:
		return ownedBy(r.Scheme(), cached, gc)
	case !apierrors.IsNotFound(err):
		return fmt.Errorf("reading ConfigMap %s: %w", cm.Name, err)
	}
	err = r.Create(ctx, cm)
	switch {
	case apierrors.IsAlreadyExists(err): // not in the cache (yet): ask the API server whose it is
		return ownedLive(ctx, r.APIReader, r.Scheme(), &corev1.ConfigMap{ObjectMeta: cm.ObjectMeta}, gc)
	case err != nil:
		return fmt.Errorf("creating ConfigMap %s: %w", cm.Name, err)
	}
	return nil
}

// pruneRevisions deletes the pack's revision ConfigMaps that are neither
// its valid revision nor mounted by a pod of the namespace.
func (r *GameContentReconciler) pruneRevisions(ctx context.Context, gc *gamev1.GameContent) error {
	var cms corev1.ConfigMapList
	if err := r.List(ctx, &cms, client.InNamespace(gc.Namespace), client.MatchingLabels{packs.LabelContent: gc.Name}); err != nil {
		return fmt.Errorf("listing the pack's ConfigMaps: %w", err)
	}
	if len(cms.Items) <= 1 {
		return nil
	}
	var pods corev1.PodList
	if err := r.List(ctx, &pods, client.InNamespace(gc.Namespace), client.MatchingLabels(ManagedSelector)); err != nil {
		return fmt.Errorf("listing map pods: %w", err)
	}
	mounted := map[string]bool{}
	for _, p := range pods.Items {
		mounted[p.Annotations[annotationContentRevision]] = true
	}
	for i := range cms.Items {
		cm := &cms.Items[i]
		if cm.Name == gc.Status.ConfigMap || mounted[cm.Name] {
			continue
		}
		if err := r.Delete(ctx, cm); err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("deleting the old revision %s: %w", cm.Name, err)
		}
	}
	return nil
}

// maxConditionMessage keeps a condition's message well within the API's
// 32 KiB: the first problems name the fields to fix.
const maxConditionMessage = 4096

func firstLine(s string) string {
	first, _, _ := strings.Cut(s, "\n")
	return first
}

// SetupWithManager registers the controller: a pack's spec changes, its
// ConfigMaps, and the map pods that stop mounting an old revision (whose
// ConfigMap can go then).
func (r *GameContentReconciler) SetupWithManager(mgr ctrl.Manager) error {
	return ctrl.NewControllerManagedBy(mgr).
		// Spec changes, and annotation changes: a nudge after a conflict.
		For(&gamev1.GameContent{}, builder.WithPredicates(
			predicate.Or[client.Object](predicate.GenerationChangedPredicate{}, predicate.AnnotationChangedPredicate{}))).
		Owns(&corev1.ConfigMap{}).
		Watches(&corev1.Pod{}, handler.EnqueueRequestsFromMapFunc(packOfPod), builder.WithPredicates(onDelete)).
		Named("gamecontent").
		Complete(r)
}

// packOfPod is the GameContent whose revision a map pod mounted.
func packOfPod(_ context.Context, obj client.Object) []reconcile.Request {
	name := obj.GetAnnotations()[annotationContent]
	if name == "" {
		return nil
	}
	return []reconcile.Request{{NamespacedName: client.ObjectKey{Namespace: obj.GetNamespace(), Name: name}}}
}
