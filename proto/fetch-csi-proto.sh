#!/usr/bin/env bash
# Copies csi.proto of the given CSI spec version into OUT_DIR, taken from the spec's
# published Go module (go mod download) and verified against a pinned SHA-256.
# usage: fetch-csi-proto.sh VERSION SHA256 OUT_DIR
set -euo pipefail
version=$1 expected=$2 out=$3
module=github.com/container-storage-interface/spec

# sudo's secure_path drops the Go toolchain's usual home.
command -v go >/dev/null || PATH=$PATH:/usr/local/go/bin
command -v go >/dev/null || { echo "fetch-csi-proto: the go tool is needed to download $module@$version" >&2; exit 1; }

# Run outside any Go module, so the download does not depend on the working directory.
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT
dir=$(cd "$scratch" && GO111MODULE=on GOFLAGS=-mod=mod go mod download -json "$module@$version" \
      | sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$/\1/p')
[[ -n $dir && -f $dir/csi.proto ]] || { echo "fetch-csi-proto: $module@$version has no csi.proto" >&2; exit 1; }

actual=$(sha256sum "$dir/csi.proto" | cut -d' ' -f1)
if [[ $actual != "$expected" ]]; then
  echo "fetch-csi-proto: checksum mismatch for csi.proto of $module@$version: expected $expected, got $actual" >&2
  exit 1
fi
mkdir -p "$out"
# protoc's Java generator gives a map field `parameters` a deprecated builder accessor
# getMutableParameters(), which collides with the accessor of the field `mutable_parameters`
# in the same message. Rename that field for Java only: the field number and the JSON name stay
# the spec's, so the wire format and JSON (grpcurl) are unchanged.
sed -E 's/^([[:space:]]*map<string, string>) mutable_parameters = ([0-9]+);/\1 mutable_params = \2 [json_name = "mutableParameters"];/' \
  "$dir/csi.proto" > "$out/csi.proto.tmp"
grep -q 'mutable_params = ' "$out/csi.proto.tmp" || { echo "fetch-csi-proto: could not adapt mutable_parameters" >&2; exit 1; }
mv "$out/csi.proto.tmp" "$out/csi.proto"
echo "fetch-csi-proto: csi.proto $version (sha256 $actual)"
