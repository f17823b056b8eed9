#!/usr/bin/env bash
# blockpool's benchmark: starts the real bin/blockpool-csi, drives it over its socket with the Go
# client in bench/csibench, and prints one Markdown table per section (start, memory, node,
# snapshot, metadata, list, fio, flexvolume, pods, ...), with ratios measured in the same run; with
# -json FILE it also records the measurements its figures are drawn from (bench/figures.sh).
#
#   usage: sudo bench/run.sh [csibench flags] [section ...]    (all sections by default; -h lists the flags)
#
# Needs root. Everything it makes lives in one temporary directory under .cache/bench, and goes
# on exit with every mount and loop device in it. What each section measures, what the bench
# needs and installs, and the figures: docs/performance.md.
set -euo pipefail
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$repo"
[[ $(id -u) -eq 0 ]] || { echo "bench: needs root (loop devices, mounts, drop_caches)" >&2; exit 1; }

# What the run prints (and records with -json) as the command that reproduces it: a wrapper's own
# (bench/figures.sh) when it names one.
words=$(bench/quote.sh "$@")
command=${BENCH_COMMAND:-"sudo bench/run.sh${words:+ $words}"}
flags=() sections=()
while [[ $# -gt 0 ]]; do
  case $1 in
    -h|-help|--help) flags+=(-h); shift ;;
    -*) [[ $# -ge 2 ]] || { echo "bench: $1 needs a value" >&2; exit 2; }; flags+=("$1" "$2"); shift 2 ;;
    *) sections+=("$1"); shift ;;
  esac
done
wants() { [[ ${#sections[@]} -eq 0 ]] || [[ " ${sections[*]} " == *" $1 "* ]]; }

# --- what the bench needs -----------------------------------------------------------------------
if [[ ! -f driver/target/blockpool-csi.jar ]]; then
  echo "bench: building the driver" >&2
  JAVA_HOME=$(scripts/java-home.sh) ./mvnw -B -q -DskipTests package
fi
tools=$(sanity-tests/install-tools.sh)   # csi-sanity at its pinned version; its bin directory is ours too
# sudo's secure_path drops the Go toolchain's usual home, as install-tools.sh knows.
command -v go >/dev/null || PATH=$PATH:/usr/local/go/bin
# The client and the reference process, at the versions go.mod and go.sum pin; never committed.
(cd bench/csibench && export GOFLAGS="${GOFLAGS:-} -mod=readonly" && go build -o "$tools/csibench" . && go build -o "$tools/gomock" ./gomock)
if [[ " ${flags[*]} " == *" -h "* ]]; then exec "$tools/csibench" -h; fi
if wants fio && ! command -v fio >/dev/null; then
  echo "bench: installing fio from Debian" >&2
  apt-get install -y -q fio >/dev/null || { apt-get update -q >/dev/null && apt-get install -y -q fio >/dev/null; }
fi

# --- the bench's own directory, and its removal -------------------------------------------------
mkdir -p .cache/bench
work=$(mktemp -d "$repo/.cache/bench/run.XXXXXX")
xfs=$work/xfs xfs_loop='' client=''
cleanup() {
  set +e
  # The client first (it stops the drivers it started), then any driver it left (pid files).
  if [[ -n $client ]] && kill -0 "$client" 2>/dev/null; then kill -TERM "$client"; wait "$client"; fi
  for pidfile in "$work"/pids/*; do
    [[ -e $pidfile ]] || continue
    pid=${pidfile##*/}
    kill -TERM "$pid" 2>/dev/null && for _ in $(seq 300); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    kill -KILL "$pid" 2>/dev/null
  done
  # Mounts the drivers left under the work directory (deepest first), but the XFS pool's.
  grep -F " $work/" /proc/self/mountinfo | awk '{print $5}' | grep -vxF "$xfs" | sort -r |
      while read -r mnt; do umount "$mnt" 2>/dev/null || umount -l "$mnt"; done
  # Loop devices the drivers attached to images in the work directory, but the XFS pool's own.
  losetup -n -O NAME,BACK-FILE 2>/dev/null | awk -v w="$work/" -v own="$xfs_loop" 'index($2, w) == 1 && $1 != own {print $1}' |
      while read -r dev; do losetup -d "$dev"; done
  if mountpoint -q "$xfs"; then umount "$xfs" || umount -l "$xfs"; fi
  [[ -z $xfs_loop ]] || losetup -d "$xfs_loop"
  rm -rf "$work"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# The snapshot and metadata sections' pool: XFS with reflink on a loop device over a sparse file in
# $work, large enough for the snapshot section's largest volume (-snapshot-sizes), of which it
# writes a sixteenth.
if wants snapshot || wants metadata; then
  truncate -s 32G "$work/xfs.img"
  xfs_loop=$(losetup -f --show "$work/xfs.img")
  mkfs.xfs -q -m reflink=1 "$xfs_loop"
  mkdir "$xfs"
  mount "$xfs_loop" "$xfs"
fi

# --- the run -----------------------------------------------------------------------------------
read -r fs source < <(findmnt -n -o FSTYPE,SOURCE -T "$work")
machine="$(awk -F': ' '/^model name/ {print $2; exit}' /proc/cpuinfo), $(nproc) cores,\
 $(awk '/MemTotal/ {printf "%.0f GiB", $2 / 1048576}' /proc/meminfo), kernel $(uname -r); pools on $fs ($source)"
date=$(date -u '+%Y-%m-%d %H:%M UTC')
commit=$(git rev-parse --short HEAD)$(git diff --quiet HEAD -- . ':!bench' || echo '+changes')
echo "# blockpool benchmark"
echo
echo "machine: $machine; $date"
echo "driver: $commit, $("$(bin/java25-home --for bench)/bin/java" -version 2>&1 | head -1)," \
     "BLOCKPOOL_JAVA_OPTS=${BLOCKPOOL_JAVA_OPTS:-(none)}"
echo "command: $command"
"$tools/csibench" -work "$work" -driver "$repo/bin/blockpool-csi" -mock "$tools/gomock" \
    -sanity "$tools/csi-sanity" -xfs "$xfs" \
    -run-date "$date" -run-commit "$commit" -run-machine "$machine" -run-command "$command" \
    "${flags[@]}" "${sections[@]}" &
client=$!
wait "$client"
client=
