package scale

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/roomkeeper/roomkeeper/internal/testenv"
)

// managerKubeconfig writes the kubeconfig the manager runs with. By default
// it is the manager's as the Helm chart deploys it: a ServiceAccount's
// token, allowed no more than the chart's ClusterRole (config/rbac/role.yaml),
// so a permission the operator lacks fails the benchmark, and the API
// server authenticates the manager as it would in a cluster (a token it
// caches, not a client certificate it verifies on every request).
// ROOMKEEPER_SCALE_AUTH=admin runs it as the control plane's admin instead,
// as the rows before 2026-11-27 did.
func (e *env) managerKubeconfig(b *testing.B, admin *rest.Config) string {
	b.Helper()
	cfg := admin
	if os.Getenv("ROOMKEEPER_SCALE_AUTH") != "admin" {
		cfg = e.serviceAccountConfig(b, admin)
	}
	path := filepath.Join(b.TempDir(), "manager.kubeconfig")
	if err := testenv.WriteKubeconfig(path, "envtest", cfg); err != nil {
		b.Fatal(err)
	}
	return path
}

// serviceAccountConfig creates the manager's ServiceAccount, binds it to
// the manager's ClusterRole and returns a config with a token of it.
func (e *env) serviceAccountConfig(b *testing.B, admin *rest.Config) *rest.Config {
	b.Helper()
	ctx := context.Background()
	role, err := testenv.ManagerClusterRole()
	if err != nil {
		b.Fatal(err)
	}
	const ns, name = "roomkeeper-system", "roomkeeper-manager"
	sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}
	binding := &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: name},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: role.Name},
		Subjects: []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Namespace: ns, Name: name}}}
	if err := e.c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil {
		b.Fatal(err)
	}
	for _, obj := range []client.Object{sa, role, binding} {
		if err := e.c.Create(ctx, obj); err != nil {
			b.Fatal(err)
		}
	}
	expiry := int64(3600)
	token, err := e.clientset.CoreV1().ServiceAccounts(ns).CreateToken(ctx, name,
		&authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: &expiry}}, metav1.CreateOptions{})
	if err != nil {
		b.Fatalf("a token for the manager's ServiceAccount: %v", err)
	}
	return &rest.Config{Host: admin.Host, TLSClientConfig: rest.TLSClientConfig{CAData: admin.CAData},
		BearerToken: token.Status.Token}
}
