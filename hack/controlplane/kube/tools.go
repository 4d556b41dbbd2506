//go:build tools

// Package kube pins the Kubernetes commands the project builds: the control
// plane (hack/controlplane.sh) and a real node's kubelet and kube-proxy
// (hack/node.sh).
package kube

import (
	_ "k8s.io/kubernetes/cmd/kube-apiserver"
	_ "k8s.io/kubernetes/cmd/kube-controller-manager"
	_ "k8s.io/kubernetes/cmd/kube-proxy"
	_ "k8s.io/kubernetes/cmd/kube-scheduler"
	_ "k8s.io/kubernetes/cmd/kubelet"
)
