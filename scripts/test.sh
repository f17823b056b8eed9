#!/usr/bin/env bash
# The one command that builds blockpool and runs all of its tests, in eight stages: the style
# gate, the Maven build with its unit, integration and system tests (and the Go code's unit
# tests), csi-sanity (node and shared
# pools, mount and block), the checks of the Kubernetes manifests, the Grafana dashboard's queries
# on a real driver's scrapes, the end-to-end test, the
# container image (BLOCKPOOL_SKIP_IMAGE=1 leaves it out) and the real node, which runs that
# image's node. Run it as root; what needs root is skipped with the
# reason otherwise. It ends with one line: "tests: N passed, N failed, N skipped".
# Every stage, how to run it alone and what it needs: docs/testing.md.
set -uo pipefail
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$repo" || exit 1
JAVA_HOME=$(scripts/java-home.sh) || exit 1
export JAVA_HOME

passed=0 failed=0 skipped=0 status=0
add_counts() { # passed failed skipped
  passed=$((passed + $1)); failed=$((failed + $2)); skipped=$((skipped + $3))
}
stage() { echo; echo "=== $* ==="; }
# What failed, in a few lines per stage, printed again just before the last line: a long log's
# end then says what to look for in it.
recap=()
remember_failures() { # label file-or-lines
  local line
  while IFS= read -r line; do recap+=("$1: $line"); done < <(head -n 10 "$2")
}
failure_lines() { # the lines of a stage's output that name a failure
  grep -E ': failed at: |^FAIL (\[|case)|\[FAIL\]|FAIL  teardown|^[a-z0-9 -]+: [0-9]+ passed, [1-9][0-9]* failed' "$1" || true
}

stage "style (Java and pom format, shellcheck, ruff, gofmt, go vet, doc links)"
# Not in $status until the end: the stages below, which a failed build skips, run anyway.
style_status=0
if scripts/style.sh; then add_counts 1 0 0; else add_counts 0 1 0; style_status=1; recap+=("style: scripts/style.sh failed"); fi

# Runs a test that ends with "<label>: N passed, N failed, N skipped" and adds its counts.
counted() { # label command...
  local label=$1 out
  shift
  out=$(mktemp)
  "$@" | tee "$out" || status=1
  remember_failures "$label" <(failure_lines "$out")
  read -r p f s < <(sed -nE "s/^$label: ([0-9]+) passed, ([0-9]+) failed, ([0-9]+) skipped\$/\\1 \\2 \\3/p" "$out" | tail -1)
  add_counts "${p:-0}" "${f:-1}" "${s:-0}"
  rm -f "$out"
}

stage "build, unit and integration tests"
# As root, the tests on real loop devices, mkfs and mounts too (-Proot-tests); they skip with the reason otherwise.
# The fuzz, crash and multi-node tests of the system-tests module append their figures to this file.
summary=system-tests/target/system-tests-summary.txt
rm -f "$summary"
./mvnw -B -ntp -Proot-tests verify || status=1
read -r p f s < <(python3 scripts/surefire_counts.py "$repo")
echo "maven: $p passed, $f failed, $s skipped"
remember_failures maven <(python3 scripts/surefire_counts.py --failures "$repo")
[[ $status -eq 0 || $f -gt 0 ]] || recap+=("maven: the build failed before its tests (see its [ERROR] lines)")
add_counts "$p" "$f" "$s"
[[ -f $summary ]] && cat "$summary"
# The Go code's unit tests: the kubectl plugin, the bench's figures.
counted go scripts/go-tests.sh

stage "csi-sanity"
if [[ $status -eq 0 ]]; then
  sanity_out=$(mktemp)
  sanity-tests/run-sanity.sh mount block | tee "$sanity_out" || status=1
  remember_failures csi-sanity <(failure_lines "$sanity_out")
  while read -r p f s; do add_counts "$p" "$f" "$s"; done < <(
    sed -nE 's/^csi-sanity [a-z]+ [a-z]+: ([0-9]+) passed, ([0-9?]+) failed, ([0-9]+) skipped$/\1 \2 \3/p' "$sanity_out" | tr '?' '1')
  rm -f "$sanity_out"
else
  echo "skipped: the build or its tests failed"
fi

if [[ -x sidecars-deploy/test/check-manifests.sh ]]; then
  stage "Kubernetes manifests"
  manifests_out=$(mktemp)
  sidecars-deploy/test/check-manifests.sh | tee "$manifests_out" || status=1
  remember_failures manifests <(failure_lines "$manifests_out")
  read -r p f < <(sed -nE 's/^manifests: ([0-9]+) passed, ([0-9]+) failed.*/\1 \2/p' "$manifests_out" | tail -1)
  add_counts "${p:-0}" "${f:-1}" 0
  # The checks themselves: each rule must reject a manifest broken in its way.
  sidecars-deploy/test/check-manifests-selftest.sh | tee "$manifests_out" || status=1
  remember_failures manifests-selftest <(failure_lines "$manifests_out")
  read -r p f < <(sed -nE 's/^selftest: ([0-9]+) passed, ([0-9]+) failed.*/\1 \2/p' "$manifests_out" | tail -1)
  add_counts "${p:-0}" "${f:-1}" 0
  # The Helm chart: helm lint, each overlay's values rendering what the overlay does, every render
  # passing the same rules.
  sidecars-deploy/test/check-chart.sh | tee "$manifests_out" || status=1
  remember_failures chart <(failure_lines "$manifests_out")
  read -r p f < <(sed -nE 's/^chart: ([0-9]+) passed, ([0-9]+) failed.*/\1 \2/p' "$manifests_out" | tail -1)
  add_counts "${p:-0}" "${f:-1}" 0
  rm -f "$manifests_out"
fi

stage "Grafana dashboard (every panel's queries on a real driver's scrapes)"
if [[ $status -eq 0 ]]; then
  counted dashboard sidecars-deploy/test/check-dashboard.sh
else
  echo "skipped: the build or its tests failed"
fi

stage "end to end (Kubernetes control plane, sidecars, hollow kubelet)"
if [[ $status -eq 0 ]]; then
  counted e2e e2e/run.sh
else
  echo "skipped: the build or its tests failed"
fi

image_built=
if [[ -x image/build.sh && -z ${BLOCKPOOL_SKIP_IMAGE:-} ]]; then
  stage "container image"
  if image/build.sh; then add_counts 1 0 0; image_built=1
  else add_counts 0 1 0; status=1; recap+=("image: image/build.sh failed"); fi
fi

stage "real node (kubelet, containerd, runc, CNI)"
if [[ $status -eq 0 && -n $image_built ]]; then
  counted e2e-real-node e2e/real-node.sh
else
  echo "skipped: the build, its tests or the container image failed or were left out"
fi

[[ $failed -eq 0 && $style_status -eq 0 ]] || status=1
echo
[[ -f $summary ]] && cat "$summary"
if [[ ${#recap[@]} -gt 0 ]]; then
  echo "what failed (the first lines of each stage's failures; their stage's output above says more):"
  printf '  %s\n' "${recap[@]}"
fi
echo "tests: $passed passed, $failed failed, $skipped skipped"
exit $status
