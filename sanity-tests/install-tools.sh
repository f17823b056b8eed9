#!/usr/bin/env bash
# Installs the Go peer tools the tests drive, at pinned versions, into a cache directory
# (default: .cache/tools/bin in the repository), all of them or those named. Prints that bin
# directory.
#   csi-sanity  - the CSI community's conformance suite
#   grpcurl     - a gRPC client that works through server reflection
#   promtool    - Prometheus's own checker of the metrics text format
#   helm        - lints, renders and installs the Helm chart (charts/blockpool)
#   kustomize   - renders sidecars-deploy/ for the chart's comparison with it
# Usage: install-tools.sh [NAME...]
set -euo pipefail
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
bin=${BLOCKPOOL_TOOLS:-$repo/.cache/tools/bin}

# csi-sanity v5.6.0 rather than v5.4.0: v5.4.0 predates the GET_SNAPSHOT capability of CSI v1.12
# and fails every driver that advertises it; v5.6.0 knows it and tests GetSnapshot.
CSI_SANITY=github.com/kubernetes-csi/csi-test/v5/cmd/csi-sanity@v5.6.0
GRPCURL=github.com/fullstorydev/grpcurl/cmd/grpcurl@v1.9.4
# Prometheus 3.16's module version (its Go module numbers releases v0.3MM.P).
PROMTOOL=github.com/prometheus/prometheus/cmd/promtool@v0.316.0
HELM=helm.sh/helm/v3/cmd/helm@v3.22.0
# What helm's own Makefile sets: its version, and the Kubernetes version of its client-go
# (v0.37), which `helm template` and `helm lint` assume without a cluster; left at their source
# defaults (v1.20), every chart that needs a newer Kubernetes fails to render.
HELM_LDFLAGS="-X helm.sh/helm/v3/internal/version.version=v3.22.0
 -X helm.sh/helm/v3/pkg/chartutil.k8sVersionMajor=1 -X helm.sh/helm/v3/pkg/chartutil.k8sVersionMinor=37
 -X helm.sh/helm/v3/pkg/lint/rules.k8sVersionMajor=1 -X helm.sh/helm/v3/pkg/lint/rules.k8sVersionMinor=37"
# The kustomize that the e2e's kubectl (k8s.io/kubectl v0.36.3, e2e/go.mod) embeds.
KUSTOMIZE=sigs.k8s.io/kustomize/kustomize/v5@v5.8.1

install_tool() { # name module@version [ldflags]
  local name=$1 module=$2 ldflags=${3:-} stamp="$bin/.$1.version"
  local pinned="$module${ldflags:+ $ldflags}"
  if [[ -x $bin/$name && -f $stamp && $(<"$stamp") == "$pinned" ]]; then return; fi
  # sudo's secure_path drops the Go toolchain's usual home.
  command -v go >/dev/null || PATH=$PATH:/usr/local/go/bin
  command -v go >/dev/null || { echo "install-tools: the go tool is needed to install $name" >&2; exit 1; }
  echo "install-tools: go install $module" >&2
  GOBIN=$bin go install -ldflags="$ldflags" "$module"
  echo "$pinned" > "$stamp"
}

mkdir -p "$bin"
[[ $# -gt 0 ]] || set -- csi-sanity grpcurl promtool helm kustomize
for name in "$@"; do
  case $name in
    csi-sanity) install_tool csi-sanity "$CSI_SANITY" ;;
    grpcurl) install_tool grpcurl "$GRPCURL" ;;
    promtool) install_tool promtool "$PROMTOOL" ;;
    helm) install_tool helm "$HELM" "$HELM_LDFLAGS" ;;
    kustomize) install_tool kustomize "$KUSTOMIZE" ;;
    *) echo "install-tools: no tool named $name" >&2; exit 2 ;;
  esac
done
echo "$bin"
