#!/usr/bin/env bash
# Prints the home of a Java 25 (or newer) JDK: $JAVA_HOME if it is one, else the first found
# under /usr/lib/jvm. The build and the launcher need 25; a machine's default java may be older.
set -euo pipefail
is_jdk25() { [[ -x $1/bin/javac ]] && "$1/bin/java" -version 2>&1 | grep -qE 'version "(2[5-9]|[3-9][0-9])'; }
if [[ -n ${JAVA_HOME:-} ]] && is_jdk25 "$JAVA_HOME"; then echo "$JAVA_HOME"; exit 0; fi
for home in /usr/lib/jvm/temurin-25-jdk* /usr/lib/jvm/java-25-* /usr/lib/jvm/*; do
  if [[ -d $home ]] && is_jdk25 "$home"; then echo "$home"; exit 0; fi
done
echo "java-home: no Java 25 JDK found; install one (e.g. Temurin 25) or set JAVA_HOME" >&2
exit 1
