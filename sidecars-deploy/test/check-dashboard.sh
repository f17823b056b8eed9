#!/usr/bin/env bash
# Checks the Grafana dashboard of the prometheus-operator overlay against what the real driver
# serves. It starts the built blockpool-csi on a pool of its own (a 512 MiB XFS image with
# reflinks, loop-mounted in a temporary directory), over-committed and below its warning level so
# that the pool's problems show; makes calls that succeed and fail, stages a volume, snapshots it
# and shuts its filesystem down (xfs_io shutdown) so that a volume problem shows too; waits for
# the next census and scrapes /metrics twice with calls between. Both scrapes must pass
# promtool check metrics; then dashboard-check (the Go module beside this script, Prometheus's
# query engine at the version install-tools.sh pins promtool at) evaluates every panel's queries
# on them. Its self-test breaks a copy of the dashboard (a misspelt metric, a query that does not
# parse) and expects the check to name the panel.
#
# Needs root (the loop mount, the stage), xfsprogs, a built jar (./mvnw -DskipTests package) and
# Go. The checker is built into .cache/dashboard/bin (BLOCKPOOL_DASHBOARD_CACHE), again only when
# its sources change. Prints "[FAIL] ..." for each failure and ends with
# "dashboard: N passed, N failed, N skipped".
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
repo=$(cd "$here/../.." && pwd)
dashboard=$repo/sidecars-deploy/overlays/prometheus-operator/blockpool-dashboard.json

if [[ $EUID -ne 0 ]]; then
  echo "skipped: the dashboard check needs root (a loop-mounted pool, a staged volume)"
  echo "dashboard: 0 passed, 0 failed, 1 skipped"
  exit 0
fi
[[ -f $repo/driver/target/blockpool-csi.jar ]] || {
  echo "check-dashboard: no driver/target/blockpool-csi.jar; build it with ./mvnw -DskipTests package" >&2; exit 1; }
tools=$("$repo/sanity-tests/install-tools.sh")
# shellcheck source=sanity-tests/scratch.sh
source "$repo/sanity-tests/scratch.sh"

