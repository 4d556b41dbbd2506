package controllers

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"unicode/utf8"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	gamev1 "github.com/roomkeeper/roomkeeper/api/v1"
)

// Problems only a person can solve: an object the operator must create
// exists under its name but belongs to someone else, or the API server
// refuses the map's pod as invalid. Trying again would meet the same
// problem, so each is reported as Ready=False with its reason and a
// Warning event, and the reconcile ends with a terminal error. It runs
// again when the spec changes, when its annotations change (a nudge after
// removing an object the manager's cache does not see), or when a cached
// object that held the name is deleted (the watches in SetupWithManager).

// blockedError is a problem a person must fix.
type blockedError struct {
	// reason is the condition's and the event's: gamev1.ReasonNameConflict,
	// gamev1.ReasonInvalidPodSpec or gamev1.ReasonPodForbidden.
	reason  string
	message string
	// retry: the fix may come from outside what the operator watches (a
	// namespace's labels, a quota), so the reconcile is tried again, with
	// backoff, instead of ending.
	retry bool
}

func (e *blockedError) Error() string { return e.message }

// maxBlockedMessage keeps a message within an event's note (1 kB).
const maxBlockedMessage = 1000

func blocked(reason, message string) *blockedError {
	return &blockedError{reason: reason, message: truncate(message, maxBlockedMessage)}
}

// truncate cuts message to at most limit bytes, "..." included, at the
// last line break that fits (a list of problems loses whole lines), else
// at a rune boundary.
func truncate(message string, limit int) string {
	if len(message) <= limit {
		return message
	}
	cut := limit - len("...")
	if nl := strings.LastIndexByte(message[:cut], '\n'); nl > 0 {
		return message[:nl+1] + "..."
	}
	for cut > 0 && !utf8.RuneStart(message[cut]) {
		cut--
	}
	return message[:cut] + "..."
}

// nameConflict is the problem of obj, read from the API server, holding a
// name the operator needs for a child of owner.
func nameConflict(scheme *runtime.Scheme, obj, owner client.Object) *blockedError {
	held := "it has no controller"
	if ref := metav1.GetControllerOf(obj); ref != nil {
		held = fmt.Sprintf("it belongs to %s %s", ref.Kind, ref.Name)
		if ref.Kind == kindOf(scheme, owner) && ref.Name == owner.GetName() {
			held += fmt.Sprintf(" of an earlier uid %s", ref.UID) // a leftover of a deleted namesake
		}
	}
	fix := "delete it"
	if _, ok := owner.(*gamev1.GameRoom); ok {
		fix = "delete it, or rename the room"
	}
	return blocked(gamev1.ReasonNameConflict, fmt.Sprintf("%s %s exists but is not %s %s's (%s): %s",
		kindOf(scheme, obj), obj.GetName(), kindOf(scheme, owner), owner.GetName(), held, fix))
}

// forbiddenPod is the problem of the API server forbidding the pod: a
// Pod Security level, a quota or an admission policy of its namespace.
func forbiddenPod(err error) *blockedError {
	b := blocked(gamev1.ReasonPodForbidden, "The API server forbade the map's pod; fix the namespace (its Pod Security level, quotas, admission policies) or the GameRoom's spec: "+err.Error())
	b.retry = true
	return b
}

// invalidPod is the problem of the API server refusing the pod, built
// from a MapInstance's spec, as invalid.
func invalidPod(err error) *blockedError {
	return blocked(gamev1.ReasonInvalidPodSpec, "The API server refused the map's pod; fix the GameRoom's spec (podTemplate, image): "+err.Error())
}

func kindOf(scheme *runtime.Scheme, obj client.Object) string {
	if gvk, err := apiutil.GVKForObject(obj, scheme); err == nil {
		return gvk.Kind
	}
	return fmt.Sprintf("%T", obj)
}

// ownedBy returns nil when obj is controlled by owner, and else the name
// conflict a person must resolve.
func ownedBy(scheme *runtime.Scheme, obj, owner client.Object) error {
	if metav1.IsControlledBy(obj, owner) {
		return nil
	}
	return nameConflict(scheme, obj, owner)
}

// ownedLive is ownedBy on obj as the API server has it, read into obj past
// the cache. A create that finds its name taken asks it: the object there
// may be owner's own, made by an earlier reconcile the cache has not seen
// yet, or someone else's, which the cache may not hold (it keeps only
// objects labelled as the operator's).
func ownedLive(ctx context.Context, live client.Reader, scheme *runtime.Scheme, obj, owner client.Object) error {
	if err := live.Get(ctx, client.ObjectKeyFromObject(obj), obj); err != nil {
		return fmt.Errorf("reading %s %s, which exists: %w", kindOf(scheme, obj), obj.GetName(), err)
	}
	return ownedBy(scheme, obj, owner)
}

