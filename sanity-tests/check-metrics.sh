#!/usr/bin/env bash
# Scrapes a running driver's /metrics and checks it as Prometheus would take it: the text goes
# through Prometheus's own parser and linter (promtool check metrics, at the version pinned in
# install-tools.sh), and the series a dashboard needs must be there: the call histogram of the
# calls made (NODE_METHOD and CONTROLLER_METHOD, OK), and the pool's, the node's and the build's
# gauges. Prints one line per failed check and ends with "metrics: N passed, N failed".
#   usage: sanity-tests/check-metrics.sh http://127.0.0.1:PORT/metrics
set -euo pipefail
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
tools=$("$repo/sanity-tests/install-tools.sh")
url=$1

passed=0 failed=0
check() { # description, then the command that must succeed
  local what=$1; shift
  if "$@"; then passed=$((passed + 1)); else failed=$((failed + 1)); echo "check-metrics: FAILED: $what"; fi
}

scrape=$(mktemp)
trap 'rm -f "$scrape"' EXIT
check "GET $url answers 200" curl -fsS -o "$scrape" "$url"
check "promtool check metrics accepts the scrape" "$tools/promtool" check metrics < "$scrape"

has() { grep -qE "$1" "$scrape"; }
series='csi_plugin_operations_seconds_count\{driver_name="[^"]+",grpc_status_code="OK",method_name="/csi\.v1\.'
check "the histogram counts NodeStageVolume" has "^${series}Node/NodeStageVolume\"\} [1-9]"
check "the histogram counts CreateVolume" has "^${series}Controller/CreateVolume\"\} [1-9]"
check "the histogram has csi-lib-utils' last bucket" has '^csi_plugin_operations_seconds_bucket\{.*le="600(\.0)?"'
check "a failed call is counted with its code" has '^csi_plugin_operations_seconds_count\{[^}]*grpc_status_code="NotFound"'
for gauge in blockpool_build_info blockpool_pool_size_bytes blockpool_pool_available_bytes \
    blockpool_pool_provisioned_bytes blockpool_pool_allocated_bytes blockpool_pool_overcommit_ratio \
    blockpool_pool_volumes blockpool_pool_snapshots blockpool_pool_group_snapshots \
    blockpool_node_loop_devices blockpool_node_staged_volumes; do
  check "$gauge has a sample" has "^$gauge(\{[^}]*\})? [0-9]"
done

echo "metrics: $passed passed, $failed failed"
[[ $failed -eq 0 ]]
