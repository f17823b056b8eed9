#!/usr/bin/env bash
# The real node's flows on this host (see e2e/README.md, "The real node"): builds the
# e2e's tools, the node's parts and its images when missing or out of date, then runs the flows.
# Ends with "e2e-real-node: N passed, N failed, N skipped". The test command's last stage.
# Skips with the reason when not root or without node-driver-registrar's and livenessprobe's source.
set -uo pipefail
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$repo" || exit 1

skip() { echo "e2e-real-node: skipped: $*"; echo "e2e-real-node: 0 passed, 0 failed, 1 skipped"; exit 0; }
[[ $EUID -eq 0 ]] || skip "needs root (a kubelet, containerd, mounts, a bridge)"
fail() { echo "e2e-real-node: $*" >&2; echo "e2e-real-node: 0 passed, 1 failed, 0 skipped"; exit 1; }
# node-driver-registrar and livenessprobe, from their Go modules or source archives (e2e/README.md)
why=$(e2e/build-upstream.sh); built=$?
[[ $built -ne 3 ]] || skip "$why"
[[ $built -eq 0 ]] || fail "node-driver-registrar or livenessprobe did not build"
e2e/build.sh || fail "the e2e tools did not build"
e2e/node/build.sh || fail "containerd, runc or the CNI plugins did not build"
exec python3 e2e/real_node.py
