package main

import (
	"fmt"
	"net"
)

// The cluster's network, inside namespaces the cluster makes (nothing of
// it is on the host's network):
//
//	control plane namespace   bridge rkbr0 10.200.0.1/24: etcd, the API
//	                          server, the controller manager, the scheduler,
//	                          Postgres (outside the cluster, as a managed
//	                          database is)
//	node namespaces           eth0 10.200.0.1x/24 (a veth on rkbr0), each
//	                          its containerd, kubelet and kube-proxy, and
//	                          its pods on cni0 in 10.88.<x>.0/24
//
// Each namespace routes the other nodes' pod ranges to them, so pods reach
// each other and the control plane reaches every pod.
const (
	bridgeName    = "rkbr0"
	controlPlane  = "10.200.0.1"
	networkPrefix = 24
	serviceCIDR   = "10.96.0.0/16"
	// nodeNetwork is the control plane's and the nodes' network.
	nodeNetwork = "10.200.0.0/24"
	// podNetwork holds every node's pod range.
	podNetwork = "10.88.0.0/16"
	// kubernetesService is the first address of serviceCIDR, the
	// kubernetes.default Service.
	kubernetesService = "10.96.0.1"
	// clusterDNS is CoreDNS's Service address.
	clusterDNS    = "10.96.0.10"
	clusterDomain = "cluster.local"
	apiServerPort = 6443
)

// node is one worker.
type node struct {
	// name is its Node name, index its place (1, 2, ...).
	name  string
	index int
}

// nodes are the cluster's workers.
func nodes(n int) []node {
	out := make([]node, n)
	for i := range out {
		out[i] = node{name: fmt.Sprintf("roomkeeper-node-%d", i+1), index: i + 1}
	}
	return out
}

// ip is the node's address on the cluster bridge.
func (n node) ip() string { return fmt.Sprintf("10.200.0.%d", 10+n.index) }

// podCIDR is the node's pods' range.
func (n node) podCIDR() string { return fmt.Sprintf("10.88.%d.0/24", n.index) }

// veth is the host end of the node's link, in the control plane's
// namespace.
func (n node) veth() string { return fmt.Sprintf("rkveth%d", n.index) }

// apiServerURL is where everything in the cluster's namespaces reaches
// the API server.
func apiServerURL() string { return fmt.Sprintf("https://%s:%d", controlPlane, apiServerPort) }

// The identities of the cluster's PKI.
func controlPlaneIdentities() []identity {
	return []identity{
		{name: "apiserver", commonName: "kube-apiserver", server: true,
			dnsNames: []string{"kubernetes", "kubernetes.default", "kubernetes.default.svc",
				"kubernetes.default.svc." + clusterDomain, "localhost"},
			addresses: []net.IP{net.ParseIP("127.0.0.1"), net.ParseIP(kubernetesService), net.ParseIP(controlPlane)}},
		{name: "admin", commonName: "kubernetes-admin", organizations: []string{"system:masters"}},
		{name: "apiserver-kubelet-client", commonName: "kube-apiserver-kubelet-client", organizations: []string{"system:masters"}},
		{name: "controller-manager", commonName: "system:kube-controller-manager"},
		{name: "scheduler", commonName: "system:kube-scheduler"},
		{name: "kube-proxy", commonName: "system:kube-proxy"},
	}
}

// nodeIdentities are a node's kubelet's: its serving certificate (the API
// server checks it for logs and exec) and its client certificate (the
// Node authorizer knows it by system:node:<name>).
func nodeIdentities(n node) []identity {
	return []identity{
		{name: n.name + "-kubelet", commonName: n.name, server: true,
			dnsNames: []string{n.name, "localhost"}, addresses: []net.IP{net.ParseIP(n.ip()), net.ParseIP("127.0.0.1")}},
		{name: n.name + "-client", commonName: "system:node:" + n.name, organizations: []string{"system:nodes"}},
	}
}
