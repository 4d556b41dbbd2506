// Command localnode is a development node agent: it registers a Node with
// the API server and runs the pods bound to it as local processes, each on
// its own loopback address. It is what `make dev` uses instead of a kubelet
// and a container runtime. It is a development tool, not part of the product.
//
// Usage:
//
//	localnode --kubeconfig PATH --node-name roomkeeper-local --workdir DIR \
//	    --image-map roomkeeper/roomserver=/abs/path/bin/roomserver[,img=path...] \
//	    [--address-prefix 127.0.10.] [--node-ip 127.0.0.1]
//
// Every image a pod uses must be mapped to a local binary, by exact reference
// or by its name without tag or digest. The binary runs with the container's
// args, with volume mount paths replaced by local directories under
// <workdir>/<namespace>/<pod>/volumes and `=:PORT` listen flags bound to the
// pod's own address.
//
// Pods act as their ServiceAccount, as on a kubelet: the agent requests a
// token (bound to the pod when the pod names its ServiceAccount), writes it with the API server's CA and the
// namespace under <workdir>/<namespace>/<pod>/serviceaccount, renews it
// before it expires, and sets KUBECONFIG to a per-pod kubeconfig that reads
// that token file. automountServiceAccountToken: false (on the pod or its
// ServiceAccount) gives the process no credentials. The agent's own
// kubeconfig is never handed to a pod.
//
// A container port with a hostPort is forwarded, as the CNI portmap plugin
// does: the agent listens on --node-ip at that port and relays each TCP
// connection to the pod while its process runs. --node-ip is also the
// Node's InternalIP and the pods' hostIP, so two dev clusters on one machine
// can each have their own node address.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/netip"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/roomkeeper/roomkeeper/hack/internal/devlog"
	"github.com/roomkeeper/roomkeeper/internal/kubewatch"
)

// config is the agent's command line.
type config struct {
	kubeconfig    string            // the agent's kubeconfig; pods get their own
	nodeName      string            // the Node to register and serve
	workdir       string            // root of the per-pod directories
	images        map[string]string // image reference or name -> absolute binary path
	addressPrefix string            // pod addresses are prefix + 2..254
	nodeIP        string            // the Node's address: hostIP of its pods, where host ports listen
	podNice       int               // the nice value pods' processes run at
	podCgroup     string            // the CPU cgroup pods' processes run in ("": the node's own)
	deletedLogs   string            // where a deleted pod's log is kept ("": not kept)
}

// defaultPodNice is --pod-nice: under contention a pod process at nice 10
// gets about a tenth of the CPU a process of the node's own priority gets
// (the kernel's weight 110 against 1024), so a few busy pods leave the
// API server, the manager and Postgres their share. Many pods busy at
// once still outweigh them together, and SCHED_IDLE, tried, starved the
// pods instead; a kubelet puts all pods in one cgroup, as --pod-cgroup
// does (docs/benchmarks.md, "Density").
const defaultPodNice = 10

func main() {
	kubewatch.ListThenWatch()
	cfg, err := parseFlags(os.Args[1:], os.Stderr)
	if err != nil {
		fmt.Fprintln(os.Stderr, "localnode:", err)
		os.Exit(2)
	}
	if err := runUntilSignal(cfg); err != nil {
		fmt.Fprintln(os.Stderr, "localnode:", err)
		os.Exit(1)
	}
}

// runUntilSignal runs the agent until SIGINT or SIGTERM.
func runUntilSignal(cfg config) error {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	return run(ctx, cfg, devlog.New(os.Stderr))
}

// parseFlags reads and checks the command line.
func parseFlags(args []string, out io.Writer) (config, error) {
	fs := flag.NewFlagSet("localnode", flag.ContinueOnError)
	fs.SetOutput(out)
	var cfg config
	var imageMap string
	fs.StringVar(&cfg.kubeconfig, "kubeconfig", "", "kubeconfig of the cluster to join (required); pods get ServiceAccount tokens instead")
	fs.StringVar(&cfg.nodeName, "node-name", "roomkeeper-local", "name of the Node to register")
	fs.StringVar(&cfg.workdir, "workdir", "", "directory for pod volumes and logs (required)")
	fs.StringVar(&imageMap, "image-map", "", "comma-separated image=/abs/binary pairs (required)")
	fs.StringVar(&cfg.addressPrefix, "address-prefix", "127.0.10.", "pods get the loopback addresses PREFIX2 to PREFIX254")
	fs.StringVar(&cfg.nodeIP, "node-ip", "127.0.0.1", "the node's address: its InternalIP, the pods' hostIP and where host ports listen")
	fs.IntVar(&cfg.podNice, "pod-nice", defaultPodNice, "the nice value (0-19) pods' processes run at: the node and the control plane on the same CPUs keep their share when pods fill them, as a kubelet's reserved CPU does")
	fs.StringVar(&cfg.podCgroup, "pod-cgroup", "", "a CPU cgroup, by its name below the CPU hierarchy's root, that all pods' processes run in, as a kubelet's kubepods cgroup: together they weigh as one process of the node's priority (empty: the node's own cgroup)")
	fs.StringVar(&cfg.deletedLogs, "deleted-pod-logs", "", "directory that keeps a deleted pod's log, as NAMESPACE_NAME_UID.log (empty: removed with the pod)")
	if err := fs.Parse(args); err != nil {
		return config{}, err
	}
	if cfg.podNice < 0 || cfg.podNice > 19 {
		return config{}, fmt.Errorf("--pod-nice %d: want 0 (as the node) to 19 (the least CPU)", cfg.podNice)
	}
	if cfg.kubeconfig == "" || cfg.workdir == "" || cfg.nodeName == "" {
		return config{}, errors.New("--kubeconfig, --workdir and --node-name are required")
	}
	images, err := parseImageMap(imageMap)
	if err != nil {
		return config{}, err
	}
	cfg.images = images
	if !validPrefix(cfg.addressPrefix) {
		return config{}, fmt.Errorf("--address-prefix %q: want three octets and a trailing dot, like %q", cfg.addressPrefix, "127.0.10.")
	}
	if _, err := netip.ParseAddr(cfg.nodeIP); err != nil {
		return config{}, fmt.Errorf("--node-ip %q: want an IP address, like %q", cfg.nodeIP, "127.0.11.1")
	}
	for _, p := range []*string{&cfg.kubeconfig, &cfg.workdir, &cfg.deletedLogs} {
		if *p == "" {
			continue
		}
		if *p, err = filepath.Abs(*p); err != nil {
			return config{}, err
		}
	}
	return cfg, nil
}

// parseImageMap reads "img=/abs/path,img2=/abs/path2".
func parseImageMap(s string) (map[string]string, error) {
	images := map[string]string{}
	for _, pair := range strings.Split(s, ",") {
		if strings.TrimSpace(pair) == "" {
			continue
		}
		image, path, ok := strings.Cut(pair, "=")
		image, path = strings.TrimSpace(image), strings.TrimSpace(path)
		if !ok || image == "" || !filepath.IsAbs(path) {
			return nil, fmt.Errorf("--image-map entry %q: want image=/absolute/path", pair)
		}
		images[image] = path
	}
	if len(images) == 0 {
		return nil, errors.New("--image-map is required: say which binary runs each image")
	}
	return images, nil
}
