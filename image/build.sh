#!/usr/bin/env bash
# Builds the blockpool-csi container image from the repository's Dockerfile with
# podman, then checks the result without running a container: it mounts the image
# and runs, chrooted into it, the driver's --version and the host tools the node
# plugin needs, and reports the image size.
#
# Runs as root, without a terminal, and is idempotent: a second run reuses the
# base image and podman's layer cache. It installs what it needs from Debian
# (podman, debootstrap) when missing.
#
# The Dockerfile builds FROM $DEBIAN_IMAGE (docker.io/library/debian:trixie-slim).
# When that image is not in local storage, it is created from Debian's own
# archive with debootstrap (a minbase trixie with the usual slim trimmings) and
# imported under that name; BASE_SOURCE=pull pulls it from the registry instead.
#
# Environment:
#   IMAGE          tag of the built image     (default localhost/blockpool-csi:<pom version>)
#   DEBIAN_IMAGE   base image name             (default docker.io/library/debian:trixie-slim)
#   BASE_SOURCE    debootstrap | pull          (default debootstrap)
#   DEBIAN_MIRROR  archive for debootstrap     (default http://deb.debian.org/debian)
#   EXTRA_CA_DIR   CA certificates (*.crt) the build stage must trust in addition
#                  to Debian's, e.g. a TLS-intercepting proxy's (default
#                  /usr/local/share/ca-certificates, used when it holds any)
#
# Ends with `image: N passed, M failed`; exits non-zero when the build or a check fails.
set -euo pipefail

repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
export DEBIAN_FRONTEND=noninteractive
start=$SECONDS

log() { echo "image/build.sh: $*" >&2; }
die() { log "$*"; exit 1; }

[[ $(id -u) -eq 0 ]] || die "must run as root (podman builds with chroot isolation, debootstrap needs root)"

