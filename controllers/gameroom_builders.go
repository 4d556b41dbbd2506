package controllers

import (
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	gamev1 "github.com/roomkeeper/roomkeeper/api/v1"
	"github.com/roomkeeper/roomkeeper/internal/token"
)

// roomOwned is the metadata of an object that belongs to a room and is
// garbage collected with it.
func roomOwned(room *gamev1.GameRoom, name string) metav1.ObjectMeta {
	return metav1.ObjectMeta{
		Name:            name,
		Namespace:       room.Namespace,
		Labels:          roomLabels(room.Name),
		OwnerReferences: []metav1.OwnerReference{*metav1.NewControllerRef(room, gamev1.GroupVersion.WithKind("GameRoom"))},
	}
}

// annotationRotatedAt on the key Secret says when its current key was made.
const annotationRotatedAt = "game.roomkeeper.dev/rotated-at"

// buildKeySecret returns the room's token-key Secret holding keys made at now.
func buildKeySecret(room *gamev1.GameRoom, keys token.KeySet, now time.Time) *corev1.Secret {
	meta := roomOwned(room, keySecretName(room.Name))
	meta.Annotations = map[string]string{annotationRotatedAt: now.UTC().Format(time.RFC3339)}
	return &corev1.Secret{ObjectMeta: meta, Type: corev1.SecretTypeOpaque, Data: keys.Data()}
}

// RoomServerRBAC returns the ServiceAccount every map pod of a
// namespace runs as, and the Role and RoleBinding that let them report
// heartbeats into mapinstances/status, and nothing else (config/policy
// narrows it to each pod's own map). They are shared by the namespace's rooms, so they belong to
// none of them: no owner reference, the operator's label, and they stay when
// the last room goes (they grant nothing without a map pod to use them).
func RoomServerRBAC(namespace string) (*corev1.ServiceAccount, *rbacv1.Role, *rbacv1.RoleBinding) {
	meta := func() metav1.ObjectMeta {
		return metav1.ObjectMeta{Name: RoomServerServiceAccount, Namespace: namespace, Labels: sharedLabels()}
	}
	group := gamev1.GroupVersion.Group
	sa := &corev1.ServiceAccount{ObjectMeta: meta()}
	role := &rbacv1.Role{
		ObjectMeta: meta(),
		// A room server only sends heartbeats (internal/heartbeat: a
		// server-side apply of its MapInstance's status, and between those
		// a merge patch of its pod's Lease, which it makes first); it
		// reads nothing. The admission policy (config/policy) keeps each
		// to its own map and its own Lease.
		Rules: []rbacv1.PolicyRule{
			{APIGroups: []string{group}, Resources: []string{"mapinstances/status"}, Verbs: []string{"patch"}},
			{APIGroups: []string{coordinationv1.GroupName}, Resources: []string{"leases"}, Verbs: []string{"create", "patch"}},
		},
	}
	binding := &rbacv1.RoleBinding{
		ObjectMeta: meta(),
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: RoomServerServiceAccount},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: RoomServerServiceAccount, Namespace: namespace}},
	}
	return sa, role, binding
}
