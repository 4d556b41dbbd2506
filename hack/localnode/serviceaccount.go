package main

import (
	"context"
	"fmt"
	"net/url"
	"path/filepath"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"k8s.io/utils/ptr"
)

// A pod's ServiceAccount credentials, as a kubelet projects them: a token
// bound to the pod from the TokenRequest API, renewed before it expires, with
// the API server's CA and the namespace beside it. A local process cannot
// use the in-cluster path /var/run/secrets/kubernetes.io/serviceaccount, so
// it gets a kubeconfig whose user reads the token file (client-go re-reads a
// tokenFile, so renewals reach a running process).
const (
	tokenExpirationSeconds = 3600             // what a kubelet asks for
	tokenRenewFraction     = 0.8              // renew at 80% of the lifetime, as a kubelet
	tokenRetryInterval     = 30 * time.Second // after a failed renewal; the old token lasts 12 more minutes
	defaultServiceAccount  = "default"
	serviceAccountDirName  = "serviceaccount"
	podKubeconfigName      = "kubeconfig"
	tokenFileName          = "token"
	caFileName             = "ca.crt"
	namespaceFileName      = "namespace"
	kubeconfigEntryName    = "serviceaccount"
	// serviceAccountMountPath is where a kubelet mounts the credentials;
	// args naming it are rewritten to the pod's directory.
	serviceAccountMountPath = "/var/run/secrets/kubernetes.io/serviceaccount"
)

// apiServer is how pods reach the API server the agent uses.
type apiServer struct {
	url      *url.URL
	caData   []byte // empty: the system roots verify it
	insecure bool
}

// newAPIServer reads the agent's rest config, CA file included.
func newAPIServer(cfg *rest.Config) (apiServer, error) {
	withFiles := rest.CopyConfig(cfg)
	if err := rest.LoadTLSFiles(withFiles); err != nil {
		return apiServer{}, fmt.Errorf("reading the API server CA: %w", err)
	}
	u, _, err := rest.DefaultServerUrlFor(cfg)
	if err != nil {
		return apiServer{}, err
	}
	return apiServer{url: u, caData: withFiles.CAData, insecure: cfg.Insecure}, nil
}

// serviceEnv is what a kubelet tells every container about the API server.
func (s apiServer) serviceEnv() []string {
	port := s.url.Port()
	switch {
	case port != "":
	case s.url.Scheme == "http":
		port = "80"
	default:
		port = "443"
	}
	return []string{"KUBERNETES_SERVICE_HOST=" + s.url.Hostname(), "KUBERNETES_SERVICE_PORT=" + port}
}

// podKubeconfig authenticates with the token in dir as a pod of namespace.
func (s apiServer) podKubeconfig(namespace, dir string) clientcmdapi.Config {
	cluster := &clientcmdapi.Cluster{Server: s.url.String(), InsecureSkipTLSVerify: s.insecure}
	if len(s.caData) > 0 {
		cluster.CertificateAuthority = filepath.Join(dir, caFileName)
	}
	kc := clientcmdapi.NewConfig()
	kc.Clusters[kubeconfigEntryName] = cluster
	kc.AuthInfos[kubeconfigEntryName] = &clientcmdapi.AuthInfo{TokenFile: filepath.Join(dir, tokenFileName)}
	kc.Contexts[kubeconfigEntryName] = &clientcmdapi.Context{
		Cluster: kubeconfigEntryName, AuthInfo: kubeconfigEntryName, Namespace: namespace,
	}
	kc.CurrentContext = kubeconfigEntryName
	return *kc
}

// credentials are a pod's ServiceAccount files on disk.
type credentials struct {
	dir        string // token, ca.crt, namespace
	kubeconfig string
	renewAt    time.Time // when the token is to be replaced
}

// serviceAccountName is the pod's ServiceAccount, "default" when unset (the
// ServiceAccount admission plugin, which sets it, may be off).
func serviceAccountName(pod *corev1.Pod) string {
	if pod.Spec.ServiceAccountName != "" {
		return pod.Spec.ServiceAccountName
	}
	return defaultServiceAccount
}

