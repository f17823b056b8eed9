#!/usr/bin/env bash
# Prints the home of a Java 25 (or newer) JDK: $JAVA_HOME if it is one, else the java on PATH
# or the first found under /usr/lib/jvm. The build needs 25; a machine's default java may be
# older. The search and the version check are bin/java25-home's, which the launcher uses too.
set -euo pipefail
exec "$(dirname "${BASH_SOURCE[0]}")/../bin/java25-home" --jdk --for java-home
