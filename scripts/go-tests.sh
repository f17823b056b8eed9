#!/usr/bin/env bash
# The unit tests of the Go code the project ships or draws its figures with: the kubectl plugin
# (a move's steps against a fake API server), the bench's choice of sections and its drawing of
# its figures. Ends with "go: N passed, N failed, 0 skipped". The Go modules that only build tools
# have no tests here.
set -uo pipefail
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
command -v go >/dev/null || PATH=$PATH:/usr/local/go/bin
passed=0 failed=0
for target in kubectl-plugin:./... bench/csibench:. bench/csibench:./figures; do
  out=$(cd "$repo/${target%%:*}" && go test -v -count=1 "${target#*:}" 2>&1)
  rc=$?
  echo "$out"
  p=$(grep -c -- '^--- PASS' <<<"$out")
  f=$(grep -c -- '^--- FAIL' <<<"$out")
  [[ $rc -eq 0 || $f -gt 0 ]] || { echo "go test in ${target%%:*} failed to build"; f=1; }
  passed=$((passed + p)) failed=$((failed + f))
done
echo "go: $passed passed, $failed failed, 0 skipped"
[[ $failed -eq 0 ]]