// reportBlocked turns a problem a person must fix into a terminal error
// (or, when the fix may come unseen, an error retried with backoff),
// after setting conditions with set (which tells whether they changed) and,
// when they did, emitting a Warning event on obj. Other errors are
// returned as they are, to be retried.
func reportBlocked(err error, recorder events.EventRecorder, obj runtime.Object, set func(*blockedError) bool) error {
	var b *blockedError
	if !errors.As(err, &b) {
		return err
	}
	if set(b) {
		recorder.Eventf(obj, nil, corev1.EventTypeWarning, b.reason, "Reconcile", "%s", b.message)
	}
	if b.retry {
		return err
	}
	return reconcile.TerminalError(err)
}

// setBlocked sets condType False with the problem's reason and message,
// and tells whether that changed the condition.
func setBlocked(conditions *[]metav1.Condition, condType string, b *blockedError, generation int64, now metav1.Time) bool {
	old := meta.FindStatusCondition(*conditions, condType)
	changed := old == nil || old.Status != metav1.ConditionFalse || old.Reason != b.reason || old.Message != b.message
	setCondition(conditions, condType, metav1.ConditionFalse, b.reason, b.message, generation, now)
	return changed
}

// roomBlocked is the room's status when a problem stops the operator from
// creating its children: Ready=False with the problem's reason.
func roomBlocked(room *gamev1.GameRoom, b *blockedError, now metav1.Time) (gamev1.GameRoomStatus, bool) {
	out := *room.Status.DeepCopy()
	changed := setBlocked(&out.Conditions, gamev1.ConditionReady, b, room.Generation, now)
	out.Phase = roomPhase(room, out)
	out.ObservedGeneration = room.Generation
	return out, changed
}

// mapBlocked is a MapInstance's status when a problem stops the operator
// from creating its pod: no pod, Ready and PodHealthy False with the
// problem's reason.
func mapBlocked(status gamev1.MapInstanceStatus, b *blockedError, generation int64, now metav1.Time) (gamev1.MapInstanceStatus, bool) {
	out := *status.DeepCopy()
	out.PodName, out.Endpoint = "", ""
	changed := setBlocked(&out.Conditions, gamev1.ConditionReady, b, generation, now)
	setBlocked(&out.Conditions, gamev1.ConditionPodHealthy, b, generation, now)
	out.Phase = mapPhase(out, podMissing)
	out.ObservedGeneration = generation
	return out, changed
}

// needsAPerson tells whether a MapInstance is held by a problem a person must fix.
func needsAPerson(mi *gamev1.MapInstance) bool {
	c := meta.FindStatusCondition(mi.Status.Conditions, gamev1.ConditionReady)
	return c != nil && c.Status == metav1.ConditionFalse &&
		(c.Reason == gamev1.ReasonNameConflict || c.Reason == gamev1.ReasonInvalidPodSpec || c.Reason == gamev1.ReasonPodForbidden ||
			c.Reason == gamev1.ReasonPackInvalid || c.Reason == gamev1.ReasonPackNotFound)
}

// statusWritten joins a reconcile's error with its status write's. A
// terminal error stays terminal only when the status that explains it was
// written; otherwise the reconcile runs again to write it.
func statusWritten(reterr, patchErr error) error {
	if patchErr == nil {
		return reterr
	}
	if inner := errors.Unwrap(reterr); inner != nil && errors.Is(reterr, reconcile.TerminalError(nil)) {
		reterr = inner // TerminalError wraps the error it was given
	}
	return errors.Join(reterr, patchErr)
}

// onDelete passes only deletions: a name a conflicting object held is free.
var onDelete = predicate.Funcs{
	CreateFunc:  func(event.CreateEvent) bool { return false },
	UpdateFunc:  func(event.UpdateEvent) bool { return false },
	DeleteFunc:  func(event.DeleteEvent) bool { return true },
	GenericFunc: func(event.GenericEvent) bool { return false },
}

// roomsNamedIn wakes the GameRooms whose children could bear an
// object's name (roomCandidates).
var roomsNamedIn = handler.EnqueueRequestsFromMapFunc(func(_ context.Context, obj client.Object) []reconcile.Request {
	return roomCandidates(obj)
})

// roomCandidates are the GameRooms whose children could bear obj's name:
// every <room>-... prefix of it (key Secret <room>-token-keys, RBAC
// <room>-roomserver, MapInstance <room>-<map>). A prefix that names no
// room costs one cache read.
func roomCandidates(obj client.Object) []reconcile.Request {
	var rooms []reconcile.Request
	name := obj.GetName()
	for i := 1; i < len(name); i++ {
		if name[i] == '-' {
			rooms = append(rooms, reconcile.Request{NamespacedName: types.NamespacedName{Namespace: obj.GetNamespace(), Name: name[:i]}})
		}
	}
	return rooms
}

// sameName maps an object to the object of the same name and namespace,
// as a pod to its MapInstance.
func sameName(_ context.Context, obj client.Object) []reconcile.Request {
	return []reconcile.Request{{NamespacedName: client.ObjectKeyFromObject(obj)}}
}
