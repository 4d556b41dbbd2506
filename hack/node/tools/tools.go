//go:build tools

// Package tools pins the node components hack/node.sh builds from their Go
// modules besides Kubernetes' own: the CNI plugins and crictl.
package tools

import (
	_ "github.com/containernetworking/plugins/plugins/ipam/host-local"
	_ "github.com/containernetworking/plugins/plugins/main/bridge"
	_ "github.com/containernetworking/plugins/plugins/main/loopback"
	_ "github.com/containernetworking/plugins/plugins/meta/portmap"
	_ "sigs.k8s.io/cri-tools/cmd/crictl"
)
