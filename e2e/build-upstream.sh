#!/usr/bin/env bash
# Builds node-driver-registrar and livenessprobe, the sidecars e2e/go.mod cannot require, at the
# commits e2e/upstream-sidecars.txt pins, into the e2e's tools (default: .cache/e2e/bin): from
# their Go modules when the Go module proxy serves them, else from their source archives in the
# directory $BLOCKPOOL_UPSTREAM_ARCHIVES names, each checked against its pinned sha256 before it
# is extracted. Rebuilds only when the pins or this script change (a stamp records them).
# Exits 3, saying on stdout what is missing, when neither source has a sidecar: the stages that
# need them count themselves skipped. Build output and errors go to stderr.
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
bin=${BLOCKPOOL_E2E_CACHE:-$here/../.cache/e2e}/bin
pins=$here/upstream-sidecars.txt
log() { echo "e2e/build-upstream.sh: $*" >&2; }

mapfile -t sidecars < <(grep -v '^#' "$pins" | grep .)
stamp=$(cat "$pins" "${BASH_SOURCE[0]}" | sha256sum | cut -d' ' -f1)
up_to_date() {
  [[ -f $bin/.upstream-version && $(<"$bin/.upstream-version") == "$stamp" ]] || return 1
  for s in "${sidecars[@]}"; do [[ -x $bin/${s%% *} ]] || return 1; done
}
up_to_date && exit 0

# sudo's secure_path drops the Go toolchain's usual home.
command -v go >/dev/null || PATH=$PATH:/usr/local/go/bin
command -v go >/dev/null || { log "the go tool is needed"; exit 1; }
mkdir -p "$bin"
rm -f "$bin/.upstream-version"
work=$(mktemp -d)
trap 'chmod -R u+w "$work"; rm -rf "$work"' EXIT

# The module's tree at the commit through the Go module proxy, copied to $2; its dependencies come
# from the proxy too (a module's zip leaves its vendor/ out).
from_proxy() { # module@commit dir
  local json dir
  json=$(cd "$work" && GOFLAGS='' go mod download -json "$1" 2>&1) || {
    # the error's first line: go's JSON escapes the rest's newlines
    log "not from the Go module proxy: $(sed -n 's/^\t"Error": "\(.*\)",\{0,1\}$/\1/p' <<<"$json" | sed 's/\\n.*//')"
    return 1
  }
  dir=$(sed -n 's/^\t"Dir": "\(.*\)",\{0,1\}$/\1/p' <<<"$json")
  { cp -r "$dir" "$2" && chmod -R u+w "$2"; } || { log "cannot copy $dir"; exit 1; }
}

# The archive's tree in $3, when the archive is there and is the pinned one. Returns 1 when the
# archive is not there, fails the build when it is another or does not extract.
from_archive() { # archive sha256 dir
  local archive=${BLOCKPOOL_UPSTREAM_ARCHIVES:-}/$1 actual
  [[ -n ${BLOCKPOOL_UPSTREAM_ARCHIVES:-} && -f $archive ]] || return 1
  actual=$(sha256sum "$archive" | cut -d' ' -f1)
  if [[ $actual != "$2" ]]; then
    log "$archive has sha256 $actual, e2e/upstream-sidecars.txt pins $2: not the pinned source, not built"
    exit 1
  fi
  mkdir -p "$3"
  tar -xzf "$archive" -C "$3" --strip-components=1 --no-same-owner || { log "cannot extract $archive"; exit 1; }
}

for s in "${sidecars[@]}"; do
  read -r binary module tag commit archive sha256 <<<"$s"
  src=$work/$binary
  if from_proxy "$module@$commit" "$src"; then
    mod=mod
    log "building $binary $tag from the module $module@$commit"
  elif from_archive "$archive" "$sha256" "$src"; then
    mod=vendor
    log "building $binary $tag from $BLOCKPOOL_UPSTREAM_ARCHIVES/$archive (sha256 checked)"
  else
    archives="BLOCKPOOL_UPSTREAM_ARCHIVES names no directory of source archives"
    [[ -z ${BLOCKPOOL_UPSTREAM_ARCHIVES:-} ]] || archives="$BLOCKPOOL_UPSTREAM_ARCHIVES holds no $archive"
    echo "$binary $tag: the Go module proxy does not serve $module@$commit, and $archives (e2e/README.md)"
    exit 3
  fi
  # As the repositories' release builds do: static, the tag as the version it reports.
  (cd "$src" && CGO_ENABLED=0 go build -mod="$mod" -buildvcs=false -trimpath -ldflags="-s -X main.version=$tag" \
    -o "$bin/$binary" "./cmd/$binary")
done
echo "$stamp" > "$bin/.upstream-version"
