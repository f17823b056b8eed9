#!/usr/bin/env bash
# Builds the tools the end-to-end test runs from the Go modules pinned in e2e/go.mod (Kubernetes,
# etcd, the CSI sidecars, snapshot-controller) and this module's own command (hollow-node) into a
# cache directory (default: .cache/e2e/bin), and copies beside it the
# VolumeSnapshot and VolumeGroupSnapshot CRDs of the pinned external-snapshotter client module,
# the SnapshotMetadataService CRD of the external-snapshot-metadata client module and that
# module's ClusterRoles (deploy/). Rebuilds only when go.mod, go.sum or the command change (a
# stamp records them); Go's build cache makes a rebuild quick, the first build takes about 15
# minutes on two cores. node-driver-registrar and livenessprobe, which go.mod cannot require, are
# build-upstream.sh's.
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
cache=${BLOCKPOOL_E2E_CACHE:-$here/../.cache/e2e}
bin=$cache/bin
tools=(etcd kube-apiserver kube-controller-manager kube-scheduler kubectl kubelet csi-provisioner csi-attacher
       csi-snapshotter snapshot-controller csi-resizer csi-snapshot-metadata snapshot-metadata-lister
       snapshot-metadata-verifier hollow-node)

stamp=$(cat "$here/go.mod" "$here/go.sum" "$here"/cmd/*/*.go | sha256sum | cut -d' ' -f1)
up_to_date() {
  [[ -f $bin/.version && $(<"$bin/.version") == "$stamp" ]] || return 1
  for t in "${tools[@]}"; do [[ -x $bin/$t ]] || return 1; done
  ls "$cache"/crd/*.yaml "$cache"/snapshot-metadata/*.yaml >/dev/null 2>&1
}
up_to_date && exit 0

# sudo's secure_path drops the Go toolchain's usual home.
command -v go >/dev/null || PATH=$PATH:/usr/local/go/bin
command -v go >/dev/null || { echo "e2e/build.sh: the go tool is needed" >&2; exit 1; }
cd "$here"
mkdir -p "$bin" "$cache/crd" "$cache/snapshot-metadata"
rm -f "$bin/.version"
echo "e2e/build.sh: go build of the pinned tools into $bin" >&2
# "tool" is every tool directive of go.mod. etcd's main package is the module root
# (go.etcd.io/etcd/server/v3), so it comes out named "server".
go build -buildvcs=false -o "$bin/" tool ./cmd/...
mv "$bin/server" "$bin/etcd"
snapshotter_client=$(go list -m -f '{{.Dir}}' github.com/kubernetes-csi/external-snapshotter/client/v8)
rm -f "$cache"/crd/*.yaml
cp "$snapshotter_client"/config/crd/{snapshot,groupsnapshot}.storage.k8s.io_*.yaml "$cache/crd/"
snapshot_metadata=$(go list -m -f '{{.Dir}}' github.com/kubernetes-csi/external-snapshot-metadata)
snapshot_metadata_client=$(go list -m -f '{{.Dir}}' github.com/kubernetes-csi/external-snapshot-metadata/client)
cp "$snapshot_metadata_client"/config/crd/cbt.storage.k8s.io_*.yaml "$cache/crd/"
rm -f "$cache"/snapshot-metadata/*.yaml
cp "$snapshot_metadata"/deploy/*.yaml "$cache/snapshot-metadata/"
chmod u+w "$cache"/crd/*.yaml "$cache"/snapshot-metadata/*.yaml
echo "$stamp" > "$bin/.version"
