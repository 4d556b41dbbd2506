package controllers

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/events"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	gamev1 "github.com/roomkeeper/roomkeeper/api/v1"
	"github.com/roomkeeper/roomkeeper/internal/token"
)

// GameRoomReconciler turns a GameRoom into its MapInstances, its token-key
// Secret and its map pods' RBAC, and aggregates their status. It also
// deletes instanced MapInstances left without players, and the room itself
// when its idleTimeout is set and it has no players (gameroom_idle.go).
type GameRoomReconciler struct {
	client.Client
	// APIReader reads past the cache, which holds only the operator's own
	// Secrets and RBAC objects: it tells whose an object is when a create
	// finds its name taken.
	APIReader client.Reader
	Recorder  events.EventRecorder
	Clock     clock.PassiveClock
	// MaxRequeue, when set, caps every timed requeue (tests).
	MaxRequeue time.Duration
	// CountsDelay is how long a heartbeat's player counts wait to wake
	// the room (roomCountsCoalesce when 0).
	CountsDelay time.Duration

	// roomMemory is what the controller keeps in memory (memory.go).
	roomMemory
}

// +kubebuilder:rbac:groups=game.roomkeeper.dev,resources=gamerooms,verbs=get;list;watch;delete
// +kubebuilder:rbac:groups=game.roomkeeper.dev,resources=gamerooms/status,verbs=get;update
// +kubebuilder:rbac:groups=game.roomkeeper.dev,resources=mapinstances,verbs=get;list;watch;create;delete
// The operator writes statuses by update; it holds patch on
// mapinstances/status because the map pods' Role grants it, and the API
// server lets no one grant what they do not hold.
// +kubebuilder:rbac:groups=game.roomkeeper.dev,resources=mapinstances/status,verbs=get;update;patch
// +kubebuilder:rbac:groups=core,resources=secrets,verbs=get;list;watch;create;update
// +kubebuilder:rbac:groups=core,resources=serviceaccounts,verbs=get;list;watch;create;delete
// +kubebuilder:rbac:groups=rbac.authorization.k8s.io,resources=roles,verbs=get;list;watch;create;update;delete
// +kubebuilder:rbac:groups=rbac.authorization.k8s.io,resources=rolebindings,verbs=get;list;watch;create;delete
// +kubebuilder:rbac:groups=events.k8s.io,resources=events,verbs=create;patch
// +kubebuilder:rbac:groups=game.roomkeeper.dev,resources=gamecontents,verbs=get;list;watch

