package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// pinnedSysctls are what a kubelet wants of the kernel and would write,
// host-wide, when they differ: each node's mount namespace shows it files
// holding these values instead, so the host keeps its own.
var pinnedSysctls = map[string]string{
	"vm/overcommit_memory": "1", "vm/panic_on_oom": "0", "kernel/panic": "10", "kernel/panic_on_oops": "1",
	"kernel/keys/root_maxkeys": "1000000", "kernel/keys/root_maxbytes": "25000000",
}

// nodeDir is a node's own files.
func (c *cluster) nodeDir(n node, parts ...string) string {
	return c.state.path(append([]string{n.name}, parts...)...)
}

// linkNode wires a node's namespace to the control plane's bridge and
// gives it what a node's processes expect of a host: its own /run,
// /var/log and /var/lib/cni (hard-coded paths of containerd, the kubelet
// and libcni) and the pinned sysctls.
func (c *cluster) linkNode(n node, ns namespace) error {
	if err := c.cp.script(
		fmt.Sprintf("ip link add %s type veth peer name eth0 netns %d", n.veth(), ns.pid),
		fmt.Sprintf("ip link set %s master %s up", n.veth(), bridgeName),
		fmt.Sprintf("ip route add %s via %s", n.podCIDR(), n.ip()),
	); err != nil {
		return err
	}
	lines := []string{
		"ip link set lo up",
		fmt.Sprintf("ip addr add %s/%d dev eth0", n.ip(), networkPrefix),
		"ip link set eth0 up",
		"ip route add default via " + controlPlane,
		"echo 1 > /proc/sys/net/ipv4/ip_forward",
		"mount -t tmpfs tmpfs /run",
		"mount -t tmpfs tmpfs /var/log",
		"mount -t tmpfs tmpfs /var/lib/cni",
	}
	for _, other := range c.nodes {
		if other != n {
			lines = append(lines, fmt.Sprintf("ip route add %s via %s", other.podCIDR(), other.ip()))
		}
	}
	if err := os.MkdirAll(c.nodeDir(n, "sysctl"), 0o755); err != nil {
		return err
	}
	for key, value := range pinnedSysctls {
		file := c.nodeDir(n, "sysctl", strings.ReplaceAll(key, "/", "."))
		if err := os.WriteFile(file, []byte(value+"\n"), 0o644); err != nil {
			return err
		}
		lines = append(lines, fmt.Sprintf("mount --bind %s /proc/sys/%s", file, key))
	}
	return ns.script(lines...)
}

// makeCgroups creates the node's cgroup root in every v1 hierarchy (the
// kubelet refuses a missing one; cpuset needs its parent's cpus and mems).
func (s state) makeCgroups(n node) error {
	hierarchies, _ := filepath.Glob("/sys/fs/cgroup/*")
	for _, h := range hierarchies {
		if _, err := os.Stat(filepath.Join(h, "cgroup.procs")); err != nil {
			continue
		}
		for _, dir := range []string{filepath.Join(h, s.cgroup), filepath.Join(h, s.cgroup, n.name)} {
			if err := os.MkdirAll(dir, 0o755); err != nil {
				return err
			}
			for _, f := range []string{"cpuset.cpus", "cpuset.mems"} {
				parent, err := os.ReadFile(filepath.Join(filepath.Dir(dir), f))
				if err != nil {
					continue
				}
				if err := os.WriteFile(filepath.Join(dir, f), parent, 0o644); err != nil {
					return fmt.Errorf("%s: %w", filepath.Join(dir, f), err)
				}
			}
		}
	}
	return nil
}

// containerdConfig is a node's containerd configuration: its own root,
// the node's CNI network, our pause image (nothing is pulled), and
// restrict_oom_score_adj (a machine without CAP_SYS_RESOURCE cannot lower
// a process's OOM score, which the pause sandbox asks for).
func (c *cluster) containerdConfig(n node) string {
	return fmt.Sprintf(`version = 3
root = %q
state = "/run/containerd"
[grpc]
  address = "/run/containerd/containerd.sock"
[plugins.'io.containerd.cri.v1.images']
  snapshotter = "overlayfs"
  [plugins.'io.containerd.cri.v1.images'.pinned_images]
    sandbox = %q
[plugins.'io.containerd.cri.v1.runtime']
  restrict_oom_score_adj = true
  [plugins.'io.containerd.cri.v1.runtime'.containerd]
    default_runtime_name = "runc"
    [plugins.'io.containerd.cri.v1.runtime'.containerd.runtimes.runc]
      runtime_type = "io.containerd.runc.v2"
      [plugins.'io.containerd.cri.v1.runtime'.containerd.runtimes.runc.options]
        BinaryName = %q
        SystemdCgroup = false
  [plugins.'io.containerd.cri.v1.runtime'.cni]
    bin_dirs = [%q]
    conf_dir = %q
`, c.nodeDir(n, "containerd"), pauseImage, filepath.Join(c.nodeBin, "runc"),
		filepath.Join(c.nodeBin, "cni"), c.nodeDir(n, "cni"))
}

// cniConfig is the node's pod network: a bridge with its pod range, and
// portmap for hostPort.
func cniConfig(n node) string {
	return fmt.Sprintf(`{
  "cniVersion": "1.0.0",
  "name": "roomkeeper",
  "plugins": [
    {"type": "bridge", "bridge": "cni0", "isGateway": true, "ipMasq": false, "hairpinMode": true,
     "ipam": {"type": "host-local", "ranges": [[{"subnet": %q}]], "routes": [{"dst": "0.0.0.0/0"}]}},
    {"type": "portmap", "capabilities": {"portMappings": true}}
  ]
}
`, n.podCIDR())
}

