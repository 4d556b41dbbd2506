#!/usr/bin/env bash
# Builds what a real Kubernetes node needs, from source through the Go
# module proxy (nothing prebuilt is downloaded), and caches it under
# bin/node/<versions>/:
#
#   kubelet, kube-proxy           the same k8s.io/kubernetes module as the
#                                 control plane (hack/controlplane/kube)
#   runc                          cgo, with seccomp (libseccomp-dev), so pods
#                                 keep the RuntimeDefault profile
#   containerd, containerd-shim-runc-v2, ctr
#   cni/{bridge,host-local,loopback,portmap}, crictl   (hack/node/tools)
#   coredns, traefik              cluster DNS and the Gateway API
#                                 implementation, run as pods by make cluster
#
# Prints the directory. Usage: hack/node.sh [--print-dir]
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
kube_version=$(awk '/^require k8s.io\/kubernetes /{print $3}' "$root/hack/controlplane/kube/go.mod")
runc_version=v1.3.3
containerd_version=v2.4.2
coredns_version=v1.13.1
traefik_version=v3.7.13
dir="$root/bin/node/kube-${kube_version}-runc-${runc_version}-containerd-${containerd_version}-coredns-${coredns_version}-traefik-${traefik_version}"

if [ "${1:-}" = "--print-dir" ]; then
  echo "$dir"
  exit 0
fi

need() { # command debian-package
  command -v "$1" >/dev/null 2>&1 && return 0
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
    echo "installing $2 (apt-get) for $1" >&2
    apt-get install -y "$2" >/dev/null
  else
    echo "hack/node.sh: $1 is missing: install Debian's $2" >&2
    exit 1
  fi
}

# runc's seccomp support links libseccomp; its headers come from Debian.
seccomp_headers() {
  [ -f /usr/include/seccomp.h ] && return 0
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
    echo "installing libseccomp-dev (apt-get) for runc's seccomp support" >&2
    apt-get install -y libseccomp-dev >/dev/null
  else
    echo "hack/node.sh: /usr/include/seccomp.h is missing: install Debian's libseccomp-dev" >&2
    exit 1
  fi
}

kube_ldflags="-s -w -X k8s.io/component-base/version.gitVersion=$kube_version \
-X k8s.io/component-base/version.gitMajor=$(echo "$kube_version" | cut -d. -f1 | tr -d v) \
-X k8s.io/component-base/version.gitMinor=$(echo "$kube_version" | cut -d. -f2) \
-X k8s.io/component-base/version.gitTreeState=clean"

build() { # module-dir output package [ldflags]
  local out="$dir/$2"
  [ -x "$out" ] && return 0
  echo "building $2 (cached afterwards in $dir)" >&2
  mkdir -p "$(dirname "$out")"
  (cd "$1" && CGO_ENABLED=0 go build -trimpath -ldflags="${4:--s -w}" -o "$out.tmp" "$3")
  mv "$out.tmp" "$out"
}

# module_source copies a module's source out of the module cache, writable,
# and prints where: its own go.mod (replaces and all) decides its build.
# The directory starts with _ so that the project's ./... (go vet,
# controller-gen) never walks into it.
module_source() { # module version
  local src="$dir/_src/${1//\//_}"
  if [ ! -d "$src" ]; then
    local cached
    cached=$(go mod download -json "$1@$2" | awk -F'"' '/"Dir"/{print $4}')
    mkdir -p "$dir/_src"
    cp -r "$cached" "$src.tmp" && chmod -R u+w "$src.tmp" && mv "$src.tmp" "$src"
  fi
  echo "$src"
}

build_from_source() { # module version output package [cgo] [tags]
  local out="$dir/$3"
  [ -x "$out" ] && return 0
  local src
  src=$(module_source "$1" "$2")
  echo "building $3 from $1@$2 (cached afterwards in $dir)" >&2
  (cd "$src" && CGO_ENABLED="${5:-0}" go build -mod=mod -trimpath -ldflags='-s -w' -tags "${6:-}" -o "$out.tmp" "$4")
  mv "$out.tmp" "$out"
}

