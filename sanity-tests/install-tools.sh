#!/usr/bin/env bash
# Installs the Go peer tools the tests drive, at pinned versions, into a cache directory
# (default: .cache/tools/bin in the repository). Prints that bin directory.
#   csi-sanity  - the CSI community's conformance suite
#   grpcurl     - a gRPC client that works through server reflection
#   promtool    - Prometheus's own checker of the metrics text format
set -euo pipefail
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
bin=${BLOCKPOOL_TOOLS:-$repo/.cache/tools/bin}

# csi-sanity v5.6.0 rather than v5.4.0: v5.4.0 predates the GET_SNAPSHOT capability of CSI v1.12
# and fails every driver that advertises it; v5.6.0 knows it and tests GetSnapshot.
CSI_SANITY=github.com/kubernetes-csi/csi-test/v5/cmd/csi-sanity@v5.6.0
GRPCURL=github.com/fullstorydev/grpcurl/cmd/grpcurl@v1.9.4
# Prometheus 3.16's module version (its Go module numbers releases v0.3MM.P).
PROMTOOL=github.com/prometheus/prometheus/cmd/promtool@v0.316.0

install_tool() { # name module@version
  local name=$1 module=$2 stamp="$bin/.$1.version"
  if [[ -x $bin/$name && -f $stamp && $(<"$stamp") == "$module" ]]; then return; fi
  # sudo's secure_path drops the Go toolchain's usual home.
  command -v go >/dev/null || PATH=$PATH:/usr/local/go/bin
  command -v go >/dev/null || { echo "install-tools: the go tool is needed to install $name" >&2; exit 1; }
  echo "install-tools: go install $module" >&2
  GOBIN=$bin go install "$module"
  echo "$module" > "$stamp"
}

mkdir -p "$bin"
install_tool csi-sanity "$CSI_SANITY"
install_tool grpcurl "$GRPCURL"
install_tool promtool "$PROMTOOL"
echo "$bin"