// Reconcile brings one GameRoom's children to its spec and reports on them.
func (r *GameRoomReconciler) Reconcile(ctx context.Context, req ctrl.Request) (_ ctrl.Result, reterr error) {
	room := &gamev1.GameRoom{}
	if err := r.written.read(ctx, r.Client, r.APIReader, req.NamespacedName, room); err != nil {
		if apierrors.IsNotFound(err) {
			r.written.forget(req.NamespacedName)
		}
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if !room.DeletionTimestamp.IsZero() {
		return ctrl.Result{}, nil // owner references take the children with it
	}
	before := room.DeepCopy()
	defer func() {
		reterr = statusWritten(reterr, r.written.updateStatus(ctx, r.Client, before, room, before.Status, room.Status))
	}()

	now := r.Clock.Now()
	rotateIn, instances, err := r.syncChildren(ctx, room, now)
	if err != nil {
		return ctrl.Result{}, r.reportBlocked(room, err, now)
	}
	instances, instanceIdleIn, err := r.reapIdleInstances(ctx, room, instances, now)
	if err != nil {
		return ctrl.Result{}, err
	}
	instances, shardIdleIn, err := r.reapSurplusShards(ctx, room, instances, now)
	if err != nil {
		return ctrl.Result{}, err
	}
	status := gameRoomStatus(room, instances, metav1.NewTime(now))
	if err := setContentCondition(ctx, r.Client, room, &status, metav1.NewTime(now)); err != nil {
		return ctrl.Result{}, err
	}
	expired, roomIdleIn := roomExpiry(room, status, now)
	if expired { // no status write: the room is going
		return ctrl.Result{}, r.expireRoom(ctx, room, status)
	}
	room.Status = status
	return r.requeueAfter(soonest(rotateIn, instanceIdleIn, shardIdleIn, roomIdleIn)), nil
}

// syncChildren makes the room's key Secret, its map pods' RBAC and its
// MapInstances. It returns the time until the next key rotation and the
// room's MapInstances.
func (r *GameRoomReconciler) syncChildren(ctx context.Context, room *gamev1.GameRoom, now time.Time) (time.Duration, []gamev1.MapInstance, error) {
	rotateIn, err := r.ensureKeys(ctx, room, now)
	if err != nil {
		return 0, nil, err
	}
	if err := r.ensureRoomServerRBAC(ctx, room); err != nil {
		return 0, nil, err
	}
	if err := r.removeLegacyRBAC(ctx, room); err != nil {
		return 0, nil, err
	}
	instances, err := r.syncMapInstances(ctx, room)
	if err != nil {
		return 0, nil, err
	}
	if instances, err = r.syncShards(ctx, room, instances); err != nil {
		return 0, nil, err
	}
	instances, err = r.syncWarmPools(ctx, room, instances)
	return rotateIn, instances, err
}

// reportBlocked reports a problem a person must fix (blocked.go) in the
// room's Ready condition and ends the reconcile; other errors are retried.
func (r *GameRoomReconciler) reportBlocked(room *gamev1.GameRoom, err error, now time.Time) error {
	return reportBlocked(err, r.Recorder, room, func(b *blockedError) (changed bool) {
		room.Status, changed = roomBlocked(room, b, metav1.NewTime(now))
		return changed
	})
}

// requeueAfter asks to be woken for the next time-driven step: a key
// rotation or an idle deadline.
func (r *GameRoomReconciler) requeueAfter(wait time.Duration) ctrl.Result {
	if r.MaxRequeue > 0 {
		wait = min(wait, r.MaxRequeue)
	}
	return ctrl.Result{RequeueAfter: wait}
}

// ensureKeys creates the room's token-key Secret, and rotates its keys
// every rotationInterval: previous := current, current := a new key, so
// tickets signed just before a rotation still verify. It returns the time
// until the next rotation. Keys never reach logs, events or status.
func (r *GameRoomReconciler) ensureKeys(ctx context.Context, room *gamev1.GameRoom, now time.Time) (time.Duration, error) {
	interval := durationOf(room.Spec.Tokens.RotationInterval)
	secret := &corev1.Secret{}
	err := r.Get(ctx, client.ObjectKey{Namespace: room.Namespace, Name: keySecretName(room.Name)}, secret)
	if apierrors.IsNotFound(err) {
		return interval, r.createKeys(ctx, room, now)
	}
	if err != nil {
		return 0, fmt.Errorf("reading token keys: %w", err)
	}
	if err := ownedBy(r.Scheme(), secret, room); err != nil {
		return 0, err
	}
	if due := rotatedAt(secret).Add(interval); now.Before(due) {
		return due.Sub(now), nil
	}
	return interval, r.rotateKeys(ctx, room, secret, now)
}

func (r *GameRoomReconciler) createKeys(ctx context.Context, room *gamev1.GameRoom, now time.Time) error {
	key, err := token.NewKey()
	if err != nil {
		return err
	}
	secret := buildKeySecret(room, token.KeySet{Current: key}, now)
	err = r.Create(ctx, secret, client.FieldOwner(gamev1.FieldManagerOperator))
	if apierrors.IsAlreadyExists(err) { // ours, not yet cached, or someone else's
		return ownedLive(ctx, r.APIReader, r.Scheme(), secret, room)
	}
	if err != nil {
		return fmt.Errorf("creating token keys: %w", err)
	}
	// No event for routine creations: each event is an API write, and the
	// operator's budget is one write per child (the objects themselves show
	// up in `kubectl get`). Events mark what a user must notice.
	return nil
}

func (r *GameRoomReconciler) rotateKeys(ctx context.Context, room *gamev1.GameRoom, secret *corev1.Secret, now time.Time) error {
	keys, err := token.KeySetFromData(secret.Data)
	if err != nil { // unreadable keys cannot verify anything: start a fresh set
		keys = token.KeySet{}
	}
	rotated, err := token.Rotate(keys)
	if err != nil {
		return err
	}
	secret.Data = rotated.Data()
	secret.Annotations = map[string]string{annotationRotatedAt: now.UTC().Format(time.RFC3339)}
	if err := r.Update(ctx, secret, client.FieldOwner(gamev1.FieldManagerOperator)); err != nil {
		return fmt.Errorf("rotating token keys: %w", err)
	}
	keyRotations.Inc()
	r.Recorder.Eventf(room, nil, corev1.EventTypeNormal, EventKeysRotated, "RotateKeys",
		"Rotated token keys: new key id %s, previous %s", rotated.Current.ID, keys.Current.ID)
	return nil
}

// rotatedAt is when the Secret's current key was made.
func rotatedAt(secret *corev1.Secret) time.Time {
	if t, err := time.Parse(time.RFC3339, secret.Annotations[annotationRotatedAt]); err == nil {
		return t
	}
	return secret.CreationTimestamp.Time
}

// syncMapInstances deletes the room's MapInstances of maps that left
// the spec (or changed kind), and returns those that remain; shards.go
// creates the shared maps' shards.
func (r *GameRoomReconciler) syncMapInstances(ctx context.Context, room *gamev1.GameRoom) ([]gamev1.MapInstance, error) {
	var list gamev1.MapInstanceList
	if err := r.List(ctx, &list, client.InNamespace(room.Namespace), client.MatchingLabels{gamev1.LabelRoom: room.Name}); err != nil {
		return nil, fmt.Errorf("listing map instances: %w", err)
	}
	var kept []gamev1.MapInstance
	for i := range list.Items {
		mi := &list.Items[i]
		if !metav1.IsControlledBy(mi, room) {
			continue
		}
		if !wantsMapInstance(room, mi) {
			if err := r.deleteMapInstance(ctx, room, mi); err != nil {
				return nil, err
			}
			continue
		}
		kept = append(kept, *mi)
	}
	return kept, nil
}

// wantsMapInstance tells whether mi still serves a map of the room's spec.
func wantsMapInstance(room *gamev1.GameRoom, mi *gamev1.MapInstance) bool {
	for _, m := range room.Spec.Maps {
		if m.Name == mi.Spec.MapName {
			return m.Instanced == mi.Spec.Instanced
		}
	}
	return false
}

// createMapInstance creates desired, and then returns nil, unless a
// MapInstance of that name exists. It returns the existing one when it is
// the room's own (the room's list missed it: the cache was behind);
// someone else's is a name conflict (another room and map can make the
// same <room>-<map> name).
func (r *GameRoomReconciler) createMapInstance(ctx context.Context, room *gamev1.GameRoom, desired *gamev1.MapInstance) (*gamev1.MapInstance, error) {
	found := &gamev1.MapInstance{}
	err := r.Get(ctx, client.ObjectKeyFromObject(desired), found)
	switch {
	case err == nil:
		return found, ownedBy(r.Scheme(), found, room)
	case !apierrors.IsNotFound(err):
		return nil, fmt.Errorf("reading map instance %s: %w", desired.Name, err)
	}
	err = r.Create(ctx, desired, client.FieldOwner(gamev1.FieldManagerOperator))
	if apierrors.IsAlreadyExists(err) {
		found.ObjectMeta = metav1.ObjectMeta{Namespace: desired.Namespace, Name: desired.Name}
		return found, ownedLive(ctx, r.APIReader, r.Scheme(), found, room)
	}
	if err != nil {
		return nil, fmt.Errorf("creating map instance %s: %w", desired.Name, err)
	}
	return nil, nil
}

func (r *GameRoomReconciler) deleteMapInstance(ctx context.Context, room *gamev1.GameRoom, mi *gamev1.MapInstance) error {
	if err := r.Delete(ctx, mi, client.Preconditions{UID: &mi.UID}); err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("deleting map instance %s: %w", mi.Name, err)
	}
	r.Recorder.Eventf(room, mi, corev1.EventTypeNormal, EventMapInstanceDeleted, "DeleteMapInstance",
		"Deleted MapInstance %s: map %s left the spec", mi.Name, mi.Spec.MapName)
	return nil
}