// kubeletConfig is the node's KubeletConfiguration.
func (c *cluster) kubeletConfig(n node) string {
	return fmt.Sprintf(`apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
failCgroupV1: false
cgroupDriver: cgroupfs
cgroupRoot: /%s/%s
containerRuntimeEndpoint: unix:///run/containerd/containerd.sock
failSwapOn: false
address: %s
readOnlyPort: 0
authentication:
  anonymous: {enabled: false}
  webhook: {enabled: true}
  x509: {clientCAFile: %s}
authorization: {mode: Webhook}
tlsCertFile: %s
tlsPrivateKeyFile: %s
clusterDomain: %s
clusterDNS: [%s]
resolvConf: %s
podCIDR: %s
evictionHard: {memory.available: 100Mi, nodefs.available: 1%%, imagefs.available: 1%%, nodefs.inodesFree: 1%%}
imageGCHighThresholdPercent: 100
imageGCLowThresholdPercent: 99
`, c.state.cgroup, n.name, n.ip(), c.pki.path("ca.crt"), c.pki.path(n.name+"-kubelet.crt"), c.pki.path(n.name+"-kubelet.key"),
		clusterDomain, clusterDNS, c.nodeDir(n, "resolv.conf"), n.podCIDR())
}

// startNode writes the node's configuration and starts its containerd,
// imports the images, and starts its kubelet.
func (c *cluster) startNode(n node, ns namespace) error {
	if err := c.state.makeCgroups(n); err != nil {
		return err
	}
	files := map[string]string{
		"containerd.toml":            c.containerdConfig(n),
		"cni/10-roomkeeper.conflist": cniConfig(n),
		"kubelet.yaml":               c.kubeletConfig(n),
		// Pods resolve through CoreDNS; nothing outside the cluster answers.
		"resolv.conf": "nameserver " + clusterDNS + "\n",
	}
	for name, content := range files {
		path := c.nodeDir(n, name)
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
			return err
		}
	}
	kubeconfig := c.nodeDir(n, "kubelet.kubeconfig")
	if err := c.pki.kubeconfig(kubeconfig, apiServerURL(), nodeIdentities(n)[1]); err != nil {
		return err
	}
	bin := func(name string) string { return filepath.Join(c.nodeBin, name) }
	if err := c.state.start(ns, n.name+"-containerd", bin("containerd"), "--config", c.nodeDir(n, "containerd.toml")); err != nil {
		return err
	}
	if err := c.waitFor(n.name+"'s containerd", 30, func() error { return ns.run(c.ctr("version")...) }); err != nil {
		return err
	}
	if err := c.importImages(ns, c.images); err != nil {
		return err
	}
	if err := c.state.start(ns, n.name+"-kubelet", bin("kubelet"), "--config="+c.nodeDir(n, "kubelet.yaml"),
		"--kubeconfig="+kubeconfig, "--root-dir="+c.nodeDir(n, "kubelet"), "--hostname-override="+n.name,
		"--node-ip="+n.ip(), "--v=1"); err != nil {
		return err
	}
	return c.startKubeProxy(n, ns)
}

// ctr is a ctr command line for the containerd of the namespace it runs
// in.
func (c *cluster) ctr(args ...string) []string {
	return append([]string{filepath.Join(c.nodeBin, "ctr"), "-a", "/run/containerd/containerd.sock"}, args...)
}

// importImages imports OCI archives into the containerd of ns, where the
// kubelet finds them under the names they carry: nothing is pulled.
func (c *cluster) importImages(ns namespace, images []string) error {
	for _, image := range images {
		if err := ns.run(c.ctr("-n", "k8s.io", "images", "import", "--no-unpack=false", image)...); err != nil {
			return err
		}
	}
	return nil
}

// load imports OCI archives into every node of a running cluster (a new
// build of an image, to roll out).
func (c *cluster) load(images []string) error {
	pids := c.state.pids()
	for _, n := range c.nodes {
		pid, ok := pids["ns-"+n.name]
		if !ok || !alive(pid) {
			return fmt.Errorf("node %s is not running: make cluster first", n.name)
		}
		if err := c.importImages(namespace{name: n.name, pid: pid}, images); err != nil {
			return err
		}
	}
	return nil
}

// startKubeProxy runs the node's kube-proxy (nftables): Services' cluster
// addresses and node ports, for the node's pods and the node itself. The
// conntrack limits are the kernel's (a network namespace cannot set
// them).
func (c *cluster) startKubeProxy(n node, ns namespace) error {
	return c.state.start(ns, n.name+"-kube-proxy", filepath.Join(c.nodeBin, "kube-proxy"),
		"--kubeconfig="+c.state.path("kube-proxy.kubeconfig"), "--hostname-override="+n.name,
		"--proxy-mode=nftables", "--cluster-cidr="+podNetwork, "--nodeport-addresses="+n.ip()+"/32",
		"--metrics-bind-address=127.0.0.1:10249", "--healthz-bind-address=127.0.0.1:10256",
		"--conntrack-max-per-core=0", "--conntrack-tcp-timeout-established=0s", "--conntrack-tcp-timeout-close-wait=0s")
}
