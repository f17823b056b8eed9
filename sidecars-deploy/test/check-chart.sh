#!/usr/bin/env bash
# Checks the Helm chart charts/blockpool against the kustomize layouts of sidecars-deploy/, which
# stay the source of truth: `helm lint --strict` with each values file of the chart's ci/, each
# overlay's values rendering by `helm template` the same objects as `kustomize build` of that
# overlay (the defaults, those of the base), and every render passing the rules of
# check-manifests.sh. The checks are in check_chart.py beside this script.
#
# Needs the go tool, to install helm and kustomize at their pinned versions
# (sanity-tests/install-tools.sh, into .cache/tools/bin), and python3 with PyYAML.
#
# Usage: sidecars-deploy/test/check-chart.sh [-v]
# Prints one line per failed check and ends with `chart: N passed, M failed`; exits 1 when a
# check failed, 2 when a tool is missing.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
repo=$(cd "$here/../.." && pwd)
if ! python3 -c 'import yaml' >/dev/null 2>&1; then
  echo "check-chart: python3 with PyYAML is needed (apt-get install python3-yaml, or pip install pyyaml)" >&2
  exit 2
fi
tools=$("$repo/sanity-tests/install-tools.sh" helm kustomize) || {
  echo "check-chart: helm and kustomize could not be installed (sanity-tests/install-tools.sh needs the go tool)" >&2
  exit 2
}
exec python3 -B "$here/check_chart.py" "$repo/charts/blockpool" "$repo/sidecars-deploy" \
  "$tools/helm" "$tools/kustomize" "$@"