# The checker, built when its sources changed since the last build (a stamp records them).
cache=${BLOCKPOOL_DASHBOARD_CACHE:-$repo/.cache/dashboard}
checker=$cache/bin/dashboard-check
stamp=$(cat "$here/dashboard-check/go.mod" "$here/dashboard-check/go.sum" "$here"/dashboard-check/*.go | sha256sum | cut -d' ' -f1)
if [[ ! -x $checker || ! -f $cache/bin/.version || $(<"$cache/bin/.version") != "$stamp" ]]; then
  command -v go >/dev/null || PATH=$PATH:/usr/local/go/bin # sudo's secure_path drops it
  echo "check-dashboard: go build of dashboard-check into $cache/bin" >&2
  mkdir -p "$cache/bin"
  (cd "$here/dashboard-check" && go build -buildvcs=false -o "$checker" .)
  echo "$stamp" > "$cache/bin/.version"
fi

work=$(mktemp -d /tmp/blockpool-dashboard.XXXXXX)
socket=$work/csi.sock
driver_pid=
# shellcheck disable=SC2317 # run by the EXIT trap below, which shellcheck 0.9 does not follow
cleanup() {
  if [[ -n $driver_pid ]] && kill -0 "$driver_pid" 2>/dev/null; then
    kill -TERM "$driver_pid"
    wait "$driver_pid" || true
  fi
  release_scratch "$work" # the stage's mounts if the unstage failed, the pool's own, their loop devices
  rm -rf "$work"
}
trap cleanup EXIT

mkdir -p "$work/pool" "$work/staging"
truncate -s 512M "$work/pool.img"
mkfs.xfs -q -m reflink=1 "$work/pool.img"
mount -o loop "$work/pool.img" "$work/pool"

port=$(free_loopback_port)
# Over-committed (two 300 MiB volumes on a 448 MiB filesystem) and below a warning level it can
# never reach, so the pool reports PoolNearlyFull.
"$repo/bin/blockpool-csi" --endpoint "unix://$socket" --pool-dir "$work/pool" --node-id dashboard-node \
    --http-endpoint "127.0.0.1:$port" --overcommit-ratio 4 --pool-warn-free 1Ti --log-level warn \
    > "$work/driver.log" 2>&1 &
driver_pid=$!
for _ in $(seq 100); do [[ -S $socket ]] && break; sleep 0.1; done
[[ -S $socket ]] || { echo "check-dashboard: the driver did not start:"; cat "$work/driver.log"; exit 1; }

call() { # method json: the answer on stdout; a failed call is one the histogram counts too
  "$tools/grpcurl" -plaintext -unix -d "$2" "$socket" "csi.v1.$1" 2>&1 || true
}
capability='{"mount":{"fs_type":"xfs"},"access_mode":{"mode":"SINGLE_NODE_WRITER"}}'
create() { # name
  call Controller/CreateVolume "{\"name\":\"$1\",\"capacity_range\":{\"required_bytes\":314572800},\"volume_capabilities\":[$capability]}"
}
failing_calls() { # a create larger than the pool (OutOfRange), stats of no volume (NotFound)
  call Controller/CreateVolume "{\"name\":\"too-large\",\"capacity_range\":{\"required_bytes\":1099511627776},\"volume_capabilities\":[$capability]}" >/dev/null
  call Node/NodeGetVolumeStats "{\"volume_id\":\"vol-none\",\"volume_path\":\"$work/none\"}" >/dev/null
}
volume=$(create dashboard-1 | sed -nE 's/.*"volume_id": "([^"]+)".*/\1/p')
[[ -n $volume ]] || { echo "check-dashboard: CreateVolume failed:"; create dashboard-1; exit 1; }
create dashboard-2 >/dev/null
call Node/NodeStageVolume "{\"volume_id\":\"$volume\",\"staging_target_path\":\"$work/staging\",\"volume_capability\":$capability}" >/dev/null
call Controller/CreateSnapshot "{\"source_volume_id\":\"$volume\",\"name\":\"dashboard-snap\"}" >/dev/null
failing_calls
# The staged filesystem stops as after an I/O error: NodeGetVolumeHealth's FilesystemFailed.
xfs_io -x -c shutdown "$work/staging"

# The census counts every 30 s: wait for the one that sees the stage and its problem.
scrape() { curl -fsS -o "$1" "http://127.0.0.1:$port/metrics"; }
for _ in $(seq 120); do
  scrape "$work/scrape-1.txt"
  grep -q '^blockpool_node_volume_problems{' "$work/scrape-1.txt" && break
  sleep 1
done
grep -q '^blockpool_node_volume_problems{' "$work/scrape-1.txt" || {
  echo "check-dashboard: no census saw the staged volume's problem in 120 s:"; cat "$work/driver.log"; exit 1; }
create dashboard-1 >/dev/null # again: idempotent
failing_calls
call Node/NodeGetVolumeStats "{\"volume_id\":\"$volume\",\"volume_path\":\"$work/staging\"}" >/dev/null
scrape "$work/scrape-2.txt"
call Node/NodeUnstageVolume "{\"volume_id\":\"$volume\",\"staging_target_path\":\"$work/staging\"}" >/dev/null

passed=0 failed=0
for s in 1 2; do
  if "$tools/promtool" check metrics < "$work/scrape-$s.txt" > "$work/promtool.out" 2>&1; then
    passed=$((passed + 1))
  else
    failed=$((failed + 1)); echo "[FAIL] promtool check metrics rejects scrape $s:"; cat "$work/promtool.out"
  fi
done

check() { # dashboard file, output file
  "$checker" -dashboard "$1" -instance "127.0.0.1:$port" "$work/scrape-1.txt" "$work/scrape-2.txt" > "$2"
}
if check "$dashboard" "$work/check.out"; then status=0; else status=$?; fi
grep -v '^dashboard: ' "$work/check.out" || true
read -r p f < <(sed -nE 's/^dashboard: ([0-9]+) passed, ([0-9]+) failed.*/\1 \2/p' "$work/check.out")
passed=$((passed + ${p:-0})); failed=$((failed + ${f:-0}))
if [[ $status -ne 0 && ${f:-0} -eq 0 ]]; then failed=$((failed + 1)); echo "[FAIL] dashboard-check exited $status"; fi

# Self-test: a copy with one query of a panel broken must fail the check, naming that panel.
selftest() { # description, panel title, query index, python expression of the query `e` that breaks it
  local broken=$work/broken.json
  python3 - "$dashboard" "$broken" "$2" "$3" "$4" <<'PY'
import json, sys
source, broken, title, index, breaks = sys.argv[1:]
d = json.load(open(source))
target = next(p for p in d["panels"] if p.get("title") == title)["targets"][int(index)]
target["expr"] = eval(breaks, {"e": target["expr"]})
json.dump(d, open(broken, "w"))
PY
  if ! check "$broken" "$work/broken.out" && grep -qF "[FAIL] panel \"$2\"" "$work/broken.out"; then
    passed=$((passed + 1))
  else
    failed=$((failed + 1))
    echo "[FAIL] self-test, $1: the check did not fail on panel \"$2\"; it said:"
    sed 's/^/    /' "$work/broken.out"
  fi
}
selftest "a misspelt metric" "Pool space" 2 "e.replace('promised_bytes', 'promise_bytes')"
selftest "a misspelt metric behind 'or vector(0)'" "Pool space" 2 "e.replace('promised_bytes', 'promise_bytes') + ' or vector(0)'"
selftest "a query that does not parse" "Pool space" 0 "'sum by (instance' + e"

echo "dashboard: $passed passed, $failed failed, 0 skipped"
[[ $failed -eq 0 ]]
