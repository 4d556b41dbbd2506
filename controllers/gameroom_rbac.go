package controllers

import (
	"context"
	"fmt"
	"sync"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	gamev1 "github.com/roomkeeper/roomkeeper/api/v1"
)

// ensureRoomServerRBAC makes sure the namespace has the ServiceAccount,
// Role and RoleBinding map pods run with (RoomServerRBAC). The first
// room of a namespace creates them; every other room finds them in the
// cache and writes nothing.
//
// The rooms of a namespace are reconciled concurrently, and the cache lags
// behind a create: one reconcile per namespace at a time makes them, and a
// namespace that has them is remembered until one of them is deleted
// (rbacFreed), so the others neither read them again nor race to create
// them (a refused create is a 409 too).
func (r *GameRoomReconciler) ensureRoomServerRBAC(ctx context.Context, room *gamev1.GameRoom) error {
	if _, ok := r.rbacDone.Load(room.Namespace); ok {
		return nil
	}
	mu, _ := r.rbacLocks.LoadOrStore(room.Namespace, &sync.Mutex{})
	mu.(*sync.Mutex).Lock()
	defer mu.(*sync.Mutex).Unlock()
	if _, ok := r.rbacDone.Load(room.Namespace); ok {
		return nil
	}
	sa, role, binding := RoomServerRBAC(room.Namespace)
	for _, obj := range []client.Object{sa, role, binding} {
		if err := createShared(ctx, r.Client, r.APIReader, obj, room); err != nil {
			return err
		}
	}
	r.rbacDone.Store(room.Namespace, struct{}{})
	return nil
}

// rbacGone forgets that a namespace has its map pods' RBAC: one of the
// objects was deleted.
func (r *GameRoomReconciler) rbacGone(namespace string) {
	r.rbacDone.Delete(namespace)
}

// createShared creates obj, shared by the rooms of its namespace, unless it
// exists. An object of that name without the operator's label is someone
// else's: a name conflict, reported on room.
func createShared(ctx context.Context, c client.Client, live client.Reader, obj client.Object, room *gamev1.GameRoom) error {
	found := obj.DeepCopyObject().(client.Object)
	err := c.Get(ctx, client.ObjectKeyFromObject(obj), found)
	switch {
	case err == nil:
		if err := sharedOwned(c, found, room); err != nil {
			return err
		}
		return updateRules(ctx, c, found, obj)
	case !apierrors.IsNotFound(err):
		return err
	}
	err = c.Create(ctx, obj, client.FieldOwner(gamev1.FieldManagerOperator))
	if !apierrors.IsAlreadyExists(err) {
		return err
	}
	// Made meanwhile by another room's reconcile, or someone else's, which
	// the cache (only the operator's labelled objects) does not hold.
	if err := live.Get(ctx, client.ObjectKeyFromObject(obj), found); err != nil {
		return fmt.Errorf("reading %s %s, which exists: %w", kindOf(c.Scheme(), obj), obj.GetName(), err)
	}
	return sharedOwned(c, found, room)
}

// updateRules gives an existing Role the rules the operator builds now:
// an older operator's Role granted more than map pods use.
func updateRules(ctx context.Context, c client.Client, found, want client.Object) error {
	have, ok := found.(*rbacv1.Role)
	if !ok || equality.Semantic.DeepEqual(have.Rules, want.(*rbacv1.Role).Rules) {
		return nil
	}
	have.Rules = want.(*rbacv1.Role).Rules
	if err := c.Update(ctx, have, client.FieldOwner(gamev1.FieldManagerOperator)); err != nil {
		return fmt.Errorf("updating Role %s/%s: %w", have.Namespace, have.Name, err)
	}
	return nil
}

// sharedOwned returns nil when obj bears the operator's label, and else the
// name conflict a person must resolve.
func sharedOwned(c client.Client, obj client.Object, room *gamev1.GameRoom) error {
	if obj.GetLabels()[labelManagedBy] == managedBy {
		return nil
	}
	return blocked(gamev1.ReasonNameConflict, fmt.Sprintf(
		"%s %s exists but is not the operator's (no label %s=%s), and GameRoom %s's map pods need it: delete it",
		kindOf(c.Scheme(), obj), obj.GetName(), labelManagedBy, managedBy, room.Name))
}

// removeLegacyRBAC deletes the per-room ServiceAccount, Role and
// RoleBinding (<room>-roomserver) of operator versions before the
// namespace-wide ones, once no pod of the room runs as that ServiceAccount
// (such pods are kept until they are replaced for another reason).
// Replacing a pod changes its MapInstance's status, which wakes the room.
func (r *GameRoomReconciler) removeLegacyRBAC(ctx context.Context, room *gamev1.GameRoom) error {
	name := legacyServiceAccount(room.Name)
	var legacy []client.Object
	for _, obj := range []client.Object{&rbacv1.RoleBinding{}, &rbacv1.Role{}, &corev1.ServiceAccount{}} {
		err := r.Get(ctx, client.ObjectKey{Namespace: room.Namespace, Name: name}, obj)
		switch {
		case apierrors.IsNotFound(err):
			continue
		case err != nil:
			return err
		}
		if metav1.IsControlledBy(obj, room) {
			legacy = append(legacy, obj)
		}
	}
	if len(legacy) == 0 {
		return nil
	}
	var pods corev1.PodList
	if err := r.List(ctx, &pods, client.InNamespace(room.Namespace), client.MatchingLabels{gamev1.LabelRoom: room.Name}); err != nil {
		return fmt.Errorf("listing the room's pods: %w", err)
	}
	for i := range pods.Items {
		if pods.Items[i].Spec.ServiceAccountName == name {
			return nil
		}
	}
	for _, obj := range legacy {
		uid := obj.GetUID()
		if err := r.Delete(ctx, obj, client.Preconditions{UID: &uid}); err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("deleting the room's former %s %s: %w", kindOf(r.Scheme(), obj), name, err)
		}
	}
	return nil
}

// roomsOfNamespace wakes every GameRoom of the namespace of a deleted
// shared object, after forgetting the namespace had it: one of them
// recreates it.
func (r *GameRoomReconciler) roomsOfNamespace(c client.Reader) func(context.Context, client.Object) []reconcile.Request {
	return func(ctx context.Context, obj client.Object) []reconcile.Request {
		if obj.GetName() != RoomServerServiceAccount {
			return nil
		}
		r.rbacGone(obj.GetNamespace())
		var rooms gamev1.GameRoomList
		if err := c.List(ctx, &rooms, client.InNamespace(obj.GetNamespace())); err != nil {
			return nil
		}
		out := make([]reconcile.Request, 0, len(rooms.Items))
		for i := range rooms.Items {
			out = append(out, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(&rooms.Items[i])})
		}
		return out
	}
}
