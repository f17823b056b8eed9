#!/usr/bin/env bash
# The kubectl plugin's unit tests (the move's steps against a fake API server); ends with
# "kubectl-blockpool: N passed, N failed, 0 skipped". The e2e runs the plugin on a real cluster.
set -uo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")" || exit 1
command -v go >/dev/null || PATH=$PATH:/usr/local/go/bin
out=$(go test -v -count=1 ./... 2>&1)
rc=$?
echo "$out"
passed=$(grep -c -- '^--- PASS' <<<"$out")
failed=$(grep -c -- '^--- FAIL' <<<"$out")
[[ $rc -eq 0 || $failed -gt 0 ]] || failed=1 # it did not build
echo "kubectl-blockpool: $passed passed, $failed failed, 0 skipped"
exit $rc