version=$(sed -n '0,/<artifactId>blockpool-parent<\/artifactId>/d; s:.*<version>\([^<]*\)</version>.*:\1:p' "$repo/pom.xml" | head -n1)
[[ -n $version ]] || die "cannot read the project version from pom.xml"
IMAGE=${IMAGE:-localhost/blockpool-csi:$version}
DEBIAN_IMAGE=${DEBIAN_IMAGE:-docker.io/library/debian:trixie-slim}
DEBIAN_SUITE=${DEBIAN_SUITE:-trixie}
DEBIAN_MIRROR=${DEBIAN_MIRROR:-http://deb.debian.org/debian}
BASE_SOURCE=${BASE_SOURCE:-debootstrap}
EXTRA_CA_DIR=${EXTRA_CA_DIR:-/usr/local/share/ca-certificates}

# ------------------------------------------------------------------ tools
ensure_tools() {
  local missing=()
  command -v podman >/dev/null || missing+=(podman)
  command -v debootstrap >/dev/null || missing+=(debootstrap)
  command -v unshare >/dev/null || missing+=(util-linux)
  [[ -s /usr/share/keyrings/debian-archive-keyring.gpg ]] || missing+=(debian-archive-keyring)
  if ((${#missing[@]})); then
    log "installing ${missing[*]}"
    apt-get update -qq
    apt-get install -y -qq "${missing[@]}" >/dev/null
  fi
}

# ------------------------------------------------------------------ base image
base_root=""
cleanup_base() {
  [[ -n $base_root && -d $base_root ]] || return 0
  # debootstrap mounts /proc and /sys inside the target; never delete through a mount.
  local m
  for m in $( (findmnt -R -n -l -o TARGET "$base_root/root" 2>/dev/null || true) | sort -r); do
    if [[ $m == "$base_root"/* ]]; then umount -l "$m" || true; fi
  done
  rm -rf --one-file-system "$base_root"
}

make_base() {
  base_root=$(mktemp -d /var/tmp/blockpool-base.XXXXXX)
  trap cleanup_base EXIT
  local root=$base_root/root
  log "creating $DEBIAN_IMAGE from $DEBIAN_MIRROR ($DEBIAN_SUITE, minbase) with debootstrap"
  debootstrap --variant=minbase --components=main \
    --keyring=/usr/share/keyrings/debian-archive-keyring.gpg \
    "$DEBIAN_SUITE" "$root" "$DEBIAN_MIRROR" >"$base_root/debootstrap.log" 2>&1 \
    || { tail -n 30 "$base_root/debootstrap.log" >&2; die "debootstrap failed"; }

  # Package sources as in Debian's own images: the release, its updates and security.
  rm -f "$root/etc/apt/sources.list"
  cat >"$root/etc/apt/sources.list.d/debian.sources" <<EOF
Types: deb
URIs: ${DEBIAN_MIRROR}
Suites: ${DEBIAN_SUITE} ${DEBIAN_SUITE}-updates
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg

Types: deb
URIs: ${DEBIAN_MIRROR%/debian}/debian-security
Suites: ${DEBIAN_SUITE}-security
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg
EOF
  # Slim: no documentation, manual pages or translations now or from later
  # installs (copyright files stay), no downloaded packages left behind.
  cat >"$root/etc/dpkg/dpkg.cfg.d/blockpool-slim" <<'EOF'
path-exclude /usr/share/doc/*
path-include /usr/share/doc/*/copyright
path-exclude /usr/share/man/*
path-exclude /usr/share/info/*
path-exclude /usr/share/locale/*
path-include /usr/share/locale/locale.alias
path-exclude /usr/share/lintian/*
EOF
  cat >"$root/etc/apt/apt.conf.d/blockpool-slim" <<'EOF'
APT::Install-Recommends "false";
DPkg::Post-Invoke { "rm -f /var/cache/apt/archives/*.deb /var/cache/apt/archives/partial/*.deb /var/cache/apt/*.bin || true"; };
Acquire::Languages "none";
EOF
  find "$root/usr/share/doc" -mindepth 1 ! -name copyright ! -type d -delete
  find "$root/usr/share/doc" -mindepth 1 -type d -empty -delete
  rm -rf "$root"/usr/share/man/* "$root"/usr/share/info/* "$root"/usr/share/lintian/*
  # Packages register manual pages with update-alternatives (the JDK does), which
  # fails when the section directory is missing.
  mkdir -p "$root"/usr/share/man/man{1,2,3,4,5,6,7,8}
  find "$root/usr/share/locale" -mindepth 1 -maxdepth 1 ! -name locale.alias -exec rm -rf {} +
  rm -rf "$root"/var/cache/apt/archives/*.deb "$root"/var/cache/apt/*.bin "$root"/var/lib/apt/lists/* \
         "$root"/var/log/* "$root"/tmp/* "$root"/var/tmp/*
  : >"$root/etc/machine-id"
  rm -f "$root/etc/hostname" "$root/etc/resolv.conf"

  tar --numeric-owner --xattrs --sort=name -C "$root" -c . \
    | podman import --quiet \
        --change 'CMD ["bash"]' \
        --change 'ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin' \
        - "$DEBIAN_IMAGE" >/dev/null
  cleanup_base
  trap - EXIT
  log "base image $DEBIAN_IMAGE imported"
}

ensure_base() {
  if podman image exists "$DEBIAN_IMAGE"; then
    log "base image $DEBIAN_IMAGE present"
    return
  fi
  case $BASE_SOURCE in
    pull) podman pull --quiet "$DEBIAN_IMAGE" >/dev/null ;;
    debootstrap) make_base ;;
    *) die "BASE_SOURCE must be debootstrap or pull, not '$BASE_SOURCE'" ;;
  esac
}

# ------------------------------------------------------------------ build
build() {
  local epoch
  epoch=$(git -C "$repo" log -1 --format=%ct 2>/dev/null || echo 0)
  # A host behind a TLS-intercepting proxy trusts extra CAs (Debian keeps them in
  # /usr/local/share/ca-certificates); the build stage needs them to reach Maven
  # Central and the Go module proxy. They are mounted for the build only.
  local ca_args=()
  if compgen -G "$EXTRA_CA_DIR/*.crt" >/dev/null; then
    log "build stage trusts the extra CA certificates in $EXTRA_CA_DIR"
    ca_args=(--volume "$EXTRA_CA_DIR:/usr/local/share/ca-certificates:ro")
  fi
  log "building $IMAGE (version $version)"
  podman build \
    "${ca_args[@]}" \
    --isolation=chroot \
    --layers \
    --pull=never \
    --timestamp="$epoch" \
    --build-arg DEBIAN_IMAGE="$DEBIAN_IMAGE" \
    --build-arg VERSION="$version" \
    --tag "$IMAGE" \
    --file "$repo/Dockerfile" \
    "$repo"
  # Earlier builds of this image that the new tag replaced.
  podman image prune --force --filter "label=org.opencontainers.image.title=blockpool-csi" >/dev/null 2>&1 || true
}

# ------------------------------------------------------------------ check
passed=0
failed=0
mnt=""
unmount_image() { [[ -z $mnt ]] || podman image unmount "$IMAGE" >/dev/null 2>&1 || true; }

# in_image NAME COMMAND...: runs COMMAND chrooted into the image, in private
# mount and PID namespaces with /proc and /dev, so nothing stays mounted after.
in_image() {
  local what=$1
  shift
  local out
  # shellcheck disable=SC2016 # expanded by the sh inside the namespaces, not here
  local enter='root=$1; shift; mount -t proc proc "$root/proc" && mount --rbind /dev "$root/dev" && exec chroot "$root" "$@"'
  if out=$(unshare --mount --pid --fork --propagation private /bin/sh -c "$enter" \
             sh "$mnt" /usr/bin/env -i \
             PATH=/opt/blockpool/bin:/opt/java/bin:/usr/sbin:/usr/bin:/sbin:/bin \
             JAVA_HOME=/opt/java LANG=C.UTF-8 "$@" 2>&1); then
    passed=$((passed + 1))
    printf '  ok    %-22s %s\n' "$what" "$(head -n1 <<<"$out")"
  else
    failed=$((failed + 1))
    printf '  FAIL  %-22s %s\n' "$what" "$(tr '\n' ' ' <<<"$out")"
  fi
}

# serve_check: starts the driver from the image (chrooted, --mode=all on a shared
# pool, which serves ControllerPublish; pool and socket on a private tmpfs) and drives one volume through its life with grpcurl
# over the Unix socket: Probe, CreateVolume, ControllerPublish, NodeStage (a real
# loop device, mkfs.ext4 and mount from the image), NodeUnstage,
# ControllerUnpublish, DeleteVolume. Each step is one check.
serve_check() {
  local tools out
  if ! tools=$("$repo/sanity-tests/install-tools.sh" 2>/dev/null) || [[ ! -x $tools/grpcurl ]]; then
    failed=$((failed + 1))
    printf '  FAIL  %-22s %s\n' "serve" "grpcurl could not be installed (sanity-tests/install-tools.sh needs the go tool)"
    return
  fi
  out=$(unshare --mount --pid --fork --propagation private \
          bash -s -- "$mnt" "$tools/grpcurl" "$repo/image/json_field.py" <<'SERVE' 2>&1
set -uo pipefail
root=$1 grpcurl=$2 json_field=$3
exec 3>&1 # result lines; stdout of each step is the RPC's reply
result() { printf '  %-4s  %-22s %s\n' "$1" "$2" "$(tr -s ' \n' ' ' <<<"$3" | cut -c1-100)" >&3; }

mount -t proc proc "$root/proc"
mount --rbind /dev "$root/dev"
mount --rbind /sys "$root/sys"
# The scratch tmpfs is the image's /tmp and, outside the chroot, /mnt of this
# private namespace: a short socket path (a Unix socket address has 107 bytes).
mkdir -p /mnt
mount -t tmpfs -o size=256m tmpfs /mnt
mount --bind /mnt "$root/tmp"
mkdir -p /mnt/pool /mnt/staging
sock=/mnt/csi.sock
chroot "$root" /usr/bin/env -i PATH=/opt/blockpool/bin:/opt/java/bin:/usr/sbin:/usr/bin:/sbin:/bin \
  JAVA_HOME=/opt/java LANG=C.UTF-8 \
  /opt/blockpool/bin/blockpool-csi --mode=all --pool-scope=shared --endpoint unix:///tmp/csi.sock \
  --pool-dir /tmp/pool --node-id image-check --log-level warn >/mnt/driver.log 2>&1 &
driver=$!
cleanup() {
  kill -TERM "$driver" 2>/dev/null; wait "$driver" 2>/dev/null
  umount -l "$root/tmp/staging" 2>/dev/null
  local f
  for f in /sys/block/loop*/loop/backing_file; do
    if [[ -f $f ]] && grep -qE "^($root/tmp|/mnt)/pool/" "$f" 2>/dev/null; then
      losetup -d "/dev/$(basename "$(dirname "$(dirname "$f")")")"
    fi
  done
}
trap cleanup EXIT
for _ in $(seq 300); do [[ -S $sock ]] && break; kill -0 "$driver" 2>/dev/null || break; sleep 0.1; done
if [[ ! -S $sock ]]; then
  result FAIL serve "the driver did not create its socket: $(tail -n 5 /mnt/driver.log)"
  exit 0
fi

# step NAME METHOD REQUEST [FIELD VALUE]: calls METHOD; the reply must be JSON
# and, when FIELD (a path like volume.capacity_bytes) is given, that field must
# equal the JSON VALUE. Prints the reply.
step() {
  local reply
  if reply=$("$grpcurl" -plaintext -unix -max-time 60 -d "$3" "$sock" "$2" 2>&1) &&
     python3 "$json_field" "${4:-.}" ${5+"$5"} <<<"$reply" >/dev/null; then
    result ok "$1" "$reply"
    printf '%s' "$reply"
  else
    result FAIL "$1" "$reply"
    return 1
  fi
}
# field [--default JSON] PATH: the field at PATH of the JSON on stdin, as JSON.
field() { python3 "$json_field" "$@"; }

cap='{"mount":{"fs_type":"ext4"},"access_mode":{"mode":"SINGLE_NODE_WRITER"}}'
step Probe csi.v1.Identity/Probe '{}' ready true >/dev/null || exit 0
reply=$(step CreateVolume csi.v1.Controller/CreateVolume \
  '{"name":"image-check","capacity_range":{"required_bytes":"67108864"},"volume_capabilities":['"$cap"']}' \
  volume.capacity_bytes 67108864) || exit 0
vol=$(field volume.volume_id <<<"$reply")
reply=$(step ControllerPublish csi.v1.Controller/ControllerPublishVolume \
  '{"volume_id":'"$vol"',"node_id":"image-check","volume_capability":'"$cap"'}') || exit 0
context=$(field --default '{}' publish_context <<<"$reply")
if [[ -e /dev/loop-control ]]; then
  step NodeStage csi.v1.Node/NodeStageVolume \
    '{"volume_id":'"$vol"',"publish_context":'"$context"',"staging_target_path":"/tmp/staging","volume_capability":'"$cap"'}' \
    >/dev/null
  fstype=$(findmnt -n -o FSTYPE --mountpoint "$root/tmp/staging" 2>/dev/null)
  if [[ $fstype == ext4 ]]; then
    result ok "staged ext4 mount" "$(findmnt -n -o SOURCE,FSTYPE,OPTIONS --mountpoint "$root/tmp/staging")"
  else
    result FAIL "staged ext4 mount" "no ext4 file system mounted at the staging path (found '$fstype')"
  fi
  step NodeUnstage csi.v1.Node/NodeUnstageVolume '{"volume_id":'"$vol"',"staging_target_path":"/tmp/staging"}' >/dev/null
else
  result skip NodeStage "no /dev/loop-control on this host"
fi
step ControllerUnpublish csi.v1.Controller/ControllerUnpublishVolume '{"volume_id":'"$vol"',"node_id":"image-check"}' >/dev/null
step DeleteVolume csi.v1.Controller/DeleteVolume '{"volume_id":'"$vol"'}' >/dev/null
SERVE
)
  if grep -qE '^  (ok|FAIL) ' <<<"$out"; then
    grep -E '^  (ok|FAIL|skip) ' <<<"$out"
    passed=$((passed + $(grep -c '^  ok ' <<<"$out")))
    failed=$((failed + $(grep -c '^  FAIL ' <<<"$out" || true)))
  else
    failed=$((failed + 1))
    printf '  FAIL  %-22s %s\n' "serve" "$(tail -n 5 <<<"$out" | tr '\n' ' ')"
  fi
}

check() {
  mnt=$(podman image mount "$IMAGE")
  trap unmount_image EXIT
  log "checking $IMAGE (mounted at $mnt)"
  in_image "blockpool-csi" /opt/blockpool/bin/blockpool-csi --version
  # AOTMode=on makes a cache that does not fit the image's runtime and jar an error, not a slow start.
  in_image "AOT cache" env BLOCKPOOL_JAVA_OPTS=-XX:AOTMode=on /opt/blockpool/bin/blockpool-csi --version
  in_image "FlexVolume AOT cache" env BLOCKPOOL_JAVA_OPTS=-XX:AOTMode=on /opt/blockpool/bin/blockpool-flexvolume init
  in_image "mkfs.ext4" mkfs.ext4 -V
  in_image "mkfs.xfs" mkfs.xfs -V
  in_image "losetup" losetup --version
  in_image "blkid" blkid --version
  in_image "mount" mount --version
  in_image "umount" umount --version
  in_image "e2fsck" e2fsck -V
  in_image "resize2fs" sh -c 'resize2fs 2>&1 | head -n1; command -v resize2fs'
  in_image "xfs_growfs" xfs_growfs -V
  in_image "cp" cp --version
  in_image "fallocate" fallocate --version
  serve_check
  unmount_image
  mnt=""
  trap - EXIT

  local size
  size=$(podman image inspect --format '{{.Size}}' "$IMAGE")
  log "image $IMAGE: $((size / 1000000)) MB ($size bytes); built and checked in $((SECONDS - start)) s"
}

ensure_tools
ensure_base
build
check
echo "image: $passed passed, $failed failed"
((failed == 0))
