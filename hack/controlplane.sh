#!/usr/bin/env bash
# Builds the local control plane (etcd, kube-apiserver, kube-scheduler,
# kube-controller-manager) from source through the Go module proxy and caches
# the binaries under bin/controlplane/<version>/. Prints that directory, which
# is what envtest wants in KUBEBUILDER_ASSETS.
#
# Usage: hack/controlplane.sh [--print-dir]
#   --print-dir  print the cache directory without building anything.
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
kube_version=$(awk '/^require k8s.io\/kubernetes /{print $3}' "$root/hack/controlplane/kube/go.mod")
etcd_version=$(awk '/^require go.etcd.io\/etcd\/server\/v3 /{print $3}' "$root/hack/controlplane/etcd/go.mod")
dir="$root/bin/controlplane/kube-${kube_version}-etcd-${etcd_version}"

if [ "${1:-}" = "--print-dir" ]; then
  echo "$dir"
  exit 0
fi

build() { # module-dir output package
  local out="$dir/$2"
  [ -x "$out" ] && return 0
  echo "building $2 (cached afterwards in $dir)" >&2
  (cd "$root/hack/controlplane/$1" && CGO_ENABLED=0 go build -trimpath -ldflags='-s -w' -o "$out.tmp" "$3")
  mv "$out.tmp" "$out"
}

mkdir -p "$dir"
build etcd etcd go.etcd.io/etcd/server/v3
build kube kube-apiserver k8s.io/kubernetes/cmd/kube-apiserver
build kube kube-scheduler k8s.io/kubernetes/cmd/kube-scheduler
build kube kube-controller-manager k8s.io/kubernetes/cmd/kube-controller-manager
echo "$dir"
