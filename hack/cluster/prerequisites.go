package main

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
)

// commands are the host's tools the cluster uses, with the Debian package
// of each: installed with apt-get when missing (as root), else named.
var commands = []struct{ name, pkg string }{
	{"nsenter", "util-linux"}, {"unshare", "util-linux"}, {"ip", "iproute2"},
	{"nft", "nftables"}, // kube-proxy's nftables mode runs it
	{"curl", "curl"},
}

// checkHost makes sure the tools are there and the kernel has what the
// nodes need, naming what is missing.
func checkHost() error {
	if os.Geteuid() != 0 {
		return errors.New("make cluster needs root: it makes namespaces, cgroups and mounts")
	}
	for _, c := range commands {
		if _, err := exec.LookPath(c.name); err == nil {
			continue
		}
		if _, err := exec.LookPath("apt-get"); err != nil {
			return fmt.Errorf("%s is missing: install Debian's %s", c.name, c.pkg)
		}
		if out, err := exec.Command("apt-get", "install", "-y", c.pkg).CombinedOutput(); err != nil {
			return fmt.Errorf("%s is missing and apt-get install %s failed: %w\n%s", c.name, c.pkg, err, out)
		}
	}
	filesystems, err := os.ReadFile("/proc/filesystems")
	if err != nil {
		return err
	}
	if !strings.Contains(string(filesystems), "overlay") {
		return errors.New("the kernel has no overlay filesystem (containerd's snapshotter needs it): modprobe overlay")
	}
	if _, err := os.Stat("/sys/fs/cgroup/pids/cgroup.procs"); err != nil {
		return errors.New("no cgroup v1 pids hierarchy at /sys/fs/cgroup/pids: make cluster runs its nodes on cgroup v1 (the only kind proven here)")
	}
	for _, ns := range []string{"net", "mnt"} {
		if _, err := os.Stat("/proc/self/ns/" + ns); err != nil {
			return fmt.Errorf("the kernel has no %s namespaces", ns)
		}
	}
	return nil
}
