#!/usr/bin/env bash
# Builds the parts of the real node the end-to-end test runs beside the hollow ones (see
# e2e/README.md, "The real node"): containerd, its runc shim, ctr, runc and the CNI plugins, from
# the Go modules pinned in e2e/node/go.mod, into a cache directory (default: .cache/e2e/node).
# kubelet is built by e2e/build.sh with the other Kubernetes binaries. A module of its own keeps
# containerd's dependency versions out of the Kubernetes tools' build, and theirs out of it.
# Rebuilds only when go.mod or go.sum change (a stamp records them).
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
cache=${BLOCKPOOL_E2E_CACHE:-$here/../../.cache/e2e}/node
bin=$cache/bin
cni=$cache/cni
tools=(containerd containerd-shim-runc-v2 ctr runc)
plugin_pkgs=(github.com/containernetworking/plugins/plugins/main/bridge
             github.com/containernetworking/plugins/plugins/main/loopback
             github.com/containernetworking/plugins/plugins/ipam/host-local
             github.com/containernetworking/plugins/plugins/meta/portmap)

stamp=$(cat "$here/go.mod" "$here/go.sum" "${BASH_SOURCE[0]}" | sha256sum | cut -d' ' -f1)
up_to_date() {
  [[ -f $bin/.version && $(<"$bin/.version") == "$stamp" ]] || return 1
  for t in "${tools[@]}"; do [[ -x $bin/$t ]] || return 1; done
  for p in "${plugin_pkgs[@]}"; do [[ -x $cni/${p##*/} ]] || return 1; done
}
up_to_date && exit 0

command -v go >/dev/null || PATH=$PATH:/usr/local/go/bin
command -v go >/dev/null || { echo "e2e/node/build.sh: the go tool is needed" >&2; exit 1; }
cd "$here"
mkdir -p "$bin" "$cni"
rm -f "$bin/.version"
echo "e2e/node/build.sh: go build of containerd, runc and the CNI plugins into $cache" >&2
# runc's namespace setup (nsenter) is C, so it needs cgo, and its seccomp support (containerd
# confines every pod sandbox with the runtime's default profile) links Debian's libseccomp.
if ! pkg-config --exists libseccomp; then
  echo "e2e/node/build.sh: installing libseccomp-dev for runc's seccomp support" >&2
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq libseccomp-dev >/dev/null
fi
CGO_ENABLED=1 go build -buildvcs=false -tags seccomp -o "$bin/" github.com/opencontainers/runc
# containerd's btrfs snapshotter is left out: it needs btrfs headers and the node uses overlayfs.
CGO_ENABLED=0 go build -buildvcs=false -tags no_btrfs -o "$bin/" \
  github.com/containerd/containerd/v2/cmd/containerd \
  github.com/containerd/containerd/v2/cmd/containerd-shim-runc-v2 \
  github.com/containerd/containerd/v2/cmd/ctr
CGO_ENABLED=0 go build -buildvcs=false -o "$cni/" "${plugin_pkgs[@]}"
echo "$stamp" > "$bin/.version"
