#!/usr/bin/env bash
# The end-to-end test on this host (see e2e/README.md): builds its tools and, when missing, the
# driver, then runs the flows. Ends with "e2e: N passed, N failed, N skipped".
# Needs root and loop devices, and node-driver-registrar's source (e2e/build-upstream.sh); skips
# with the reason otherwise.
set -uo pipefail
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$repo" || exit 1

fail() { echo "e2e: $*" >&2; echo "e2e: 0 passed, 1 failed, 0 skipped"; exit 1; }
# The e2e's own logic first (its waits' bounds, a run ending at its first failure): no root needed.
python3 e2e/selftest.py || fail "its self-test failed"
skip() { echo "e2e: skipped: $*"; echo "e2e: 0 passed, 0 failed, 1 skipped"; exit 0; }
[[ $EUID -eq 0 ]] || skip "needs root (loop devices, mounts, a kubelet)"
modprobe loop 2>/dev/null || true
[[ -e /dev/loop-control ]] || skip "no loop devices on this machine (/dev/loop-control is missing)"

# node-driver-registrar and livenessprobe, from their Go modules or source archives (e2e/README.md)
why=$(e2e/build-upstream.sh); built=$?
[[ $built -ne 3 ]] || skip "$why"
[[ $built -eq 0 ]] || fail "node-driver-registrar or livenessprobe did not build"

if [[ ! -f driver/target/blockpool-csi.jar ]]; then
  JAVA_HOME=$(scripts/java-home.sh) || fail "no Java 25 to build the driver"
  export JAVA_HOME
  ./mvnw -B -q -ntp -DskipTests package || fail "the driver did not build"
fi
e2e/build.sh || fail "the e2e tools did not build"
exec python3 e2e/e2e.py
