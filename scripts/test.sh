#!/usr/bin/env bash
# The one command that builds blockpool and runs all of its tests:
#   1. unit and integration tests (Maven; the integration tests drive real loop devices, mkfs
#      and mount, and are skipped with a reason unless run as root; the multi-node test runs two
#      node plugins and a controller on a real GlusterFS volume, skipped with a reason without
#      GlusterFS or /dev/fuse)
#   2. the real csi-sanity against the built binary, for mount and for block volumes
#   3. the checks of the rendered Kubernetes manifests, and a self-test of those checks
#   4. the end-to-end test: a local Kubernetes control plane, the real sidecars and a hollow
#      kubelet drive the driver through the project's manifests (e2e/run.sh; skipped with the
#      reason unless run as root)
#   5. the container image build and its check (BLOCKPOOL_SKIP_IMAGE=1 skips it)
# It ends with one line: "tests: N passed, N failed, N skipped".
set -uo pipefail
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$repo"
JAVA_HOME=$(scripts/java-home.sh) || exit 1
export JAVA_HOME

passed=0 failed=0 skipped=0 status=0
add_counts() { # passed failed skipped
  passed=$((passed + $1)); failed=$((failed + $2)); skipped=$((skipped + $3))
}
stage() { echo; echo "=== $* ==="; }

stage "build, unit and integration tests"
# As root, the tests on real loop devices, mkfs and mounts too (-Proot-tests); they skip with the reason otherwise.
# The fuzz, crash and multi-node tests of the system-tests module append their figures to this file.
summary=system-tests/target/system-tests-summary.txt
rm -f "$summary"
./mvnw -B -ntp -Proot-tests verify || status=1
read -r p f s < <(python3 scripts/surefire_counts.py "$repo")
echo "maven: $p passed, $f failed, $s skipped"
add_counts "$p" "$f" "$s"
[[ -f $summary ]] && cat "$summary"

stage "csi-sanity"
if [[ $status -eq 0 ]]; then
  sanity_out=$(mktemp)
  sanity-tests/run-sanity.sh mount block | tee "$sanity_out" || status=1
  while read -r p f s; do add_counts "$p" "$f" "$s"; done < <(
    sed -nE 's/^csi-sanity [a-z]+: ([0-9]+) passed, ([0-9?]+) failed, ([0-9]+) skipped$/\1 \2 \3/p' "$sanity_out" | tr '?' '1')
  rm -f "$sanity_out"
else
  echo "skipped: the build or its tests failed"
fi

if [[ -x sidecars-deploy/test/check-manifests.sh ]]; then
  stage "Kubernetes manifests"
  manifests_out=$(mktemp)
  sidecars-deploy/test/check-manifests.sh | tee "$manifests_out" || status=1
  read -r p f < <(sed -nE 's/^manifests: ([0-9]+) passed, ([0-9]+) failed.*/\1 \2/p' "$manifests_out" | tail -1)
  add_counts "${p:-0}" "${f:-1}" 0
  # The checks themselves: each rule must reject a manifest broken in its way.
  sidecars-deploy/test/check-manifests-selftest.sh | tee "$manifests_out" || status=1
  read -r p f < <(sed -nE 's/^selftest: ([0-9]+) passed, ([0-9]+) failed.*/\1 \2/p' "$manifests_out" | tail -1)
  add_counts "${p:-0}" "${f:-1}" 0
  rm -f "$manifests_out"
fi

stage "end to end (Kubernetes control plane, sidecars, hollow kubelet)"
if [[ $status -eq 0 ]]; then
  e2e_out=$(mktemp)
  e2e/run.sh | tee "$e2e_out" || status=1
  read -r p f s < <(sed -nE 's/^e2e: ([0-9]+) passed, ([0-9]+) failed, ([0-9]+) skipped$/\1 \2 \3/p' "$e2e_out" | tail -1)
  add_counts "${p:-0}" "${f:-1}" "${s:-0}"
  rm -f "$e2e_out"
else
  echo "skipped: the build or its tests failed"
fi

if [[ -x image/build.sh && -z ${BLOCKPOOL_SKIP_IMAGE:-} ]]; then
  stage "container image"
  if image/build.sh; then add_counts 1 0 0; else add_counts 0 1 0; status=1; fi
fi

[[ $failed -eq 0 ]] || status=1
echo
[[ -f $summary ]] && cat "$summary"
echo "tests: $passed passed, $failed failed, $skipped skipped"
exit $status
