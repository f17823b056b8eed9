#!/usr/bin/env bash
# The style gate: the Java formatting (Spotless), shellcheck on the shell scripts and ruff on the
# Python. Prints "style: NAME ok" or "style: NAME failed:" and the tool's output per check.
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

# The Spotless Maven plugin's check of the Java sources and pom.xml files, on the build's JDK.
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

check "Java format" java_format
check shellcheck shellcheck "${scripts[@]}"
check ruff python3 -m ruff check --no-cache .
exit $status
