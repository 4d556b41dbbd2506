package main

import (
	"fmt"
	"path/filepath"
	"strconv"
)

// startControlPlane runs etcd, the API server, the controller manager and
// the scheduler in the control plane's namespace, from hack/controlplane.sh's
// binaries.
func (c *cluster) startControlPlane() error {
	bin := func(name string) string { return filepath.Join(c.controlPlaneBin, name) }
	pki := c.pki.path
	if err := c.state.start(c.cp, "etcd", bin("etcd"), "--name=default", "--data-dir="+c.state.path("etcd"),
		"--listen-client-urls=http://127.0.0.1:2379", "--advertise-client-urls=http://127.0.0.1:2379",
		"--listen-peer-urls=http://127.0.0.1:2380", "--initial-advertise-peer-urls=http://127.0.0.1:2380",
		"--initial-cluster=default=http://127.0.0.1:2380", "--listen-metrics-urls=http://127.0.0.1:2381",
		"--unsafe-no-fsync"); err != nil {
		return err
	}
	if err := c.state.start(c.cp, "kube-apiserver", bin("kube-apiserver"),
		"--etcd-servers=http://127.0.0.1:2379",
		"--advertise-address="+controlPlane, "--bind-address=0.0.0.0", "--secure-port="+strconv.Itoa(apiServerPort),
		"--tls-cert-file="+pki("apiserver.crt"), "--tls-private-key-file="+pki("apiserver.key"),
		"--client-ca-file="+pki("ca.crt"),
		"--service-account-issuer=https://kubernetes.default.svc."+clusterDomain,
		"--service-account-key-file="+pki("sa.pub"), "--service-account-signing-key-file="+pki("sa.key"),
		"--service-cluster-ip-range="+serviceCIDR,
		"--authorization-mode=Node,RBAC",
		// PodSecurity is on by default; namespaces opt into a level by label.
		"--enable-admission-plugins=NodeRestriction,ServiceAccount",
		"--allow-privileged=true",
		"--kubelet-client-certificate="+pki("apiserver-kubelet-client.crt"),
		"--kubelet-client-key="+pki("apiserver-kubelet-client.key"),
		"--kubelet-certificate-authority="+pki("ca.crt"),
		"--kubelet-preferred-address-types=InternalIP,Hostname"); err != nil {
		return err
	}
	if err := c.waitAPIServer(); err != nil {
		return err
	}
	kcm := c.state.path("controller-manager.kubeconfig")
	if err := c.state.start(c.cp, "kube-controller-manager", bin("kube-controller-manager"),
		"--kubeconfig="+kcm, "--authentication-kubeconfig="+kcm, "--authorization-kubeconfig="+kcm,
		"--bind-address=127.0.0.1", "--leader-elect=false",
		"--controllers=*,bootstrapsigner,tokencleaner", "--use-service-account-credentials=true",
		"--service-account-private-key-file="+pki("sa.key"), "--root-ca-file="+pki("ca.crt"),
		"--cluster-signing-cert-file="+pki("ca.crt"), "--cluster-signing-key-file="+pki("ca.key"),
		"--service-cluster-ip-range="+serviceCIDR); err != nil {
		return err
	}
	sched := c.state.path("scheduler.kubeconfig")
	return c.state.start(c.cp, "kube-scheduler", bin("kube-scheduler"),
		"--kubeconfig="+sched, "--authentication-kubeconfig="+sched, "--authorization-kubeconfig="+sched,
		"--bind-address=127.0.0.1", "--leader-elect=false")
}

// waitAPIServer waits until the API server answers /readyz inside the
// namespace.
func (c *cluster) waitAPIServer() error {
	return c.waitFor("the API server", 90, func() error {
		return c.cp.run("curl", "-sf", "--cacert", c.pki.path("ca.crt"), "--cert", c.pki.path("admin.crt"),
			"--key", c.pki.path("admin.key"), fmt.Sprintf("https://%s:%d/readyz", controlPlane, apiServerPort))
	})
}
