package controllers

import (
	"testing"

	. "github.com/onsi/gomega"

	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/roomkeeper/roomkeeper/internal/testenv"
)

// TestTheManagersRoleMayGrantTheMapPodsRole: the API server lets no one
// create a Role granting what they do not hold themselves, so the manager's
// ClusterRole (config/rbac/role.yaml, which the chart installs) must hold
// everything the map pods' Role grants. Created as a user bound to just that
// ClusterRole, the map pods' Role and RoleBinding are accepted.
func TestTheManagersRoleMayGrantTheMapPodsRole(t *testing.T) {
	ctx, ns := envtestNamespace(t)
	g := wait(t)
	role, err := testenv.ManagerClusterRole()
	g.Expect(err).NotTo(HaveOccurred())
	role.Name = "grant-test-" + ns
	user := "grant-test-manager-" + ns
	binding := &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: role.Name},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: role.Name},
		Subjects: []rbacv1.Subject{{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: user}}}
	for _, obj := range []client.Object{role, binding} {
		g.Expect(k8s.Create(ctx, obj)).To(Succeed())
		t.Cleanup(func() { _ = k8s.Delete(ctx, obj) })
	}
	asManager := rest.CopyConfig(restConfig)
	asManager.Impersonate = rest.ImpersonationConfig{UserName: user}
	manager, err := client.New(asManager, client.Options{Scheme: testScheme})
	g.Expect(err).NotTo(HaveOccurred())

	_, podsRole, podsBinding := RoomServerRBAC(ns)
	// The authorizer learns of the new binding from its informer: retry
	// until it has, then the creates must succeed.
	g.Eventually(func() error { return manager.Create(ctx, podsRole) }).Should(Succeed())
	g.Expect(manager.Create(ctx, podsBinding)).To(Succeed())
}
