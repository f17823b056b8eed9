#!/usr/bin/env bash
# Renders every kustomization under sidecars-deploy/ (the base, each overlay and
# the examples) with `kustomize build` and checks the rendered objects against
# the rules a working deployment of the driver depends on: pinned images, one
# driver name everywhere, every sidecar on the driver's socket, a privileged node
# plugin with Bidirectional propagation on the kubelet directory, liveness probes
# wired to the livenessprobe sidecar, resources on every container, and RBAC that
# covers what each sidecar needs (and nothing broad), group snapshots only where
# opted in, the peer channel wired on node-local pools (port, CA Secret and its
# Job, pods listed, NetworkPolicy) and absent on shared ones. The rules are in
# check_manifests.py beside this script.
#
# Needs: kustomize at the version the e2e's kubectl embeds (the binary $KUSTOMIZE names, else
# sanity-tests/install-tools.sh installs it with the go tool) and python3 with PyYAML (Debian:
# python3-yaml; pip: pyyaml).
#
# Usage: sidecars-deploy/test/check-manifests.sh [-v]
# Prints one line per failed check and ends with `manifests: N passed, M failed`;
# exits 1 when a check failed, 2 when a tool is missing.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
deploy_dir=$(dirname "$here")
install_tools=$deploy_dir/../sanity-tests/install-tools.sh
if [[ -z ${KUSTOMIZE:-} && -x $install_tools ]]; then
  KUSTOMIZE=$("$install_tools" kustomize)/kustomize || KUSTOMIZE=
fi
if [[ -z ${KUSTOMIZE:-} ]] || ! command -v "$KUSTOMIZE" >/dev/null 2>&1; then
  echo "check-manifests: kustomize is needed: set KUSTOMIZE, or run from the repository with the go tool" >&2
  exit 2
fi
if ! python3 -c 'import yaml' >/dev/null 2>&1; then
  echo "check-manifests: python3 with PyYAML is needed (apt-get install python3-yaml, or pip install pyyaml)" >&2
  exit 2
fi

exec python3 "$here/check_manifests.py" "$deploy_dir" "$KUSTOMIZE" "$@"
