#!/usr/bin/env bash
# Builds the images the real node runs without a registry, as docker archives for
# `ctr images import` in a cache directory (default: .cache/e2e/node/images):
#   pause    the pod sandbox: Kubernetes' pause.c from the pinned k8s.io/kubernetes module
#            (e2e/go.mod), compiled static, alone in the image
#   busybox  a small test image: Debian's busybox-static and its applets, alone in the image
#   driver   the project's image, from image/build.sh when podman has none of that tag
#   csi-provisioner, csi-snapshotter, csi-resizer
#            the sidecars the base's DaemonSet runs, built static from the modules e2e/go.mod
#            pins, each alone in its image, tagged with its module's version
#   csi-node-driver-registrar, livenessprobe
#            the binaries e2e/build-upstream.sh builds at the commits e2e/upstream-sidecars.txt
#            pins, each alone in its image, tagged with its release's tag
# Each archive's name carries its image's version (the driver's: its image ID), so a new pin or
# a rebuilt image makes a new archive. Prints "role archive image" lines on stdout. Nothing is pulled: both small
# images are FROM scratch, so podman builds them without running a container. Rebuilds an
# archive only when it is missing.
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
repo=$(cd "$here/../.." && pwd)
cache=${BLOCKPOOL_E2E_CACHE:-$repo/.cache/e2e}
out=$cache/node/images
upstream_bin=$cache/bin
command -v go >/dev/null || PATH=$PATH:/usr/local/go/bin
mkdir -p "$out"
log() { echo "e2e/node/images.sh: $*" >&2; }
if ! command -v podman >/dev/null; then
  log "installing podman"
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq podman >/dev/null
fi

k8s_version=$(cd "$repo/e2e" && go list -m -f '{{.Version}}' k8s.io/kubernetes)
pause_image=localhost/blockpool-e2e/pause:$k8s_version
candidate() { apt-cache policy "$1" | sed -n 's/^  Candidate: //p'; }
busybox_version=$(candidate busybox-static)
if [[ -z $busybox_version || $busybox_version == "(none)" ]]; then
  apt-get update -qq
  busybox_version=$(candidate busybox-static)
fi
busybox_image=localhost/blockpool-e2e/busybox:$(tr ':~+' '_' <<<"$busybox_version")
driver_version=$(sed -n '0,/<artifactId>blockpool-parent<\/artifactId>/d; s:.*<version>\([^<]*\)</version>.*:\1:p' \
  "$repo/pom.xml" | head -n1)
driver_image=localhost/blockpool-csi:$driver_version

# The sidecars: role, package, image version.
sidecars=()
for tool in external-provisioner/v6/cmd/csi-provisioner external-snapshotter/v8/cmd/csi-snapshotter \
            external-resizer/v2/cmd/csi-resizer; do
  module=github.com/kubernetes-csi/${tool%/cmd/*}
  sidecars+=("${tool##*/} github.com/kubernetes-csi/$tool $(cd "$repo/e2e" && go list -m -f '{{.Version}}' "$module")")
done
# The upstream sidecars, already built: role, "-" (no package), tag.
while read -r binary _ tag _; do
  sidecars+=("$binary - $tag")
done < <(grep -v '^#' "$repo/e2e/upstream-sidecars.txt" | grep .)
# Up to date already when e2e/real-node.sh runs this; it says why a sidecar cannot be built.
"$repo/e2e/build-upstream.sh" >&2 || { log "node-driver-registrar or livenessprobe not built"; exit 1; }

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# Builds rootfs $2 FROM scratch as image $1 and saves it to $3.
build_scratch() {
  local image=$1 rootfs=$2 archive=$3 entrypoint=$4
  printf 'FROM scratch\nCOPY rootfs/ /\nENTRYPOINT ["%s"]\n' "$entrypoint" > "$work/Containerfile"
  rm -rf "$work/rootfs" && mv "$rootfs" "$work/rootfs"
  podman build -q --tag "$image" --file "$work/Containerfile" "$work" >/dev/null
  podman save -q --format docker-archive -o "$archive.tmp" "$image" && mv "$archive.tmp" "$archive"
  podman rmi -f "$image" >/dev/null  # the archive is what the node imports
}

pause_tar=pause-$k8s_version.tar
busybox_tar=busybox-${busybox_image##*:}.tar
if [[ ! -s $out/$pause_tar ]]; then
  log "building $pause_image"
  src=$(cd "$repo/e2e" && go list -m -f '{{.Dir}}' k8s.io/kubernetes)/build/pause/linux/pause.c
  mkdir -p "$work/pause"
  gcc -Os -static -DVERSION="$k8s_version" -o "$work/pause/pause" "$src"
  build_scratch "$pause_image" "$work/pause" "$out/$pause_tar" /pause
fi

if [[ ! -s $out/$busybox_tar ]]; then
  log "building $busybox_image"
  (cd "$work" && apt-get download -q -o APT::Sandbox::User=root "busybox-static=$busybox_version" >/dev/null)
  dpkg-deb -x "$work"/busybox-static_*.deb "$work/deb"
  mkdir -p "$work/busybox/bin"
  cp "$work/deb/bin/busybox" "$work/busybox/bin/busybox"
  for applet in $("$work/busybox/bin/busybox" --list); do
    [[ -e $work/busybox/bin/$applet ]] || ln -s busybox "$work/busybox/bin/$applet"
  done
  build_scratch "$busybox_image" "$work/busybox" "$out/$busybox_tar" /bin/sh
fi

podman image exists "$driver_image" || "$repo/image/build.sh" >&2
driver_tar=driver-$(podman image inspect --format '{{.Id}}' "$driver_image" | cut -c1-12).tar
if [[ ! -s $out/$driver_tar ]]; then
  rm -f "$out"/driver-*.tar
  podman save -q --format docker-archive -o "$out/$driver_tar.tmp" "$driver_image"
  mv "$out/$driver_tar.tmp" "$out/$driver_tar"
fi

# Built only when an archive is missing: static (no libc in the image), in one go build.
missing=()
for s in "${sidecars[@]}"; do
  read -r role pkg version <<<"$s"
  [[ -s $out/$role-$version.tar || $pkg == - ]] || missing+=("$pkg")
done
if ((${#missing[@]})); then
  log "building ${missing[*]}"
  mkdir -p "$work/bin"
  (cd "$repo/e2e" && CGO_ENABLED=0 go build -buildvcs=false -trimpath -ldflags=-s -o "$work/bin/" "${missing[@]}")
fi
for s in "${sidecars[@]}"; do
  read -r role pkg version <<<"$s"
  if [[ ! -s $out/$role-$version.tar ]]; then
    rm -f "$out/$role"-*.tar
    mkdir -p "$work/$role"
    if [[ $pkg == - ]]; then
      cp "$upstream_bin/$role" "$work/$role/$role"
    else
      mv "$work/bin/${pkg##*/}" "$work/$role/$role"
    fi
    build_scratch "localhost/blockpool-e2e/$role:$version" "$work/$role" "$out/$role-$version.tar" "/$role"
  fi
done

printf '%s %s %s\n' pause "$pause_tar" "$pause_image" busybox "$busybox_tar" "$busybox_image" \
  driver "$driver_tar" "$driver_image"
for s in "${sidecars[@]}"; do
  read -r role _ version <<<"$s"
  printf '%s %s %s\n' "$role" "$role-$version.tar" "localhost/blockpool-e2e/$role:$version"
done
