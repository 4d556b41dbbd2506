// Command cluster runs a real Kubernetes on this machine (make cluster): a
// control plane and worker nodes, each node its own containerd, runc and
// kubelet built by hack/node.sh, inside network and mount namespaces it
// makes; nothing of it is on the host's network.
//
//	cluster up   [--dir .cluster] [--nodes 2] --control-plane DIR --node-bin DIR IMAGE.oci.tar...
//	cluster down [--dir .cluster] [--cgroup roomkeeper-cluster]
//	cluster load [--dir .cluster] [--nodes 2] --node-bin DIR IMAGE.oci.tar...
//
// up prints the path of the kubeconfig for the host (.cluster/kubeconfig),
// whose API server address is a forwarder on the host's loopback.
package main

import (
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
)

func main() {
	if err := run(os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "cluster:", err)
		os.Exit(1)
	}
}

func run(args []string) error {
	if len(args) == 0 {
		return errors.New("usage: cluster up|down|load [flags]")
	}
	fs := flag.NewFlagSet(args[0], flag.ContinueOnError)
	dir := fs.String("dir", ".cluster", "the cluster's state directory")
	cgroup := fs.String("cgroup", "roomkeeper-cluster", "the cgroup the nodes' pods go under, in every hierarchy")
	count := fs.Int("nodes", 2, "worker nodes")
	controlPlaneBin := fs.String("control-plane", "", "hack/controlplane.sh's directory")
	nodeBin := fs.String("node-bin", "", "hack/node.sh's directory")
	postgres := fs.String("postgres", "hack/postgres.sh", "up: the script that runs the cluster's Postgres")
	pid := fs.Int("pid", 0, "forward: a process in the namespace to forward into")
	listen := fs.String("listen", "", "forward: the host address to accept on")
	to := fs.String("to", "", "forward: the address inside the namespace")
	if err := fs.Parse(args[1:]); err != nil {
		return err
	}
	abs, err := filepath.Abs(*dir)
	if err != nil {
		return err
	}
	// Commands entering a mount namespace start in /: paths are absolute.
	if *postgres, err = filepath.Abs(*postgres); err != nil {
		return err
	}
	images, err := absolute(fs.Args())
	if err != nil {
		return err
	}
	st := state{dir: abs, cgroup: *cgroup}
	switch args[0] {
	case "forward":
		return forward(*listen, *pid, *to)
	case "down":
		return st.down()
	case "load":
		c := &cluster{state: st, nodeBin: *nodeBin, nodes: nodes(*count)}
		return c.load(images)
	case "up":
		c := &cluster{state: st, controlPlaneBin: *controlPlaneBin, nodeBin: *nodeBin, images: images, nodes: nodes(*count),
			postgresScript: *postgres}
		if err := c.up(); err != nil {
			return errors.Join(err, st.down())
		}
		fmt.Println(st.path("kubeconfig"))
		return nil
	}
	return fmt.Errorf("unknown command %q: up, down or load", args[0])
}

// absolute makes every path absolute.
func absolute(paths []string) ([]string, error) {
	out := make([]string, len(paths))
	for i, p := range paths {
		var err error
		if out[i], err = filepath.Abs(p); err != nil {
			return nil, err
		}
	}
	return out, nil
}