// countsDelay is CountsDelay, or roomCountsCoalesce when unset.
func (r *GameRoomReconciler) countsDelay() time.Duration {
	if r.CountsDelay > 0 {
		return r.CountsDelay
	}
	return roomCountsCoalesce
}

// SetupWithManager registers the controller and what it watches.
func (r *GameRoomReconciler) SetupWithManager(mgr ctrl.Manager, workers int) error {
	namespaceRooms := r.roomsOfNamespace(mgr.GetClient())
	rbacFreed := handler.EnqueueRequestsFromMapFunc(func(ctx context.Context, obj client.Object) []reconcile.Request {
		return append(roomCandidates(obj), namespaceRooms(ctx, obj)...)
	})
	return ctrl.NewControllerManagedBy(mgr).
		// Only spec and annotation changes (a nudge after a name conflict,
		// blocked.go): the room's own status writes must not wake it.
		For(&gamev1.GameRoom{}, builder.WithPredicates(
			predicate.Or[client.Object](predicate.GenerationChangedPredicate{}, predicate.AnnotationChangedPredicate{}))).
		// A burst of changes to the room's MapInstances (pods becoming
		// Ready together) is one reconcile and one status write; their
		// heartbeats' player counts wait longer (roomCountsCoalesce).
		Watches(&gamev1.MapInstance{}, ownerAfter(roomCoalesce, r.countsDelay(), shardedMap(mgr.GetClient()))).
		Owns(&corev1.Secret{}).
		Owns(&corev1.ServiceAccount{}).
		Owns(&rbacv1.Role{}).
		Owns(&rbacv1.RoleBinding{}).
		// Someone else's object that held a name the room needs wakes the
		// room when it is deleted.
		Watches(&gamev1.MapInstance{}, roomsNamedIn, builder.WithPredicates(onDelete)).
		Watches(&corev1.Secret{}, roomsNamedIn, builder.WithPredicates(onDelete)).
		// and a deleted shared RBAC object wakes the rooms of its namespace.
		Watches(&corev1.ServiceAccount{}, rbacFreed, builder.WithPredicates(onDelete)).
		Watches(&rbacv1.Role{}, rbacFreed, builder.WithPredicates(onDelete)).
		Watches(&rbacv1.RoleBinding{}, rbacFreed, builder.WithPredicates(onDelete)).
		// A content pack's verdict: the rooms that use it (ContentValid).
		Watches(&gamev1.GameContent{}, roomsOfPack(mgr.GetClient())).
		Named("gameroom").
		WithOptions(controller.Options{MaxConcurrentReconciles: workers}).
		Complete(r)
}
