#!/usr/bin/env bash
# Shows that every rule of check-manifests.sh can fail: for each case in
# selftest_cases.py it copies sidecars-deploy/ to a scratch directory, breaks one
# thing, runs the check and expects it to exit 1 with the expected complaint. The
# untouched copy must pass first. Nothing in the work tree is modified. The runner
# is check_manifests_selftest.py beside this script.
#
# Usage: sidecars-deploy/test/check-manifests-selftest.sh
# Ends with `selftest: N passed, M failed`; exits 1 when a case did not behave.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# The copies' check-manifests.sh find no install-tools.sh beside them: they use this kustomize.
if [[ -z ${KUSTOMIZE:-} ]]; then
  KUSTOMIZE=$("$here/../../sanity-tests/install-tools.sh" kustomize)/kustomize || {
    echo "check-manifests-selftest: kustomize could not be installed (sanity-tests/install-tools.sh needs the go tool)" >&2
    exit 2
  }
  export KUSTOMIZE
fi
# -B: importing selftest_cases.py writes no __pycache__ into the work tree.
exec python3 -B "$here/check_manifests_selftest.py" "$(dirname "$here")"
