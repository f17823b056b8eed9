#!/usr/bin/env bash
# Prints its arguments as shell words that can be pasted back: each as it is when the shell would
# leave it alone, in single quotes otherwise. bench/run.sh and bench/figures.sh print with it the
# command that reproduces a run.
set -euo pipefail
words=()
for arg in "$@"; do
  if [[ $arg =~ ^[A-Za-z0-9_./,:=@%+-]+$ ]]; then
    words+=("$arg")
  else
    words+=("'${arg//\'/\'\\\'\'}'")
  fi
done
echo "${words[*]}"
