package main

import (
	"embed"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/roomkeeper/roomkeeper/internal/testenv"
)

// pauseImage is the pods' sandbox image, built by make cluster from
// hack/pause and imported into every node.
const pauseImage = "docker.io/roomkeeper/pause:cluster"

// cluster is one run of make cluster.
type cluster struct {
	state           state
	pki             *pki
	controlPlaneBin string   // hack/controlplane.sh's directory
	nodeBin         string   // hack/node.sh's directory
	images          []string // OCI archives imported into every node
	postgresScript  string   // hack/postgres.sh
	nodes           []node
	cp              namespace
	nodeNS          map[string]namespace
}

// up starts the cluster: namespaces and their network, the control plane,
// and every node, and waits until the nodes are Ready.
func (c *cluster) up() error {
	if err := checkHost(); err != nil {
		return err
	}
	for _, dir := range []string{"pids", "logs"} {
		if err := os.MkdirAll(c.state.path(dir), 0o755); err != nil {
			return err
		}
	}
	if err := c.makePKI(); err != nil {
		return err
	}
	if err := os.MkdirAll(cniCacheDir, 0o755); err != nil {
		return err
	}
	var err error
	if c.cp, err = c.state.newNamespace("control-plane"); err != nil {
		return err
	}
	if err := c.cp.script(
		"ip link set lo up",
		"ip link add "+bridgeName+" type bridge",
		fmt.Sprintf("ip addr add %s/%d dev %s", controlPlane, networkPrefix, bridgeName),
		"ip link set "+bridgeName+" up",
		"echo 1 > /proc/sys/net/ipv4/ip_forward",
	); err != nil {
		return err
	}
	if err := c.startControlPlane(); err != nil {
		return err
	}
	if err := c.startDatabase(); err != nil {
		return err
	}
	c.nodeNS = map[string]namespace{}
	for _, n := range c.nodes {
		ns, err := c.state.newNamespace(n.name)
		if err != nil {
			return err
		}
		c.nodeNS[n.name] = ns
		if err := c.linkNode(n, ns); err != nil {
			return err
		}
		if err := c.startNode(n, ns); err != nil {
			return err
		}
	}
	if err := c.waitNodesReady(); err != nil {
		return err
	}
	if err := c.addOns(); err != nil {
		return err
	}
	return c.hostKubeconfig()
}

// hostKubeconfig starts a forwarder from a free port of the host's
// loopback to the API server and writes the kubeconfig that uses it.
func (c *cluster) hostKubeconfig() error {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	addr := l.Addr().String()
	_ = l.Close()
	self, err := os.Executable()
	if err != nil {
		return err
	}
	if _, err := c.state.detach("forward-apiserver", exec.Command(self, "forward", "--pid", strconv.Itoa(c.cp.pid),
		"--listen", addr, "--to", fmt.Sprintf("%s:%d", controlPlane, apiServerPort))); err != nil {
		return err
	}
	err = c.waitFor("the API server's forwarder", 10, func() error {
		conn, err := net.DialTimeout("tcp", addr, time.Second)
		if err == nil {
			_ = conn.Close()
		}
		return err
	})
	if err != nil {
		return err
	}
	return c.pki.kubeconfig(c.state.path("kubeconfig"), "https://"+addr, controlPlaneIdentities()[1])
}

// addOns are what every cluster runs besides its nodes: cluster DNS and
// a Gateway API implementation.
//
//go:embed manifests/*.yaml
var addOns embed.FS

// addOnDeployments are the add-ons' Deployments up waits for.
var addOnDeployments = []string{"kube-system/coredns", "traefik/traefik"}

