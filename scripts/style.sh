#!/usr/bin/env bash
# The style gate: the Java and pom.xml formatting (Spotless), shellcheck on the shell scripts, ruff
# on the Python, gofmt and go vet on the Go modules, and the relative links of README.md and docs/
# (scripts/doc_links.py). Prints "style: NAME ok" or "style: NAME failed:" and the tool's output per
# check.
set -uo pipefail
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$repo" || exit 1

status=0
check() { # NAME COMMAND...
  local out
  if out=$("${@:2}" 2>&1); then
    echo "style: $1 ok"
  else
    echo "style: $1 failed:"
    printf '%s\n' "$out"
    status=1
  fi
}

# The Spotless Maven plugin's check of the Java sources and pom.xml files (the root pom.xml says
# what it checks of each), on the build's JDK.
# shellcheck disable=SC2317 # run through check below, which shellcheck does not follow
java_format() {
  local java_home
  java_home=$(scripts/java-home.sh) || return 1
  JAVA_HOME=$java_home ./mvnw -B -ntp -q spotless:check
}

# Every *.sh and the scripts without the extension; not mvnw, the generated Maven wrapper.
if git rev-parse --is-inside-work-tree >/dev/null 2>&1; then
  mapfile -t scripts < <(git ls-files '*.sh')
else
  mapfile -t scripts < <(find . -name '*.sh' -not -path './.git/*' -not -path './.cache/*' -not -path '*/target/*')
fi
scripts+=(.ci/run bin/blockpool-csi bin/blockpool-flexvolume bin/java25-home)

# Where .ci/run and the build's scripts find the go tool when it is not on PATH.
command -v go >/dev/null || PATH=$PATH:/usr/local/go/bin

# gofmt's verdict on every Go source: it lists the files it would change, so any output fails.
# shellcheck disable=SC2317 # run through check below, which shellcheck does not follow
go_format() {
  local unformatted
  [[ ${#go_sources[@]} -gt 0 ]] || return 0 # gofmt with no files would read stdin
  unformatted=$(gofmt -l "${go_sources[@]}") || return 1
  [[ -z $unformatted ]] || { printf 'not gofmt-formatted (gofmt -w fixes them):\n%s\n' "$unformatted"; return 1; }
}

# go vet in each Go module that has sources of its own (e2e/node only pins tools to build).
# shellcheck disable=SC2317 # run through check below, which shellcheck does not follow
go_vet() {
  local mod source failed=0
  for mod in "${go_modules[@]}"; do
    for source in "${go_sources[@]}"; do
      [[ $source == "$mod"/* ]] || continue
      (cd "$mod" && go vet ./...) || { echo "go vet failed in $mod"; failed=1; }
      break
    done
  done
  return "$failed"
}

if git rev-parse --is-inside-work-tree >/dev/null 2>&1; then
  mapfile -t go_sources < <(git ls-files '*.go')
  mapfile -t go_modules < <(git ls-files 'go.mod' '*/go.mod' | xargs -r -n1 dirname)
else
  mapfile -t go_sources < <(find . -name '*.go' -not -path './.git/*' -not -path './.cache/*' -not -path '*/target/*')
  mapfile -t go_modules < <(find . -name go.mod -not -path './.git/*' -not -path './.cache/*' -not -path '*/target/*' \
    -exec dirname {} \;)
fi

check "Java format" java_format
check shellcheck shellcheck "${scripts[@]}"
check ruff python3 -m ruff check --no-cache .
check gofmt go_format
check "go vet" go_vet
check "doc links" python3 scripts/doc_links.py
exit $status
