// Package testenv starts the real parts tests run against: a kube-apiserver
// and etcd built by hack/controlplane.sh, with the project's CRDs installed.
// A missing part is an error that says how to get it, never a skip.
package testenv

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	"sigs.k8s.io/yaml"
)

// RepoRoot is the directory holding the project's go.mod.
func RepoRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if data, err := os.ReadFile(filepath.Join(dir, "go.mod")); err == nil &&
			strings.HasPrefix(string(data), "module github.com/roomkeeper/roomkeeper\n") {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("not inside the roomkeeper module")
		}
		dir = parent
	}
}

// AssetsDir is where the control-plane binaries are: KUBEBUILDER_ASSETS when
// set, else the cache hack/controlplane.sh builds into.
func AssetsDir() (string, error) {
	if dir := os.Getenv("KUBEBUILDER_ASSETS"); dir != "" {
		return dir, nil
	}
	root, err := RepoRoot()
	if err != nil {
		return "", err
	}
	out, err := exec.Command(filepath.Join(root, "hack", "controlplane.sh"), "--print-dir").Output()
	if err != nil {
		return "", fmt.Errorf("locating the control plane: %w", err)
	}
	dir := strings.TrimSpace(string(out))
	if _, err := os.Stat(filepath.Join(dir, "kube-apiserver")); err != nil {
		return "", fmt.Errorf("no kube-apiserver in %s: run `make controlplane` (or `make test`, which builds it)", dir)
	}
	return dir, nil
}

// ControlPlane is a running kube-apiserver and etcd with the CRDs installed.
type ControlPlane struct {
	Config *rest.Config
	env    *envtest.Environment
}

// Start runs a control plane for a test binary, with Roomkeeper's CRDs and
// those in extraCRDDirs. Call Stop when done.
func Start(extraCRDDirs ...string) (*ControlPlane, error) {
	assets, err := AssetsDir()
	if err != nil {
		return nil, err
	}
	root, err := RepoRoot()
	if err != nil {
		return nil, err
	}
	env := &envtest.Environment{
		BinaryAssetsDirectory: assets,
		CRDDirectoryPaths:     append([]string{filepath.Join(root, "config", "crd", "bases")}, extraCRDDirs...),
		ErrorIfCRDPathMissing: true,
	}
	cfg, err := env.Start()
	if err != nil {
		// A control plane that started but refused the CRDs still runs:
		// stop it, or every failed run leaves an API server and an etcd
		// behind, taking CPU from the runs after it.
		return nil, errors.Join(fmt.Errorf("starting kube-apiserver and etcd from %s: %w", assets, err), env.Stop())
	}
	return &ControlPlane{Config: cfg, env: env}, nil
}

// Stop ends the control plane.
func (cp *ControlPlane) Stop() error {
	return cp.env.Stop()
}

// WriteKubeconfig writes a kubeconfig for cfg (a client-certificate user
// such as envtest's admin, or a bearer token) at path, as cluster and
// context name, with the default namespace; kubectl and the binaries under
// test read it.
func WriteKubeconfig(path, name string, cfg *rest.Config) error {
	kc := clientcmdapi.NewConfig()
	kc.Clusters[name] = &clientcmdapi.Cluster{Server: cfg.Host, CertificateAuthorityData: cfg.CAData}
	kc.AuthInfos[name+"-admin"] = &clientcmdapi.AuthInfo{ClientCertificateData: cfg.CertData, ClientKeyData: cfg.KeyData,
		Token: cfg.BearerToken}
	kc.Contexts[name] = &clientcmdapi.Context{Cluster: name, AuthInfo: name + "-admin", Namespace: "default"}
	kc.CurrentContext = name
	return clientcmd.WriteToFile(*kc, path)
}

// GatewayAPICRDs is the directory of the Gateway API's standard CRDs
// (GatewayClass, Gateway, HTTPRoute, ...) in the module go.mod requires.
func GatewayAPICRDs() (string, error) {
	root, err := RepoRoot()
	if err != nil {
		return "", err
	}
	cmd := exec.Command("go", "list", "-m", "-f", "{{.Dir}}", "sigs.k8s.io/gateway-api")
	cmd.Dir = root
	out, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("locating the sigs.k8s.io/gateway-api module (go mod download): %w", err)
	}
	dir := filepath.Join(strings.TrimSpace(string(out)), "config", "crd", "standard")
	if _, err := os.Stat(dir); err != nil {
		return "", fmt.Errorf("no Gateway API CRDs: %w", err)
	}
	return dir, nil
}

// ManagerClusterRole is the manager's ClusterRole as controller-gen writes
// it (config/rbac/role.yaml) and the chart installs it.
func ManagerClusterRole() (*rbacv1.ClusterRole, error) {
	root, err := RepoRoot()
	if err != nil {
		return nil, err
	}
	path := filepath.Join(root, "config", "rbac", "role.yaml")
	raw, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	role := &rbacv1.ClusterRole{}
	if err := yaml.Unmarshal(raw, role); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return role, nil
}

// StartWithPostgres starts, for a test binary, a Postgres and a control
// plane (with the CRDs in extraCRDDirs). stop stops whatever started, also
// after an error.
func StartWithPostgres(extraCRDDirs ...string) (pg *Postgres, cp *ControlPlane, stop func(), err error) {
	stop = func() {}
	if pg, err = StartPostgres(); err != nil {
		return nil, nil, stop, err
	}
	stop = func() { _ = pg.Stop() }
	if cp, err = Start(extraCRDDirs...); err != nil {
		return pg, nil, stop, err
	}
	stop = func() { _ = cp.Stop(); _ = pg.Stop() }
	return pg, cp, stop, nil
}