mkdir -p "$dir"
build "$root/hack/controlplane/kube" kubelet k8s.io/kubernetes/cmd/kubelet "$kube_ldflags"
build "$root/hack/controlplane/kube" kube-proxy k8s.io/kubernetes/cmd/kube-proxy "$kube_ldflags"
for p in main/bridge ipam/host-local main/loopback meta/portmap; do
  build "$root/hack/node/tools" "cni/$(basename "$p")" "github.com/containernetworking/plugins/plugins/$p"
done
build "$root/hack/node/tools" crictl sigs.k8s.io/cri-tools/cmd/crictl

if [ ! -x "$dir/runc" ]; then
  need gcc gcc
  seccomp_headers
  src=$(module_source github.com/opencontainers/runc "$runc_version")
  # The module's zip lacks the directory its selinux replace points to.
  sed -i '/^replace github.com\/opencontainers\/selinux/d' "$src/go.mod"
  build_from_source github.com/opencontainers/runc "$runc_version" runc . 1 seccomp
fi
for c in containerd containerd-shim-runc-v2 ctr; do
  build_from_source github.com/containerd/containerd/v2 "$containerd_version" "$c" "./cmd/$c" 0 "no_btrfs no_zfs"
done
build_from_source github.com/coredns/coredns "$coredns_version" coredns .
if [ ! -x "$dir/traefik" ]; then
  src=$(module_source github.com/traefik/traefik/v3 "$traefik_version")
  if [ ! -f "$src/.roomkeeper-patched" ]; then
    # Traefik's module builds here only with four changes, each for a part
    # the Go module proxy lacks; none touches the Gateway API provider:
    # - its dynamic-configuration extension point is a nested module the
    #   zip leaves out: hack/node/traefikext is that module, empty as in
    #   its open-source build;
    # - its go-http-auth fork is not served: the upstream release instead,
    #   with a password check of our own (bcrypt and {SHA} htpasswd hashes)
    #   and digest auth's stale answer made a plain one;
    # - a dozen of lego's DNS providers' SDKs are not served: ACME DNS
    #   challenges are left out (an error names the provider asked for).
    sed -i "s|^replace github.com/traefik/traefik/dynamic/ext => .*|replace github.com/traefik/traefik/dynamic/ext => $root/hack/node/traefikext|" "$src/go.mod"
    sed -i 's|^\tgithub.com/abbot/go-http-auth => github.com/containous/go-http-auth .*|\tgithub.com/abbot/go-http-auth => github.com/abbot/go-http-auth v0.4.0|' "$src/go.mod"
    cp "$root/hack/node/traefik/checksecret.go.txt" "$src/pkg/middlewares/auth/zz_roomkeeper_checksecret.go" # text here: it builds only there
    sed -i 's|checkSecret: *goauth.CheckSecret,|checkSecret: roomkeeperCheckSecret,|' "$src/pkg/middlewares/auth/basic_auth.go"
    sed -i 's|d.auth.RequireAuthStale(rw, req)|d.auth.RequireAuth(rw, req)|' "$src/pkg/middlewares/auth/digest_auth.go"
    sed -i '/"github.com\/go-acme\/lego\/v5\/providers\/dns"/d' "$src/pkg/provider/acme/provider.go"
    sed -i 's|provider, err = dns.NewDNSChallengeProviderByName(p.DNSChallenge.Provider)|err = fmt.Errorf("ACME DNS challenge provider %q: not built in (hack/node.sh)", p.DNSChallenge.Provider)|' "$src/pkg/provider/acme/provider.go"
    touch "$src/.roomkeeper-patched"
  fi
  build_from_source github.com/traefik/traefik/v3 "$traefik_version" traefik ./cmd/traefik
fi
echo "$dir"
