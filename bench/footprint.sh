#!/usr/bin/env bash
# Measures the driver's memory and CPU footprint: resident memory when idle after start-up, and
# peak resident memory and CPU time over a full csi-sanity run (mount and block), which is far
# busier than a node or controller sees in practice. Figures feed the resource requests and
# limits in sidecars-deploy/. Needs root and a built jar.
#   usage: bench/footprint.sh [extra JVM options, e.g. -XX:+UseSerialGC -Xmx64m]
set -euo pipefail
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
tools=$("$repo/sanity-tests/install-tools.sh")
work=$(mktemp -d /tmp/blockpool-footprint.XXXXXX)
socket=$work/csi.sock
export BLOCKPOOL_JAVA_OPTS="$*"

"$repo/bin/blockpool-csi" --endpoint "unix://$socket" --pool-dir "$work/pool" --node-id bench-node \
    --max-volumes-per-node 6 --log-level warn > "$work/driver.log" 2>&1 &
pid=$!
trap 'kill -TERM $pid 2>/dev/null; wait $pid 2>/dev/null; rm -rf "$work"' EXIT
for _ in $(seq 100); do [[ -S $socket ]] && break; sleep 0.1; done
sleep 3
kib() { awk -v k="$1" '$1 == k":" {print $2}' "/proc/$pid/status"; }
cpu_seconds() { awk -v hz="$(getconf CLK_TCK)" '{printf "%.1f", ($14 + $15) / hz}' "/proc/$pid/stat"; }
idle_rss=$(kib VmRSS)
start_cpu=$(cpu_seconds)
start=$(date +%s.%N)
for access in mount block; do
  "$tools/csi-sanity" -csi.endpoint "unix://$socket" -csi.stagingdir "$work/staging-$access" \
      -csi.mountdir "$work/target-$access" -csi.testvolumeaccesstype "$access" -csi.testnodevolumeattachlimit \
      -csi.testvolumesize $((1 << 30)) -ginkgo.no-color > "$work/sanity-$access.log" 2>&1 \
      || { echo "csi-sanity failed ($access); see the log" >&2; tail -30 "$work/sanity-$access.log"; exit 1; }
done
elapsed=$(awk -v s="$start" -v e="$(date +%s.%N)" 'BEGIN {printf "%.1f", e - s}')
echo "JVM options:          ${BLOCKPOOL_JAVA_OPTS:-(defaults)}"
echo "idle RSS:             $((idle_rss / 1024)) MiB"
echo "peak RSS (VmHWM):     $(( $(kib VmHWM) / 1024 )) MiB over two csi-sanity runs"
echo "CPU time:             $(awk -v a="$(cpu_seconds)" -v b="$start_cpu" 'BEGIN {printf "%.1f", a - b}') s in ${elapsed} s wall"
echo "threads:              $(kib Threads)"
