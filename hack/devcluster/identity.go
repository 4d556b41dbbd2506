package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/roomkeeper/roomkeeper/internal/testenv"
)

// The manager runs as it would in a cluster: under its own ServiceAccount,
// bound to the ClusterRole `make manifests` generates into
// config/rbac/role.yaml, not as the dev cluster's admin. A permission the
// code needs and the role lacks shows up as a forbidden error in make dev
// and fails the end-to-end tests.
const (
	managerNamespace      = "roomkeeper-system"
	managerServiceAccount = "roomkeeper-manager"
	// managerTokenLife is the life of each token; it is renewed at half.
	managerTokenLife = 24 * time.Hour
)

// managerIdentity creates the manager's ServiceAccount and binds it to
// config/rbac's ClusterRole, writes a kubeconfig that authenticates with
// its token to path, and keeps the token fresh until ctx ends.
func managerIdentity(ctx context.Context, root string, admin *rest.Config, path string) error {
	c, err := client.New(admin, client.Options{})
	if err != nil {
		return err
	}
	if err := testenv.ApplyFile(ctx, c, filepath.Join(root, "config", "rbac", "role.yaml")); err != nil {
		return fmt.Errorf("applying config/rbac/role.yaml: %w", err)
	}
	if err := applyRoomAdminRole(ctx, c, root); err != nil {
		return err
	}
	for _, obj := range managerRBAC() {
		if err := c.Create(ctx, obj); err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("creating %T %s: %w", obj, obj.GetName(), err)
		}
	}
	cs, err := kubernetes.NewForConfig(admin)
	if err != nil {
		return err
	}
	tokenFile := filepath.Join(filepath.Dir(path), "manager.token")
	if err := writeManagerToken(ctx, cs, tokenFile); err != nil {
		return err
	}
	go renewManagerToken(ctx, cs, tokenFile)
	kc := clientcmdapi.NewConfig()
	kc.Clusters["roomkeeper-dev"] = &clientcmdapi.Cluster{Server: admin.Host, CertificateAuthorityData: admin.CAData}
	kc.AuthInfos[managerServiceAccount] = &clientcmdapi.AuthInfo{TokenFile: tokenFile}
	kc.Contexts["manager"] = &clientcmdapi.Context{Cluster: "roomkeeper-dev", AuthInfo: managerServiceAccount, Namespace: managerNamespace}
	kc.CurrentContext = "manager"
	return clientcmd.WriteToFile(*kc, path)
}

// managerRBAC is the namespace, the ServiceAccount and its binding to the
// generated ClusterRole (named manager-role in config/rbac/role.yaml).
func managerRBAC() []client.Object {
	return []client.Object{
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: managerNamespace}},
		&corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: managerNamespace, Name: managerServiceAccount}},
		&rbacv1.ClusterRoleBinding{
			ObjectMeta: metav1.ObjectMeta{Name: managerServiceAccount},
			RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "manager-role"},
			Subjects: []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Namespace: managerNamespace,
				Name: managerServiceAccount}},
		},
	}
}

func writeManagerToken(ctx context.Context, cs kubernetes.Interface, path string) error {
	tr, err := cs.CoreV1().ServiceAccounts(managerNamespace).CreateToken(ctx, managerServiceAccount,
		&authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{
			ExpirationSeconds: ptr.To(int64(managerTokenLife.Seconds()))}}, metav1.CreateOptions{})
	if err != nil {
		return fmt.Errorf("requesting the manager's token: %w", err)
	}
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, []byte(tr.Status.Token), 0o600); err != nil {
		return err
	}
	return os.Rename(tmp, path) // client-go re-reads the file: never let it see half a token
}

// renewManagerToken replaces the token at half its life until ctx ends.
func renewManagerToken(ctx context.Context, cs kubernetes.Interface, path string) {
	tick := time.NewTicker(managerTokenLife / 2)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
			if err := writeManagerToken(ctx, cs, path); err != nil {
				fmt.Fprintln(os.Stderr, "make dev:", err)
			}
		}
	}
}

// applyRoomAdminRole installs config/rbac's ClusterRole for platform
// operators under the name `make deploy` gives it (kustomize's prefix
// roomkeeper-), so docs/operations.md's rolebinding works on make dev too.
func applyRoomAdminRole(ctx context.Context, c client.Client, root string) error {
	raw, err := os.ReadFile(filepath.Join(root, "config", "rbac", "room_admin_role.yaml"))
	if err != nil {
		return err
	}
	role := &rbacv1.ClusterRole{}
	if err := yaml.Unmarshal(raw, role); err != nil {
		return fmt.Errorf("config/rbac/room_admin_role.yaml: %w", err)
	}
	role.Name = "roomkeeper-" + role.Name
	existing := &rbacv1.ClusterRole{}
	switch err := c.Get(ctx, client.ObjectKeyFromObject(role), existing); {
	case apierrors.IsNotFound(err):
		return c.Create(ctx, role)
	case err != nil:
		return err
	}
	existing.Rules = role.Rules
	return c.Update(ctx, existing)
}