// automount reports whether the pod gets credentials: the pod's
// automountServiceAccountToken wins over its ServiceAccount's; unset is yes.
func automount(pod *corev1.Pod, sa *corev1.ServiceAccount) bool {
	if pod.Spec.AutomountServiceAccountToken != nil {
		return *pod.Spec.AutomountServiceAccountToken
	}
	return sa == nil || sa.AutomountServiceAccountToken == nil || *sa.AutomountServiceAccountToken
}

// tokenRequest asks for a token that dies with the pod. The API server binds
// a token to a pod only when the pod names its ServiceAccount; the admission
// plugin that fills in "default" is off in envtest and `make dev`, so a pod
// naming none gets a token bound to nothing, which just expires.
func tokenRequest(pod *corev1.Pod) *authenticationv1.TokenRequest {
	tr := &authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{
		ExpirationSeconds: ptr.To[int64](tokenExpirationSeconds),
	}}
	if pod.Spec.ServiceAccountName != "" {
		tr.Spec.BoundObjectRef = &authenticationv1.BoundObjectReference{
			APIVersion: "v1", Kind: "Pod", Name: pod.Name, UID: pod.UID,
		}
	}
	return tr
}

// renewTime is when a token issued at issued and expiring at expires is
// replaced.
func renewTime(issued, expires time.Time) time.Time {
	return issued.Add(time.Duration(float64(expires.Sub(issued)) * tokenRenewFraction))
}

// mountCredentials writes the pod's ServiceAccount credentials under podDir,
// or returns nil when the pod is to have none.
func (a *agent) mountCredentials(ctx context.Context, pod *corev1.Pod, podDir string) (*credentials, error) {
	if !automount(pod, nil) {
		return nil, nil
	}
	name := serviceAccountName(pod)
	sa, err := a.client.CoreV1().ServiceAccounts(pod.Namespace).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return nil, fmt.Errorf("ServiceAccount %s: %w", name, err)
	}
	if !automount(pod, sa) {
		return nil, nil
	}
	c := &credentials{dir: filepath.Join(podDir, serviceAccountDirName), kubeconfig: filepath.Join(podDir, podKubeconfigName)}
	if c.renewAt, err = a.writeToken(ctx, pod, c.dir); err != nil {
		return nil, err
	}
	if err := a.writeCredentialFiles(pod.Namespace, c); err != nil {
		return nil, fmt.Errorf("writing the ServiceAccount credentials: %w", err)
	}
	return c, nil
}

// writeToken requests a fresh token for the pod and writes it into dir; it
// returns when to renew it.
func (a *agent) writeToken(ctx context.Context, pod *corev1.Pod, dir string) (time.Time, error) {
	name := serviceAccountName(pod)
	issued := time.Now()
	tr, err := a.client.CoreV1().ServiceAccounts(pod.Namespace).CreateToken(ctx, name, tokenRequest(pod), metav1.CreateOptions{})
	if err != nil {
		return time.Time{}, fmt.Errorf("requesting a token for ServiceAccount %s: %w", name, err)
	}
	if err := writeIfChanged(filepath.Join(dir, tokenFileName), []byte(tr.Status.Token)); err != nil {
		return time.Time{}, err
	}
	return renewTime(issued, tr.Status.ExpirationTimestamp.Time), nil
}

// writeCredentialFiles writes what stays the same for the pod's life: the
// CA, the namespace and the kubeconfig.
func (a *agent) writeCredentialFiles(namespace string, c *credentials) error {
	if len(a.api.caData) > 0 {
		if err := writeIfChanged(filepath.Join(c.dir, caFileName), a.api.caData); err != nil {
			return err
		}
	}
	if err := writeIfChanged(filepath.Join(c.dir, namespaceFileName), []byte(namespace)); err != nil {
		return err
	}
	return clientcmd.WriteToFile(a.api.podKubeconfig(namespace, c.dir), c.kubeconfig)
}