// addOns installs the Gateway API's CRDs, applies manifests/ and waits for
// the add-ons' Deployments.
func (c *cluster) addOns() error {
	gatewayCRDs, err := testenv.GatewayAPICRDs()
	if err != nil {
		return err
	}
	if err := c.kubectl("apply", "--server-side", "-f", gatewayCRDs); err != nil {
		return err
	}
	if err := c.kubectl("wait", "--for=condition=Established", "crd", "--all", "--timeout=60s"); err != nil {
		return err
	}
	entries, err := addOns.ReadDir("manifests")
	if err != nil {
		return err
	}
	for _, e := range entries {
		raw, err := addOns.ReadFile("manifests/" + e.Name())
		if err != nil {
			return err
		}
		file := c.state.path("manifests", e.Name())
		if err := os.MkdirAll(filepath.Dir(file), 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(file, raw, 0o644); err != nil {
			return err
		}
		if err := c.kubectl("apply", "--server-side", "-f", file); err != nil {
			return err
		}
	}
	for _, d := range addOnDeployments {
		ns, name, _ := strings.Cut(d, "/")
		if err := c.kubectl("-n", ns, "rollout", "status", "deployment/"+name, "--timeout=120s"); err != nil {
			return err
		}
	}
	return nil
}

// kubectl runs kubectl as the cluster's admin inside the control plane's
// namespace.
func (c *cluster) kubectl(args ...string) error {
	return c.cp.run(append([]string{"kubectl", "--kubeconfig", c.state.path("admin.kubeconfig")}, args...)...)
}

// databasePort is Postgres' port at the control plane's address.
const databasePort = "5432"

// startDatabase runs Postgres in the control plane's namespace, outside
// the cluster as a managed database is, trusted from the pods' and the
// nodes' networks (tools such as roomload run beside the control plane),
// and writes its DSN to database-url.
func (c *cluster) startDatabase() error {
	if err := c.cp.run("env", "PGPORT="+databasePort, "PGLISTEN="+controlPlane, "PGTRUST="+podNetwork+","+nodeNetwork,
		c.postgresScript, "start", c.state.path("pg")); err != nil {
		return err
	}
	dsn := fmt.Sprintf("postgres://postgres@%s:%s/postgres?sslmode=disable", controlPlane, databasePort)
	return os.WriteFile(c.state.path("database-url"), []byte(dsn+"\n"), 0o644)
}

// makePKI issues every certificate and writes the components' kubeconfigs.
func (c *cluster) makePKI() error {
	var err error
	if c.pki, err = loadOrCreatePKI(c.state.path("pki")); err != nil {
		return err
	}
	ids := controlPlaneIdentities()
	for _, n := range c.nodes {
		ids = append(ids, nodeIdentities(n)...)
	}
	for _, id := range ids {
		if err := c.pki.issue(id); err != nil {
			return err
		}
	}
	if err := c.pki.serviceAccountKey(); err != nil {
		return err
	}
	for _, id := range controlPlaneIdentities()[1:] {
		if id.name == "apiserver-kubelet-client" {
			continue
		}
		if err := c.pki.kubeconfig(c.state.path(id.name+".kubeconfig"), apiServerURL(), id); err != nil {
			return err
		}
	}
	return nil
}

// waitNodesReady waits until every node is Ready.
func (c *cluster) waitNodesReady() error {
	for _, n := range c.nodes {
		err := c.waitFor(n.name+" Ready", 120, func() error {
			if err := c.state.running(n.name + "-kubelet"); err != nil {
				return stopWaiting{err}
			}
			return c.kubectl("wait", "--for=condition=Ready", "node/"+n.name, "--timeout=2s")
		})
		if err != nil {
			return err
		}
	}
	return nil
}

// waitFor polls check until it succeeds or seconds pass; the failure
// names what was waited for, the last error and where the logs are.
func (c *cluster) waitFor(what string, seconds int, check func() error) error {
	deadline := time.Now().Add(time.Duration(seconds) * time.Second)
	for {
		err := check()
		var stop stopWaiting
		switch {
		case err == nil:
			return nil
		case errors.As(err, &stop):
			return fmt.Errorf("%s: %w", what, stop.err)
		case time.Now().After(deadline):
			return fmt.Errorf("%s not ready after %ds (logs in %s): %w", what, seconds, c.state.path("logs"), err)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// stopWaiting ends a waitFor at once: what it waits for cannot come.
type stopWaiting struct{ err error }

func (s stopWaiting) Error() string { return s.err.Error() }

// running is nil while the process recorded as name runs, else an error
// with its log's last lines.
func (s state) running(name string) error {
	if pid, ok := s.pids()[name]; ok && alive(pid) {
		return nil
	}
	raw, _ := os.ReadFile(s.path("logs", name+".log"))
	lines := strings.Split(strings.TrimSpace(string(raw)), "\n")
	return fmt.Errorf("%s exited; the end of its log:\n%s", name, strings.Join(lines[max(0, len(lines)-5):], "\n"))
}

// down stops every process of the cluster and removes its cgroups;
// the namespaces, and the mounts in them, go with their holders.
func (s state) down() error {
	var errs []error
	pids := s.pids()
	for name, pid := range pids { // kubelets first: they would restart what is stopped
		if strings.HasSuffix(name, "-kubelet") {
			errs = append(errs, stop([]int{pid}, 10*time.Second))
		}
	}
	errs = append(errs, s.killCgroupTree(), s.killNamespaceProcesses(pids), s.stopAll(10*time.Second), s.removeCgroups())
	return errors.Join(errs...)
}

// cniCacheDir is libcni's cache and host-local's state, a path hard-coded
// in them: each node mounts a tmpfs of its own on it, which needs the
// directory on the host. up makes it when it is missing and down leaves
// it, empty: another cluster of this machine (make cluster's and
// test/cluster's) may have its nodes' mounts on it, and removing a
// directory detaches what other mount namespaces mounted there.
const cniCacheDir = "/var/lib/cni"

// killCgroupTree kills every process in the pods' cgroups.
func (s state) killCgroupTree() error {
	for range 20 {
		pids := s.cgroupProcs()
		if len(pids) == 0 {
			return nil
		}
		for _, pid := range pids {
			_ = killPid(pid)
		}
		time.Sleep(200 * time.Millisecond)
	}
	return fmt.Errorf("processes left in the cgroups of %s: %v", s.cgroup, s.cgroupProcs())
}

// cgroupProcs lists the processes under the cluster's pids cgroup.
func (s state) cgroupProcs() []int {
	var pids []int
	_ = filepath.WalkDir(filepath.Join("/sys/fs/cgroup/pids", s.cgroup), func(path string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() || d.Name() != "cgroup.procs" {
			return nil
		}
		raw, _ := os.ReadFile(path)
		for _, f := range strings.Fields(string(raw)) {
			var pid int
			if _, err := fmt.Sscan(f, &pid); err == nil {
				pids = append(pids, pid)
			}
		}
		return nil
	})
	return pids
}

// killNamespaceProcesses kills every process inside the cluster's mount
// namespaces but their holders (containerd's shims, which leave their
// parent's session).
func (s state) killNamespaceProcesses(pids map[string]int) error {
	holders := map[string]int{}
	for name, pid := range pids {
		if strings.HasPrefix(name, "ns-") {
			if ns, err := os.Readlink(fmt.Sprintf("/proc/%d/ns/mnt", pid)); err == nil {
				holders[ns] = pid
			}
		}
	}
	procs, _ := filepath.Glob("/proc/[0-9]*")
	var inside []int
	for _, p := range procs {
		var pid int
		if _, err := fmt.Sscan(filepath.Base(p), &pid); err != nil {
			continue
		}
		ns, err := os.Readlink(p + "/ns/mnt")
		if holder, ok := holders[ns]; err == nil && ok && holder != pid {
			inside = append(inside, pid)
		}
	}
	return stop(inside, 10*time.Second)
}

// removeCgroups removes the cluster's cgroups, deepest first.
func (s state) removeCgroups() error {
	roots, _ := filepath.Glob(filepath.Join("/sys/fs/cgroup/*", s.cgroup))
	var errs []error
	for _, root := range roots {
		var dirs []string
		_ = filepath.WalkDir(root, func(path string, d os.DirEntry, err error) error {
			if err == nil && d.IsDir() {
				dirs = append(dirs, path)
			}
			return nil
		})
		for i := len(dirs) - 1; i >= 0; i-- {
			if err := os.Remove(dirs[i]); err != nil {
				errs = append(errs, err)
			}
		}
	}
	return errors.Join(errs...)
}
