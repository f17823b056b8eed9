#!/usr/bin/env bash
# The shared-pool figures of docs/performance-node.md: bench/run.sh's node and fio sections (stage,
# publish, fio in a published volume) with the pool on the local disk, then on a GlusterFS
# volume: one brick on the same disk, mounted through FUSE, with the volume options
# docs/pool.md asks of a pool ("A shared pool on GlusterFS"). The difference is what the
# distributed filesystem costs, without a network in between.
#
#   usage: sudo bench/shared-pool.sh [csibench flags]     e.g. -node-iters 200 -fio-runtime 10s
#
# Needs what bench/run.sh needs, and glusterfs-server and glusterfs-client (installed from Debian
# when missing); port 24007 must be free (no other glusterd on the host). glusterd runs with its
# state, sockets and logs in a temporary directory under .cache/bench, with the brick and the
# mount; the volume, glusterd, the mount and every loop device bound to a file in it go on exit,
# also on failure. GlusterFS itself logs its brick under /var/log/glusterfs, as it always does.
set -euo pipefail
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$repo"
[[ $(id -u) -eq 0 ]] || { echo "shared-pool: needs root (glusterd, FUSE, loop devices)" >&2; exit 1; }
if ! PATH=$PATH:/usr/sbin command -v glusterd >/dev/null || ! PATH=$PATH:/usr/sbin command -v glusterfs >/dev/null; then
  echo "shared-pool: installing glusterfs-server and glusterfs-client from Debian" >&2
  apt-get install -y -q glusterfs-server glusterfs-client >/dev/null ||
      { apt-get update -q >/dev/null && apt-get install -y -q glusterfs-server glusterfs-client >/dev/null; }
fi
PATH=$PATH:/usr/sbin
host=$(cat /proc/sys/kernel/hostname)   # glusterd refuses a loopback address for a brick, not this name

mkdir -p .cache/bench
work=$(mktemp -d "$repo/.cache/bench/gluster.XXXXXX")
mnt=$work/mnt volume=blockpool-bench created=
gluster() { command gluster --mode=script --glusterd-sock="$work/run/glusterd.socket" "$@"; }
cleanup() {
  set +e
  # Loop devices bound to images in the volume (a failed run's), then the mount, the volume, glusterd.
  losetup -n -O NAME,BACK-FILE 2>/dev/null | awk -v m="$mnt/" 'index($2, m) == 1 {print $1}' |
      while read -r dev; do losetup -d "$dev"; done
  grep -F " $mnt/" /proc/self/mountinfo | awk '{print $5}' | sort -r | while read -r m; do umount -l "$m"; done
  if mountpoint -q "$mnt"; then umount "$mnt" || umount -l "$mnt"; fi
  if [[ -n $created ]]; then gluster volume stop "$volume" force >/dev/null; gluster volume delete "$volume" >/dev/null; fi
  [[ -f $work/run/glusterd.pid ]] && kill "$(cat "$work/run/glusterd.pid")" 2>/dev/null
  rm -rf "$work"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

mkdir -p "$work"/{state,run,logs,brick} "$mnt"
cat > "$work/glusterd.vol" <<VOL
volume management
    type mgmt/glusterd
    option working-directory $work/state
    option run-directory $work/run
    option glusterd-sockfile $work/run/glusterd.socket
    option transport-type socket
    option transport.socket.listen-port 24007
    option ping-timeout 0
    option event-threads 1
end-volume
VOL
glusterd -f "$work/glusterd.vol" -p "$work/run/glusterd.pid" -l "$work/logs/glusterd.log"
for _ in $(seq 300); do [[ -S $work/run/glusterd.socket ]] && break; sleep 0.1; done
gluster volume create "$volume" "$host:$work/brick" force >/dev/null
created=1
for option in quick-read stat-prefetch io-cache read-ahead readdir-ahead write-behind open-behind; do
  gluster volume set "$volume" "performance.$option" off >/dev/null
done
gluster volume start "$volume" >/dev/null
mount -t glusterfs "$host:/$volume" "$mnt"

echo "# shared pool: local disk, then GlusterFS $(glusterfs --version | head -1 | awk '{print $2}') on the same disk"
echo
echo "command: sudo bench/shared-pool.sh${1+ }$*"
echo
echo "# pool on the local disk"
bench/run.sh "$@" node fio
echo
echo "# pool on GlusterFS (FUSE mount of a one-brick volume on this host)"
bench/run.sh -pool "$mnt" "$@" node fio
